import * as net from "node:net";
import { logLevel } from "kafkajs";
import {
  disconnectAllKafkaProducers,
  getKafkaProducer,
  KafkaPublishTransientError,
  kafkaConfigFromEnv,
} from "reliable-consumers/kafka";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createKafkaProducer } from "../../lib/kafka/producer.ts";
import { topicOffsets } from "../../lib/kafka/topicsWithLeaders.ts";
import { kafka } from "../support/clients.ts";
import { declareTopics, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);

afterAll(() => disconnectAllKafkaProducers());

describe("shared Kafka producer (kafkajs against the local Kafka)", () => {
  it("is cached per config and delivers keyed records with headers and timestamps", async () => {
    const topic = name("out");
    await declareTopics([topic]);
    const producer = getKafkaProducer();
    expect(getKafkaProducer()).toBe(producer);
    const sent = await producer.send(topic, [
      { key: "k1", value: "one", headers: { "message-id": "m1" }, timestamp: 1_700_000_000_000 },
      { key: "k1", value: "two", headers: { "message-id": "m2" } },
    ]);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((r) => r.topic === topic)).toBe(true);

    const tap = await tapTopics([topic], name("g"));
    const seen = (await tap.take(topic, 2).finally(() => tap.stop())).map(({ message }) => ({
      key: message.key!.toString(),
      value: message.value!.toString(),
      id: message.headers!["message-id"]!.toString(),
      ts: message.timestamp,
    }));
    expect(seen.map((s) => [s.key, s.value, s.id])).toEqual([
      ["k1", "one", "m1"],
      ["k1", "two", "m2"],
    ]);
    expect(seen[0]!.ts).toBe("1700000000000");
  });

  it("reconnects after an explicit disconnect (a new producer from the cache)", async () => {
    const topic = name("reconnect");
    await declareTopics([topic]);
    const first = getKafkaProducer();
    await first.send(topic, [{ value: "a" }]);
    await first.disconnect();
    const second = getKafkaProducer();
    expect(second).not.toBe(first);
    await expect(second.send(topic, [{ value: "b" }])).resolves.toHaveLength(1);
  });

  it("classifies an unreachable cluster as transient", async () => {
    const dead = createKafkaProducer(
      {
        brokers: ["127.0.0.1:1"],
        connectionTimeoutMs: 200,
        retry: { retries: 1, initialRetryTime: 50, maxRetryTime: 100 },
      },
      { logLevel: logLevel.NOTHING },
    );
    const error = await dead.send(name("never"), [{ value: "x" }]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaPublishTransientError);
    expect((error as Error).message).toContain(name("never"));
    await dead.disconnect();
  });

  it("survives the cluster dropping every connection between sends (reconnects, nothing lost)", async () => {
    const topic = name("chaos");
    await declareTopics([topic]);
    const sockets: net.Socket[] = [];
    const producer = createKafkaProducer(
      {
        ...kafkaConfigFromEnv(),
        requestTimeoutMs: 3_000,
        socketFactory: ({ host, port, onConnect }) => {
          const socket = net.connect({ host, port }, onConnect);
          socket.setKeepAlive(true, 1000);
          sockets.push(socket);
          return socket;
        },
      },
      { logLevel: logLevel.NOTHING },
    );
    await producer.send(topic, [{ key: "a", value: "1" }]);
    expect(sockets.length).toBeGreaterThan(0);
    // Every broker connection is reset (RST), as when a NAT or the broker drops idle connections.
    for (const s of sockets) s.destroy(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }));
    const opened = sockets.length;
    await producer.send(topic, [{ key: "a", value: "2" }]);
    expect(sockets.length).toBeGreaterThan(opened); // it reconnected

    const tap = await tapTopics([topic], name("chaos-g"));
    const got = await tap.take(topic, 2).finally(() => tap.stop());
    expect(got.map((r) => r.message.value?.toString())).toEqual(["1", "2"]);
    await producer.disconnect();
  });

  it.runIf(inject("kafkaSubstrate") === "real")(
    "is idempotent on the real cluster: a produce whose response is lost is retried without a duplicate",
    async () => {
      const topic = name("idempotent");
      await declareTopics([{ name: topic, partitions: 1 }]);
      let lost = 0;
      const producer = createKafkaProducer(
        {
          ...kafkaConfigFromEnv(),
          requestTimeoutMs: 3_000,
          // The broker writes the first batch, and its answer never arrives: the connection dies as
          // the response comes in (a network cut between the two), so kafkajs sends the batch again.
          socketFactory: ({ host, port, onConnect }) => {
            const socket = net.connect({ host, port }, onConnect);
            let produceInFlight = false;
            const write = socket.write.bind(socket) as (...a: unknown[]) => boolean;
            socket.write = ((chunk: unknown, ...rest: unknown[]) => {
              // Request header: int32 size, int16 api key (0 = Produce).
              if (lost === 0 && Buffer.isBuffer(chunk) && chunk.length > 6 && chunk.readInt16BE(4) === 0)
                produceInFlight = true;
              return write(chunk, ...rest);
            }) as typeof socket.write;
            const emit = socket.emit.bind(socket) as (...a: unknown[]) => boolean;
            socket.emit = ((event: string, ...args: unknown[]) => {
              if (event === "data" && produceInFlight) {
                produceInFlight = false;
                lost++;
                socket.destroy(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }));
                return true;
              }
              return emit(event, ...args);
            }) as typeof socket.emit;
            return socket;
          },
        },
        { logLevel: logLevel.NOTHING },
      );
      await producer.send(topic, [{ key: "a", value: "1" }]);
      await producer.send(topic, [{ key: "a", value: "2" }]);
      await producer.disconnect();
      expect(lost).toBe(1);

      const [end] = await topicOffsets(kafka(), topic);
      expect(end?.high).toBe("2"); // offsets 0 and 1; a duplicate would have taken offset 2
      const tap = await tapTopics([topic], name("idempotent-g"));
      const got = await tap.take(topic, 2).finally(() => tap.stop());
      expect(got.map((r) => r.message.value?.toString())).toEqual(["1", "2"]);
    },
  );
});
