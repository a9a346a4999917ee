import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { MiddlewareObj, MiddyfiedHandler } from "@middy/core";
import type { Context } from "aws-lambda";
import { batchHandler, batchMiddleware, telemetryOf } from "../batch/batchHandler.ts";
import type { Telemetry, TelemetryOptions } from "../observability/telemetry.ts";
import {
  createKafkaBatchProcessor,
  type KafkaConsumerOptions,
  type KafkaRecordHandler,
} from "./kafkaBatchProcessor.ts";
import { assertKafkaEvent } from "./mskEvent.ts";
import type { KafkaBatchResponse } from "./partialResponse.ts";
import { getKafkaProducer, type KafkaProducer } from "./producer.ts";

/**
 * The options of `kafkaConsumer`: the processor's, with the producer, the DynamoDB client and the
 * telemetry made for you.
 */
export type KafkaConsumerConfig<T> = Omit<
  KafkaConsumerOptions<T>,
  "producer" | "dynamodbClient" | "telemetry"
> & {
  /**
   * The producer that routes failures to the retry and dead-letter topics.
   * @default getKafkaProducer(): the shared, cached producer configured from the environment
   */
  readonly producer?: KafkaProducer;
  /** The DynamoDB client of the dedup store. @default new DynamoDBClient({}) */
  readonly dynamodbClient?: DynamoDBClient;
  /** A Telemetry, or options for one (service name, namespace, Powertools instances, logPayloads). */
  readonly telemetry?: Telemetry | TelemetryOptions;
};

/**
 * The batch-level middleware: rejects an event that is not a Kafka (MSK or self-managed) batch
 * before any record is touched (its shape only: the records' bytes are decoded once, by the batch
 * processor), and publishes the batch's EMF metrics whether it succeeded or not.
 */
export function kafkaBatchMiddleware(
  telemetry: Telemetry,
): MiddlewareObj<unknown, KafkaBatchResponse, Error, Context> {
  return batchMiddleware("kafka", telemetry, assertKafkaEvent);
}

/**
 * An MSK / self-managed Kafka Lambda handler that runs `handler` once per record: idempotent on
 * DynamoDB, partition (or key) order, non-blocking retry topics and a dead-letter topic, or partial
 * batch responses. It is a Middy handler, so `.use()` adds your own middlewares.
 *
 * ```ts
 * export const handler = kafkaConsumer<Payment>(async ({ body }) => capture(body), {
 *   schema: Payment,                   // zod or any Standard Schema
 *   key: (p) => p.paymentId,           // business dedup key
 *   retry: { delays: ["5s", "1m", "10m"] },
 * });
 * ```
 */
export function kafkaConsumer<T = unknown>(
  handler: KafkaRecordHandler<T>,
  config: KafkaConsumerConfig<T> = {},
): MiddyfiedHandler<unknown, KafkaBatchResponse, Error, Context> {
  const telemetry = telemetryOf(config.telemetry);
  let cached = config.producer;
  const producer = () => {
    cached ??= getKafkaProducer();
    return cached;
  };
  const process = createKafkaBatchProcessor(handler, {
    ...config,
    // Resolved on first use, so a consumer that never fails never needs KAFKA_BROKERS at init.
    producer: {
      send: (topic, messages) => producer().send(topic, messages),
      sendBatch: (batch) => producer().sendBatch(batch),
      disconnect: async () => cached?.disconnect(),
    },
    dynamodbClient: config.dynamodbClient ?? new DynamoDBClient({}),
    telemetry,
  });
  return batchHandler(kafkaBatchMiddleware(telemetry), process);
}
