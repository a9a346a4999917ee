/**
 * A Kafka mapping's on-failure destination. A `kafka://` topic gets one message per record in
 * Lambda's documented format (the record's key; the failure metadata with the record under
 * `payload`, `kafkaDestinationMessage`); SQS gets metadata only (`KafkaBatchInfo`). Nothing is
 * dropped: a write the destination refuses is retried until it lands (retryHolding.ts), the
 * partition held meanwhile, and only then may the caller commit past the records.
 */
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Kafka, KafkaMessage, Producer } from "kafkajs";
import type { KafkaMapping } from "../../runtime/model.ts";
import {
  type DiscardCondition,
  invocationRecord,
  kafkaDestinationMessage,
  sendToSqsDestination,
} from "../lambda/failureDestination.ts";
import type { InvokeResult } from "../lambda/functionHost.ts";
import type { EventSourceStats } from "../sqs/eventSource.ts";
import { retryHolding } from "./retryHolding.ts";

/**
 * Hands records of one partition that Lambda gives up on (`condition`, after `count` invocations,
 * the `last` one's result) to the destination; `true` once it took them (or there were none),
 * `false` when the mapping stopped first.
 */
export type Discard = (
  topic: string,
  partition: number,
  messages: KafkaMessage[],
  condition: DiscardCondition,
  count: number,
  last?: InvokeResult,
) => Promise<boolean>;

/** The destination of one mapping, with the producer it writes a Kafka destination with. */
export interface FailureSink {
  readonly discard: Discard;
  /** Disconnects the producer, if one was made. */
  stop(): Promise<void>;
}

/** What the sink writes with, and for whom. */
export interface FailureSinkOptions {
  readonly mapping: KafkaMapping;
  readonly functionArn: string;
  /** The function's Kafka client (a `kafka://` destination is on the same cluster). */
  readonly kafka: Kafka;
  readonly sqs: SQSClient;
  /** The brokers, comma-separated, as the records' metadata names them. */
  readonly bootstrapServers: string;
  /** `discarded` counts the records the destination took. */
  readonly stats: EventSourceStats;
  /** Aborted when the mapping stops: a refused write is then given up. */
  readonly signal: AbortSignal;
  pause(ms: number): Promise<void>;
}

/** `KafkaBatchInfo` of an SQS/SNS destination's record: where the discarded records were, not them. */
export function kafkaBatchInfo(
  topic: string,
  partition: number,
  messages: readonly KafkaMessage[],
  bootstrapServers: string,
): Record<string, unknown> {
  return {
    batchSize: messages.length,
    bootstrapServers,
    payloadSize: messages.reduce((n, m) => n + (m.value?.length ?? 0), 0),
    recordsInfo: {
      [`${topic}-${partition}`]: {
        firstRecordOffset: messages[0]!.offset,
        firstRecordTimestamp: messages[0]!.timestamp,
        lastRecordOffset: messages.at(-1)!.offset,
        lastRecordTimestamp: messages.at(-1)!.timestamp,
      },
    },
  };
}

/** The sink of `options.mapping`'s `onFailure` (SQS, or a Kafka topic of the same cluster). */
export function createFailureSink(options: FailureSinkOptions): FailureSink {
  const { mapping, functionArn, bootstrapServers } = options;
  let producer: Producer | undefined;
  const send: Discard = async (topic, partition, messages, condition, count, last) => {
    const dest = mapping.onFailure;
    const failure = {
      functionArn,
      condition,
      approximateInvokeCount: count,
      ...(last ? { lastResult: last } : {}),
    };
    if (dest?.kind === "kafka") {
      producer ??= options.kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      await producer.send({
        topic: dest.topic,
        acks: -1,
        messages: messages.map((message) =>
          kafkaDestinationMessage({
            ...failure,
            eventSourceArn: mapping.clusterArn,
            bootstrapServers,
            record: { topic, partition, message },
          }),
        ),
      });
    } else {
      const batchInfo = kafkaBatchInfo(topic, partition, messages, bootstrapServers);
      await sendToSqsDestination(
        options.sqs,
        dest,
        invocationRecord({ ...failure, batchInfoKey: "KafkaBatchInfo", batchInfo }),
      );
    }
    return true;
  };
  return {
    async discard(topic, partition, messages, condition, count, last) {
      if (messages.length === 0) return true;
      const sent = await retryHolding(() => send(topic, partition, messages, condition, count, last), {
        stopped: () => options.signal.aborted,
        pause: options.pause,
        refused: (error) =>
          process.emitWarning(
            `${mapping.logicalId}: on-failure destination refused ${messages.length} record(s), retrying: ${error.message}`,
          ),
      });
      if (sent.done) options.stats.discarded += messages.length;
      return sent.done;
    },
    async stop() {
      await producer?.disconnect().catch(() => undefined);
    },
  };
}
