/**
 * What the Kafka processor benchmarks (bench/kafka.ts, bench/avro.ts) hand it besides the events:
 * a Lambda context with time to spare, telemetry that writes nothing, and a producer that must
 * never be called (nothing fails in these workloads; if something did, the figures would lie).
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import type { Telemetry } from "reliable-consumers";
import type { KafkaProducer } from "reliable-consumers/kafka";

export const benchContext = (functionName: string): Context =>
  ({ functionName, getRemainingTimeInMillis: () => 900_000 }) as unknown as Context;

export const quietTelemetry: Telemetry = {
  logger: new Logger({ logLevel: "SILENT" }),
  metrics: { publishStoredMetrics() {} } as unknown as Metrics,
  logPayloads: false,
  count() {},
};

export const noProducer: KafkaProducer = {
  send: async () => {
    throw new Error("bench: unexpected produce");
  },
  sendBatch: async () => {
    throw new Error("bench: unexpected produce");
  },
  disconnect: async () => {},
};
