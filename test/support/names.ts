import { randomBytes } from "node:crypto";
import { basename } from "node:path";

/**
 * Resource names unique to one test file and run, so files can run in parallel against the same
 * emulators: `names(import.meta.url)("orders")` → `smoke-5f3a9c-orders`.
 */
export function names(fileUrl: string): (what: string) => string {
  const file = basename(new URL(fileUrl).pathname)
    .replace(/\.test\.ts$/, "")
    .replace(/[^a-zA-Z0-9-]/g, "-");
  const run = randomBytes(3).toString("hex");
  return (what) => `${file}-${run}-${what}`.slice(0, 80);
}
