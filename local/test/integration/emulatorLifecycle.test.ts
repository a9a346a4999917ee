import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

/** `reliable-consumers-local emulators` (`npm run emulators`) in a child process; resolves with its emulator children once all three are up. */
async function startCli(
  args: string[] = [],
): Promise<{ cli: ChildProcess; children: number[]; output: string }> {
  const child = spawn(process.execPath, [cli, "emulators", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      output += d.toString();
      if (output.includes("Ctrl-C stops everything")) resolve();
    });
    child.stderr!.on("data", (d: Buffer) => {
      output += d.toString();
    });
    child.once("exit", (code) => reject(new Error(`emulators CLI exited (${code}):\n${output}`)));
  });
  // By command line: Node 24 names its main thread, so kinesis-local's `comm` is "MainThread".
  const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(child.pid)], { encoding: "utf8" })
    .split("\n")
    .filter((l) => /^\s*\d+\s+(\S*\/)?(java|kcat)\s|kinesis-local\/main\.js/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
  return { cli: child, children, output };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).includes("Z");
  } catch {
    return false;
  }
};

async function gone(pids: number[]): Promise<boolean> {
  for (let i = 0; i < 50 && pids.some(alive); i++) await sleep(100);
  return !pids.some(alive);
}

describe("emulator lifecycle (npm run emulators)", () => {
  it("brings all three up on 127.0.0.1 and stops them on Ctrl-C (SIGINT)", async () => {
    const { cli, children, output } = await startCli();
    expect(output).toMatch(/DynamoDB \+ Streams\s+http:\/\/127\.0\.0\.1:\d+/);
    expect(output).toMatch(/SQS \(fauxqs\)\s+http:\/\/127\.0\.0\.1:\d+/);
    expect(output).toMatch(/Kafka mock brokers\s+127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+/);
    expect(output).toMatch(/Kinesis \(kinesis-local\)\s+http:\/\/127\.0\.0\.1:\d+/);
    // java (DynamoDB Local), kcat and node (kinesis-local); fauxqs runs in-process
    expect(children).toHaveLength(3);
    cli.kill("SIGINT");
    expect(await gone([cli.pid!, ...children])).toBe(true);
  });

  it("leaves no orphan even when the parent is killed with SIGKILL", async () => {
    const { cli, children } = await startCli();
    expect(children).toHaveLength(3);
    cli.kill("SIGKILL"); // no handler runs: the children notice their stdin pipe closing
    expect(await gone(children)).toBe(true);
  });
});

describe("emulator lifecycle with the real Kafka broker (npm run emulators -- --kafka real)", () => {
  /** The broker's JVM among the CLI's children, and what it listens on. */
  const brokerListens = (pid: number) =>
    execFileSync("ps", ["-o", "args=", "-p", String(pid)], { encoding: "utf8" }).includes("GuardedKafka");

  it("runs one Kafka broker on 127.0.0.1 and stops it with the rest on Ctrl-C (SIGINT)", async () => {
    const { cli, children, output } = await startCli(["--kafka", "real"]);
    expect(output).toMatch(/Kafka brokers\s+127\.0\.0\.1:\d+\n/);
    expect(children).toHaveLength(3); // java (DynamoDB Local), java (the Kafka broker), node (kinesis-local)
    expect(children.filter(brokerListens)).toHaveLength(1);
    cli.kill("SIGINT");
    expect(await gone([cli.pid!, ...children])).toBe(true);
  }, 120_000);

  it("leaves no broker behind when the parent is killed with SIGKILL", async () => {
    const { cli, children } = await startCli(["--kafka=real"]);
    const broker = children.filter(brokerListens);
    expect(children).toHaveLength(3);
    expect(broker).toHaveLength(1);
    cli.kill("SIGKILL"); // GuardedKafka halts the JVM when its stdin pipe closes
    expect(await gone(children)).toBe(true);
  }, 120_000);
});
