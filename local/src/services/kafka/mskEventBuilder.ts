import type { IHeaders, KafkaMessage } from "kafkajs";
import type { MskEventJson, MskRecordJson, SchemaMetadata } from "reliable-consumers/kafka";

/** A record as a kafkajs consumer sees it, with its coordinates. */
export interface ConsumedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly message: Pick<KafkaMessage, "key" | "value" | "headers" | "timestamp" | "offset">;
  /** What a mapping with a schema registry says of the parts it deserialized (kafkaSchemaRegistry.ts). */
  readonly keySchemaMetadata?: SchemaMetadata;
  readonly valueSchemaMetadata?: SchemaMetadata;
}

function headerList(headers: IHeaders | undefined): Record<string, number[]>[] {
  const out: Record<string, number[]>[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) {
      if (v === undefined) continue;
      out.push({ [name]: [...(typeof v === "string" ? Buffer.from(v) : v)] });
    }
  }
  return out;
}

/**
 * Builds the event a Lambda Kafka event source mapping would deliver for these records: the
 * documented MSK shape (base64 key and value, headers as byte arrays, records grouped under
 * `<topic>-<partition>` in offset order). The local runtime, tests and the benchmark use it to drive
 * handlers with records read from a real (mock) cluster.
 */
export function toMskEvent(
  records: ReadonlyArray<ConsumedRecord>,
  options: { eventSource?: "aws:kafka" | "SelfManagedKafka"; eventSourceArn?: string } = {},
): MskEventJson {
  const groups: Record<string, MskRecordJson[]> = {};
  for (const { topic, partition, message, keySchemaMetadata, valueSchemaMetadata } of records) {
    const list = groups[`${topic}-${partition}`] ?? [];
    list.push({
      topic,
      partition,
      offset: Number(message.offset),
      timestamp: Number(message.timestamp),
      timestampType: "CREATE_TIME",
      key:
        message.key === null || message.key === undefined
          ? null
          : Buffer.from(message.key).toString("base64"),
      value: message.value === null ? null : Buffer.from(message.value).toString("base64"),
      headers: headerList(message.headers),
      ...(keySchemaMetadata ? { keySchemaMetadata } : {}),
      ...(valueSchemaMetadata ? { valueSchemaMetadata } : {}),
    });
    groups[`${topic}-${partition}`] = list;
  }
  for (const list of Object.values(groups)) list.sort((a, b) => a.offset - b.offset);
  return {
    eventSource: options.eventSource ?? "aws:kafka",
    eventSourceArn:
      options.eventSourceArn ??
      "arn:aws:kafka:us-east-1:000000000000:cluster/local/00000000-0000-0000-0000-000000000000-1",
    records: groups,
  };
}
