import middy from "@middy/core";
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from "aws-lambda";
import { OUTBOX_ENV } from "../env.ts";
import { createTelemetry } from "../observability/telemetry.ts";
import { createOutboxRelay } from "../outbox/relay.ts";

/**
 * The outbox relay, on the app table's stream. Configure the event-source mapping with:
 * StartingPosition TRIM_HORIZON, BatchSize 100, FunctionResponseTypes [ReportBatchItemFailures],
 * FilterCriteria OUTBOX_STREAM_FILTER_PATTERN, BisectBatchOnFunctionError, MaximumRetryAttempts
 * (the sweeper catches what the mapping gives up on, and the relay holds back the later events of
 * an aggregate whose older ones it dropped), ParallelizationFactor 1 (above 1, Lambda keeps order
 * only per item, and each outbox event is its own item).
 *
 * Environment: APP_TABLE_NAME; KAFKA_BROKERS (+ MSK_IAM_AUTH=true on MSK) for kafka:<topic>
 * destinations; OUTBOX_ROUTES (JSON: route name → kafka:<topic> | sqs:<queue url>);
 * OUTBOX_PARKING_QUEUE_URL (optional). The Kafka connection and the clients live across invocations.
 */
const telemetry = createTelemetry({ serviceName: "outbox-relay" });

function routesFromEnv(): Record<string, string> {
  const raw = process.env[OUTBOX_ENV.routes];
  if (!raw) return {};
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new Error(`${OUTBOX_ENV.routes} must be a JSON object of route name → destination`);
  return parsed as Record<string, string>;
}

export const relay = createOutboxRelay({
  publisherOptions: { routes: routesFromEnv() },
  telemetry,
});

export const handler = middy<DynamoDBStreamEvent, DynamoDBBatchResponse, Error, Context>()
  .use({
    after: () => {
      telemetry.metrics.publishStoredMetrics();
    },
    onError: () => {
      telemetry.metrics.publishStoredMetrics();
    },
  })
  .handler((event) => relay.handler(event));
