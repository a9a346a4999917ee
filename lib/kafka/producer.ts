import { type CompressionTypes, type IHeaders, Kafka, logLevel, type Message, type Producer } from "kafkajs";
import {
  configCacheKey,
  DEFAULT_RETRY,
  type KafkaConnectionConfig,
  kafkaConfigFromEnv,
  toKafkaJsConfig,
} from "./config.ts";
import { type KafkaHeader, kafkajsHeaders } from "./kafkajsOrderedHeaders.ts";
import { classifyPublishError } from "./publishErrors.ts";

export { type KafkaConnectionConfig, kafkaConfigFromEnv } from "./config.ts";
export type { KafkaHeader } from "./kafkajsOrderedHeaders.ts";
export { KafkaPublishPermanentError, KafkaPublishTransientError } from "./publishErrors.ts";

/**
 * The one Kafka producer of the library, shared by the consumer middleware (retry and dead-letter
 * topics), the DLQ tooling and the outbox relay.
 *
 * - **Connection reuse.** One connected producer per distinct config, cached at module scope, so a
 *   warm Lambda keeps its TCP/TLS/SASL sessions across invocations. A broken connection is dropped
 *   from the cache and rebuilt on the next send.
 * - **Durability.** `acks: -1`: the leader answers only once every in-sync replica has the record.
 *   A send that resolves is durable; an ack (SQS delete, Kafka offset, batch success) may follow it.
 * - **Idempotence and order.** On a cluster that supports it (MSK, Apache Kafka: the default) the
 *   producer is idempotent with up to 5 requests in flight, as the Java client and MSK's guidance
 *   have it: the broker drops a batch it already wrote (a retry after a lost response) and rejects
 *   one that would jump the sequence, so a retry neither duplicates nor reorders a key's records.
 *   (kafkajs serialises produce requests per broker while idempotent, so order holds the same way.)
 *   With `idempotent: false` (the librdkafka mock, which has no InitProducerId) it falls back to one
 *   request in flight: order still holds, but a retried send may duplicate a record.
 *   After a send fails for good, the idempotent producer is rebuilt (a new producer id): kafkajs
 *   rolls its sequence numbers back on failure, and the next, different batch would otherwise reuse
 *   the numbers of one the broker may have written, and be dropped by it as a duplicate. Either way
 *   a failed send may have been written: consumers deduplicate.
 * - **Errors.** Every failure is rethrown as `KafkaPublishPermanentError` (the cluster will never
 *   take this record: dead-letter it) or `KafkaPublishTransientError` (retry later). See
 *   publishErrors.ts.
 */
export interface OutgoingMessage {
  /** The record's key (the default partitioner hashes it). @default - no key */
  readonly key?: string | Buffer | null;
  /** The record's value; `null` writes a tombstone. */
  readonly value: string | Buffer | null;
  /**
   * One value per name (an object), or every header in its order (a list, in which a name may
   * repeat, as Kafka allows): a copy of a consumed record keeps all of its headers, in order.
   */
  readonly headers?: Readonly<Record<string, string | Buffer>> | ReadonlyArray<KafkaHeader>;
  /** Record timestamp (CreateTime). @default the broker/producer's now */
  readonly timestamp?: number | Date | string;
  /** Explicit partition. @default murmur2(key) like the Java client (kafkajs DefaultPartitioner) */
  readonly partition?: number;
}

/** Where a produced record landed. */
export interface PublishedRecord {
  /** The topic written to. */
  readonly topic: string;
  /** The partition written to. */
  readonly partition: number;
  /** Offset of the first record of this request on that partition. */
  readonly baseOffset: string | undefined;
}

/** Messages for one topic, for `sendBatch`. */
export interface TopicMessages {
  /** The topic to produce to. */
  readonly topic: string;
  /** Its records, written in this order. */
  readonly messages: ReadonlyArray<OutgoingMessage>;
}

/** The producer the consumer routes failures with and the relay publishes with. */
export interface KafkaProducer {
  /** Produces to one topic; resolves once every replica has the records (acks = all). */
  send(topic: string, messages: ReadonlyArray<OutgoingMessage>): Promise<PublishedRecord[]>;
  /** Several topics in one produce request per broker. All-or-error (classified by the first topic). */
  sendBatch(batch: ReadonlyArray<TopicMessages>): Promise<PublishedRecord[]>;
  /** Disconnects and forgets this producer (the next getKafkaProducer builds a new one). */
  disconnect(): Promise<void>;
}

/** Options of `createKafkaProducer`. */
export interface KafkaProducerOptions {
  /** Compression codec for produce requests. @default none */
  readonly compression?: CompressionTypes;
  /** Broker-side timeout for acks=all. @default 30000 ms */
  readonly ackTimeoutMs?: number;
  /** kafkajs log level. @default ERROR (kafkajs logs no payloads) */
  readonly logLevel?: logLevel;
}

const cache = new Map<string, KafkaProducer>();

/**
 * The cached producer for `config` (default: from the environment, see kafkaConfigFromEnv).
 * Call it per invocation: it is cheap after the first call and reconnects when needed.
 */
export function getKafkaProducer(
  config: KafkaConnectionConfig = kafkaConfigFromEnv(),
  options: KafkaProducerOptions = {},
): KafkaProducer {
  const key = `${configCacheKey(config)}|${options.compression ?? ""}|${options.ackTimeoutMs ?? ""}`;
  let producer = cache.get(key);
  if (!producer) {
    producer = createKafkaProducer(config, options, () => cache.delete(key));
    cache.set(key, producer);
  }
  return producer;
}

/** Disconnects every cached producer (tests, graceful shutdown). */
export async function disconnectAllKafkaProducers(): Promise<void> {
  const all = [...cache.values()];
  cache.clear();
  await Promise.allSettled(all.map((p) => p.disconnect()));
}

function toTimestamp(t: OutgoingMessage["timestamp"]): string | undefined {
  if (t === undefined) return undefined;
  if (t instanceof Date) return String(t.getTime());
  return String(t);
}

const isHeaderList = (h: NonNullable<OutgoingMessage["headers"]>): h is ReadonlyArray<KafkaHeader> =>
  Array.isArray(h);

function headersOf(headers: NonNullable<OutgoingMessage["headers"]>): IHeaders {
  return isHeaderList(headers) ? kafkajsHeaders(headers) : { ...headers };
}

function toKafkaJsMessage(m: OutgoingMessage): Message {
  const timestamp = toTimestamp(m.timestamp);
  return {
    key: m.key ?? null,
    value: m.value,
    ...(m.headers ? { headers: headersOf(m.headers) } : {}),
    ...(timestamp !== undefined ? { timestamp } : {}),
    ...(m.partition !== undefined ? { partition: m.partition } : {}),
  };
}

/** An uncached producer (its own connection). Prefer getKafkaProducer. */
export function createKafkaProducer(
  config: KafkaConnectionConfig = kafkaConfigFromEnv(),
  options: KafkaProducerOptions = {},
  onDisconnect: () => void = () => {},
): KafkaProducer {
  const kafka = new Kafka({ ...toKafkaJsConfig(config), logLevel: options.logLevel ?? logLevel.ERROR });
  let producer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;
  const idempotent = config.idempotent ?? true;

  const connect = (): Promise<Producer> => {
    if (producer) return Promise.resolve(producer);
    connecting ??= (async () => {
      const p = kafka.producer({
        // For the mock, which creates a topic on a metadata request; a cluster with
        // auto.create.topics.enable=false (MSK's default, and our local broker's) ignores it.
        allowAutoTopicCreation: true,
        idempotent,
        maxInFlightRequests: idempotent ? 5 : 1,
        // Always explicit: an idempotent kafkajs producer otherwise retries Number.MAX_SAFE_INTEGER
        // times, and a send to a dead cluster would hang instead of failing within ~9 s.
        retry: config.retry ?? DEFAULT_RETRY,
      });
      // A connection the cluster dropped is rebuilt on the next send rather than reused half-dead.
      p.on(p.events.DISCONNECT, () => {
        if (producer === p) producer = undefined;
      });
      try {
        await p.connect();
      } catch (error) {
        await p.disconnect().catch(() => {});
        throw error;
      }
      producer = p;
      return p;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const sendBatch = async (batch: ReadonlyArray<TopicMessages>): Promise<PublishedRecord[]> => {
    const nonEmpty = batch.filter((b) => b.messages.length > 0);
    if (nonEmpty.length === 0) return [];
    const firstTopic = nonEmpty[0]!.topic;
    try {
      const p = await connect();
      const metadata = await p.sendBatch({
        acks: -1,
        timeout: options.ackTimeoutMs ?? 30_000,
        ...(options.compression !== undefined ? { compression: options.compression } : {}),
        topicMessages: nonEmpty.map((b) => ({ topic: b.topic, messages: b.messages.map(toKafkaJsMessage) })),
      });
      return metadata.map((m) => ({ topic: m.topicName, partition: m.partition, baseOffset: m.baseOffset }));
    } catch (error) {
      // kafkajs already reconnected and retried (config.retry) before giving up. A plain producer
      // keeps its connection for concurrent senders (rebuilt only when kafkajs reports a
      // disconnect); an idempotent one is rebuilt, so no later batch reuses a failed one's sequence.
      if (idempotent) await dropConnection();
      throw classifyPublishError(error, firstTopic);
    }
  };

  const dropConnection = async () => {
    const p = producer;
    producer = undefined;
    await p?.disconnect().catch(() => {});
  };

  return {
    send: (topic, messages) => sendBatch([{ topic, messages }]),
    sendBatch,
    async disconnect() {
      onDisconnect();
      await connecting?.catch(() => {});
      await dropConnection();
    },
  };
}
