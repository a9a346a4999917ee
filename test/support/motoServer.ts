import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../lib/cdk/functionDefaults.ts";

/**
 * moto's server (PyPI `moto[server]`, pinned in requirements-test.txt), which implements the AWS
 * Glue Schema Registry API, on 127.0.0.1 for one test file. Installed in the project's `.venv`.
 */
export interface MotoServer {
  readonly endpoint: string;
  stop(): Promise<void>;
}

const MOTO = join(PROJECT_ROOT, ".venv", "bin", "moto_server");

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function startMotoServer(): Promise<MotoServer> {
  if (!existsSync(MOTO)) {
    throw new Error(
      `moto_server not found at ${MOTO}: run \`python3 -m venv .venv && .venv/bin/pip install -r requirements-test.txt\``,
    );
  }
  const port = await freePort();
  const child: ChildProcess = spawn(MOTO, ["-H", "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto_server exited (${child.exitCode}): ${stderr}`);
    try {
      const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      if (res.status < 500) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`moto_server did not answer on ${endpoint} within 30 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
