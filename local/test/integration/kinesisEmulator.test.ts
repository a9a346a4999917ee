/**
 * kinesis-local binds "0.0.0.0" hard-coded in its build; the local runtime preloads loopback.cjs so
 * it listens on 127.0.0.1 only, as every emulator of the substrate does. Read from the kernel's
 * socket tables, not from what the process says: every listening socket the emulator's process
 * holds is on 127.0.0.1, none on a wildcard or IPv6 address. And the SDK's Kinesis client, which
 * speaks only HTTP/2, works against its endpoint.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { CreateStreamCommand, KinesisClient, ListStreamsCommand } from "@aws-sdk/client-kinesis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { names } from "../../../test/support/names.ts";
import { type KinesisLocal, startKinesisLocal } from "../../src/services/kinesis/emulator.ts";

const name = names(import.meta.url);
let emulator: KinesisLocal;

/** The listening TCP sockets of a process: `<hex address>:<hex port>` from /proc/net/tcp{,6}. */
function listeningSockets(pid: number): { v4: string[]; v6: string[] } {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return [/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? ""];
      } catch {
        return [];
      }
    }),
  );
  const listening = (table: string) =>
    readFileSync(table, "utf8")
      .split("\n")
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      // Columns: sl local_address rem_address st … inode (10th); st 0A is LISTEN.
      .filter((c) => c[3] === "0A" && inodes.has(c[9] ?? ""))
      .map((c) => c[1]!);
  return { v4: listening(`/proc/${pid}/net/tcp`), v6: listening(`/proc/${pid}/net/tcp6`) };
}

beforeAll(async () => {
  emulator = await startKinesisLocal();
});

afterAll(async () => {
  await emulator?.stop();
});

describe("kinesis-local as the local runtime starts it", () => {
  it("listens on 127.0.0.1 only: both of its listeners, no wildcard, no IPv6", () => {
    const { v4, v6 } = listeningSockets(emulator.pid);
    expect(v4).toHaveLength(2); // its plain and TLS listeners
    for (const address of v4) expect(address.split(":")[0]).toBe("0100007F"); // 127.0.0.1, little-endian
    expect(v6).toEqual([]);
  });

  it("serves the SDK's Kinesis client (HTTP/2) through its endpoint, with instantaneous stream creation", async () => {
    const client = new KinesisClient({
      endpoint: emulator.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    try {
      await client.send(new CreateStreamCommand({ StreamName: name("s"), ShardCount: 1 }));
      const { StreamNames } = await client.send(new ListStreamsCommand({}));
      expect(StreamNames).toContain(name("s"));
    } finally {
      client.destroy();
    }
  });
});
