/**
 * What the local console's server answers and the page reads: one set of shapes for both sides
 * (types only, so the browser bundle and the Node server share them without sharing any code).
 */
import type { Denial } from "../enforcement/denials.ts";

/** A resource of the app, as the overview lists it, with the console page that shows it. */
export interface ResourceDto {
  readonly kind: "queue" | "table" | "topic" | "function" | "mapping" | "schedule";
  readonly name: string;
  readonly detail: string;
  /** The console route that shows it (`#/queues/<name>`), when there is one. */
  readonly link?: string;
}

/** One line of the materialisation report. */
export interface ReportEntryDto {
  readonly logicalId: string;
  readonly type: string;
  readonly detail: string;
}

export interface OverviewDto {
  /** `app`: `reliable-consumers local` (a synthesized app); `emulators`: `npm run emulators` (none). */
  readonly mode: "app" | "emulators";
  readonly stackName?: string;
  readonly region: string;
  /** The endpoints a tool should use (the gateway's, when the runtime enforces IAM). */
  readonly endpoints: Readonly<Record<string, string>>;
  readonly resources: readonly ResourceDto[];
  readonly report?: {
    readonly created: readonly ReportEntryDto[];
    readonly inert: readonly ReportEntryDto[];
    readonly unsupported: readonly ReportEntryDto[];
    /** Refused as AWS refuses it, with AWS's error (absent from an older runtime). */
    readonly refused?: readonly ReportEntryDto[];
    /** Local stand-ins for imported resources, with the emulator's defaults (absent from an older runtime). */
    readonly standIns?: readonly ReportEntryDto[];
    readonly notes: readonly string[];
  };
  readonly enforceIam?: boolean;
}

export interface QueueSummaryDto {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  readonly fifo: boolean;
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
  /** Age of the oldest message (ms), when the queue can be peeked. */
  readonly oldestAgeMs?: number;
  /** The queue its redrive policy dead-letters to. */
  readonly deadLetterQueue?: string;
  readonly maxReceiveCount?: number;
  /** Queues whose redrive policy names this one: it is their DLQ. */
  readonly deadLetterFor: readonly string[];
  /** Functions this queue triggers. */
  readonly triggers: readonly string[];
}

/** A body shown as text: pretty-printed JSON, plain text, or bytes as hex. Never markup. */
export interface BodyDto {
  readonly kind: "json" | "text" | "hex";
  readonly text: string;
  readonly bytes: number;
}

export interface AttributeDto {
  readonly name: string;
  readonly type: string;
  readonly value: string;
}

/** Our failure context (`x-failure-context`), as fields. */
export interface FailureContextDto {
  readonly lastError?: string;
  readonly retryCount?: string;
  readonly firstFailedAt?: string;
  readonly originalQueue?: string;
  readonly originalTopic?: string;
  readonly messageId?: string;
  readonly consumer?: string;
  /** Every context header, for the ones above and any other. */
  readonly all: Readonly<Record<string, string>>;
}

export interface PeekedMessageDto {
  readonly messageId: string;
  readonly state: "ready" | "inflight" | "delayed";
  readonly sentAt: number;
  readonly receiveCount: number;
  readonly groupId?: string;
  readonly body: BodyDto;
  /** The user's own attributes (the packed context unfolded). */
  readonly attributes: readonly AttributeDto[];
  readonly context?: FailureContextDto;
  /** `x-last-error`'s type, `unknown` without one. */
  readonly errorType: string;
}

export interface QueueDetailDto {
  readonly queue: QueueSummaryDto;
  /** `fauxqs`: every message, ready, in flight and delayed, read without a receive. */
  readonly peek: "fauxqs" | "unavailable";
  readonly messages: readonly PeekedMessageDto[];
}

/** A replay (redrive) from an SQS DLQ: what `npm run dlq -- redrive` takes. */
export interface RedriveRequest {
  readonly queue: string;
  /** Only these DLQ messages (MessageId). */
  readonly ids?: readonly string[];
  readonly errorTypes?: readonly string[];
  /** Only messages dead-lettered at least this long ago. */
  readonly olderThanSeconds?: number;
  readonly dryRun: boolean;
  /** A queue by name, instead of each message's `x-original-queue`. */
  readonly toQueue?: string;
}

/** What a move did (`MoveProgress` of lib/dlq, plus where it went). */
export interface MoveResultDto {
  readonly dryRun: boolean;
  readonly seen: number;
  readonly moved: number;
  readonly skipped: number;
  readonly failed: number;
  readonly noDestination: number;
  readonly byDestination: Readonly<Record<string, number>>;
  readonly alreadyReplayed?: number;
}

/** The batch outcomes charted per function, from the library's EMF metrics. */
export const OUTCOMES = ["succeeded", "duplicate", "failed", "parked", "requeued", "heldElsewhere"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** One function's figures over time, in fixed buckets. */
export interface FunctionSeriesDto {
  readonly name: string;
  readonly bucketMs: number;
  /** Start of each bucket (epoch ms). */
  readonly at: readonly number[];
  readonly invocations: readonly number[];
  readonly errors: readonly number[];
  readonly p50Ms: ReadonlyArray<number | null>;
  readonly p99Ms: ReadonlyArray<number | null>;
  readonly outcomes: Readonly<Record<Outcome, readonly number[]>>;
}

export interface FunctionSummaryDto {
  readonly name: string;
  readonly logicalId: string;
  readonly triggers: readonly string[];
  readonly invocations: number;
  readonly errors: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly outcomes: Readonly<Record<Outcome, number>>;
}

export type LogLevel = "DEBUG" | "INFO" | "WARN" | "ERROR" | "PLATFORM" | "METRICS" | "TEXT";

export interface LogLineDto {
  readonly seq: number;
  readonly at: number;
  readonly fn: string;
  readonly level: LogLevel;
  readonly requestId?: string;
  readonly text: string;
}

/** A denied call as the runtime records it (a plain record: the page can take it as it is). */
export type DenialDto = Denial;

export interface OutboxTableDto {
  readonly table: string;
  readonly pending: number;
  readonly oldestPendingAgeMs?: number;
  readonly parked: readonly OutboxEventDto[];
  readonly recent: readonly OutboxEventDto[];
}

export interface OutboxEventDto {
  readonly pk: string;
  readonly sk: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly aggregate: string;
  readonly destination: string;
  readonly createdAt: number;
  readonly state: "pending" | "published" | "parked" | "discarded";
  readonly lastError?: string;
  /** The dedup key of the message whose handling wrote it. */
  readonly causationId?: string;
  readonly publishedAt?: number;
  readonly publishedBy?: string;
  readonly parkedAt?: number;
}

export interface KafkaPartitionDto {
  readonly partition: number;
  readonly low: string;
  readonly high: string;
}

export interface KafkaGroupLagDto {
  readonly groupId: string;
  readonly lag: number;
  readonly partitions: ReadonlyArray<{
    readonly partition: number;
    readonly committed: string;
    readonly lag: number;
  }>;
}

/** One shard of a Kinesis stream, as ListShards has it. */
export interface KinesisShardDto {
  readonly shardId: string;
  readonly parentIds: readonly string[];
  /** A closed shard (split or merged away) has an ending sequence number. */
  readonly open: boolean;
  readonly startingSequenceNumber: string;
}

/** Where one Kinesis mapping stands on one shard. */
export interface KinesisPositionDto {
  readonly shardId: string;
  readonly lastRead?: string;
  /** The highest sequence number processed or sent to the destination. */
  readonly lastDone?: string;
  readonly buffered: number;
  /** The last GetRecords' MillisBehindLatest. */
  readonly iteratorAgeMs?: number;
  readonly closed: boolean;
}

/** A Kinesis mapping on a stream: its function, its position on each shard and what it gave up on. */
export interface KinesisMappingDto {
  readonly logicalId: string;
  readonly functionName: string;
  readonly consumer?: string;
  readonly parallelizationFactor: number;
  readonly positions: readonly KinesisPositionDto[];
  readonly batches: number;
  readonly functionErrors: number;
  /** Records sent to the on-failure destination (metadata only: KinesisBatchInfo). */
  readonly discarded: number;
  /** The destination queue's name (its messages are in the Queues view). */
  readonly destinationQueue?: string;
}

/** A Kinesis data stream with its shards and mappings. */
export interface KinesisStreamDto {
  readonly name: string;
  readonly arn: string;
  readonly mode?: string;
  readonly retentionHours?: number;
  readonly shards: readonly KinesisShardDto[];
  readonly consumers: readonly string[];
  readonly mappings: readonly KinesisMappingDto[];
}

/** A topic and its place in a retry ladder (`main`, `retry.5s`, ..., `DLQ`). */
export interface KafkaTopicDto {
  readonly name: string;
  readonly base: string;
  readonly rung: string;
  readonly partitions: readonly KafkaPartitionDto[];
  readonly groups: readonly KafkaGroupLagDto[];
}

export interface KafkaDeadLetterDto {
  /** `<partition>:<offset>` (with `#<i>` inside a document Lambda wrote): what a replay selects by. */
  readonly id: string;
  readonly partition: number;
  readonly offset: string;
  readonly deadLetteredAt: number;
  readonly writtenBy: "consumer" | "lambda";
  readonly errorType: string;
  readonly key: BodyDto | null;
  readonly value: BodyDto | null;
  readonly context: FailureContextDto;
  readonly headers: readonly AttributeDto[];
}

export interface KafkaReplayRequest {
  readonly topic: string;
  readonly ids?: readonly string[];
  readonly errorTypes?: readonly string[];
  readonly olderThanSeconds?: number;
  readonly dryRun: boolean;
}

export interface DedupTableDto {
  readonly table: string;
  /** The scopes the app's consumers use (CONSUMER_NAME). */
  readonly scopes: readonly string[];
}

export interface DedupRecordDto {
  readonly pk: string;
  readonly status?: string;
  readonly leaseToken?: string;
  readonly holder?: string;
  readonly leaseExpiresAt?: number;
  readonly attempts?: number;
  /** The TTL (epoch seconds). */
  readonly expiresAt?: number;
  readonly payloadHash?: string;
  readonly hasResult: boolean;
}

export type TraceStepKind =
  | "waiting"
  | "received"
  | "handler"
  | "claimed"
  | "outbox"
  | "published"
  | "consumed"
  | "parked"
  | "replayed"
  | "log";

export interface TraceStepDto {
  readonly at?: number;
  readonly kind: TraceStepKind;
  readonly where: string;
  readonly detail: string;
  readonly fn?: string;
  readonly requestId?: string;
}

export interface TraceDto {
  readonly id: string;
  /** The ids the trace followed: the message's own, its producer id, its copies', its events'. */
  readonly related: readonly string[];
  readonly steps: readonly TraceStepDto[];
}

/** What the server pushes over `/api/events` (server-sent events), by event name. */
export interface ConsoleEvents {
  readonly logs: readonly LogLineDto[];
  readonly queues: readonly QueueSummaryDto[];
  readonly functions: readonly FunctionSummaryDto[];
  readonly denial: DenialDto;
  readonly changed: { readonly what: "outbox" | "kafka" | "actions" };
}
