import { defineConfig } from "vitest/config";
import { SOURCE_CONDITION } from "./vitest.config.ts";

/**
 * `npm run test:unit`: the pure tests (test/unit, local/test/unit), with no emulator started — the
 * inner loop. `npm test` runs them again inside the whole suite (vitest.config.ts).
 */
export default defineConfig({
  ssr: { resolve: { conditions: [SOURCE_CONDITION, "node"] } },
  test: {
    env: { NODE_OPTIONS: `--conditions=${SOURCE_CONDITION}` },
    setupFiles: ["test/support/applyEmulatorEnv.ts"],
    include: ["test/unit/**/*.test.ts", "local/test/unit/**/*.test.ts"],
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 60_000,
    reporters: ["default"],
  },
});
