import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { CreateQueueCommand, GetQueueUrlCommand, SQSClient } from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";

const launcher = fileURLToPath(new URL("../../src/localstack.ts", import.meta.url));

/** A parent process that starts LocalStack's runtime and prints its endpoint, pid and data dir. */
async function startParent(): Promise<{
  parent: ChildProcess;
  endpoint: string;
  pid: number;
  dataDir: string;
}> {
  const script = [
    `const { startLocalStack } = await import(${JSON.stringify(launcher)});`,
    "const ls = await startLocalStack();",
    "console.log(['UP', ls.endpoint, ls.pid, ls.dataDir].join(' '));",
    // Not SIGINT: childProcess.ts answers that itself, killing the children at once.
    "process.on('SIGUSR2', async () => { await ls.stop(); process.exit(0); });",
    "setInterval(() => {}, 1000);",
  ].join("\n");
  const parent = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const line = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /^UP .*$/m.exec(output);
      if (m) resolve(m[0]);
    };
    parent.stdout!.on("data", onData);
    parent.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    parent.once("exit", (code) => reject(new Error(`the parent exited (${code}):\n${output}`)));
  });
  const [, endpoint, pid, dataDir] = line.split(" ");
  return { parent, endpoint: endpoint!, pid: Number(pid), dataDir: dataDir! };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).includes("Z");
  } catch {
    return false;
  }
};

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
  return !alive(pid);
}

/** The local addresses of the sockets listening on `port` (from /proc/net/tcp and tcp6). */
function listeners(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  return ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[3] === "0A" && f[1]?.endsWith(`:${hexPort}`))
      .map((f) => f[1]!.split(":")[0]!),
  );
}

describe("LocalStack's runtime launcher (local/src/localstack.ts)", () => {
  it("serves SQS on 127.0.0.1 only, with path-style queue URLs the SDK takes, and stops on request", async () => {
    const { parent, endpoint, pid, dataDir } = await startParent();
    const port = Number(new URL(endpoint).port);
    expect(listeners(port)).toEqual(["0100007F"]); // 127.0.0.1, nothing on 0.0.0.0 or ::
    const sqs = new SQSClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
    });
    try {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "launcher-probe" }));
      expect(QueueUrl).toBe(`${endpoint}/queue/us-east-1/000000000000/launcher-probe`);
      expect((await sqs.send(new GetQueueUrlCommand({ QueueName: "launcher-probe" }))).QueueUrl).toBe(
        QueueUrl,
      );
    } finally {
      sqs.destroy();
    }
    const exited = new Promise((resolve) => parent.once("exit", resolve));
    parent.kill("SIGUSR2"); // stop()
    await exited;
    expect(await gone(pid)).toBe(true);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("leaves no orphan when the parent is killed with SIGKILL; the next start sweeps its data dir", async () => {
    const first = await startParent();
    first.parent.kill("SIGKILL"); // no handler runs: the watchdog thread sees its stdin pipe close
    expect(await gone(first.pid)).toBe(true);
    expect(existsSync(first.dataDir)).toBe(true); // nobody could delete it...
    const second = await startParent();
    expect(existsSync(first.dataDir)).toBe(false); // ...until the next start
    second.parent.kill("SIGUSR2");
    expect(await gone(second.pid)).toBe(true);
  });
});
