/**
 * Staging a unit of work: the handler runs against a fresh `UnitOfWork` that records its writes
 * and events (nothing touches DynamoDB), and is sealed when the handler returns, so a write staged
 * later (a callback the handler left running) throws instead of being silently lost.
 */
import type { Envelope } from "../core/envelope.ts";
import { UnitOfWorkInvalidError } from "./errors.ts";
import { type NewOutboxEvent, type OutboxEvent, resolveNewEvent } from "./outboxEvent.ts";
import {
  identity,
  markerWrite,
  STAGE_BUILDERS,
  type Staged,
  type StagedConditionCheck,
  type StagedDelete,
  type StagedKind,
  type StagedPut,
  type StagedUpdate,
  type StagedWrites,
  type StageOptions,
  type StagingConfig,
} from "./stagedWrites.ts";

/** What the handler gets: stage writes and events; nothing touches DynamoDB until the handler returns. */
export interface UnitOfWork<TBody = unknown> {
  /** The message being processed: its id, body and source. */
  readonly envelope: Envelope<TBody>;
  /** Stages a Put of the transaction; `options.onConditionFailed` returns the error a failed condition throws. */
  put(put: StagedPut, options?: StageOptions): void;
  /** Stages an Update of the transaction; `options.onConditionFailed` returns the error a failed condition throws. */
  update(update: StagedUpdate, options?: StageOptions): void;
  /** Stages a Delete of the transaction; `options.onConditionFailed` returns the error a failed condition throws. */
  delete(del: StagedDelete, options?: StageOptions): void;
  /** Stages a ConditionCheck: the transaction commits only if it holds. */
  conditionCheck(check: StagedConditionCheck, options?: StageOptions): void;
  /** Stages an outbox event; returns its event id (UUIDv7). */
  publish(event: NewOutboxEvent): string;
  /** Actions staged so far, the marker included. */
  readonly actionCount: number;
}

/** The handler of one message: stages its writes and events on `uow`; its value is the unit's value. */
export type UnitOfWorkHandler<TBody, T> = (uow: UnitOfWork<TBody>) => Promise<T> | T;

/** What a handler staged, sealed: the marker and its writes, its events (numbered at commit), its value. */
export interface StagedUnit<TBody, T> {
  readonly envelope: Envelope<TBody>;
  /** The inbox marker first, then the business writes in staging order. */
  readonly written: Staged[];
  readonly events: OutboxEvent[];
  readonly value: T;
}

/** Runs the handler against a fresh unit of work; what it staged, sealed. */
export async function stageUnit<TBody, T>(
  config: StagingConfig,
  envelope: Envelope<TBody>,
  handler: UnitOfWorkHandler<TBody, T>,
  t: number,
  payloadHash: string | undefined,
): Promise<StagedUnit<TBody, T>> {
  const written: Staged[] = [markerWrite(config, envelope, t, payloadHash)];
  const events: OutboxEvent[] = [];
  let counter = 0;
  let sealed = false;
  const open = (what: string) => {
    if (sealed)
      throw new UnitOfWorkInvalidError(`the unit of work was already committed; ${what} inside the handler`);
  };
  const stage = <K extends StagedKind>(
    kind: K,
    write: StagedWrites[K],
    stageOptions: StageOptions | undefined,
  ) => {
    open("stage writes");
    counter++;
    const table = write.TableName ?? config.tableName;
    const { action, bytes, key } = STAGE_BUILDERS[kind](write, table);
    written.push({
      action,
      label: stageOptions?.label ?? `${kind}#${counter}`,
      onConditionFailed: stageOptions?.onConditionFailed,
      kind: "business",
      bytes,
      itemKey: identity(config.keyAttributes, table, key),
    });
  };
  const uow: UnitOfWork<TBody> = {
    envelope,
    get actionCount() {
      return written.length + events.length;
    },
    put: (put, o) => stage("put", put, o),
    update: (update, o) => stage("update", update, o),
    delete: (del, o) => stage("delete", del, o),
    conditionCheck: (check, o) => stage("conditionCheck", check, o),
    publish(input) {
      open("publish");
      const event = resolveNewEvent(input, {
        now: t,
        defaultDestination: config.defaultDestination,
        incomingTraceparent: envelope.headers.traceparent,
        causationId: envelope.id,
        retentionSeconds: config.retentionSeconds,
        pendingShards: config.pendingShards,
      });
      events.push(event);
      return event.eventId;
    },
  };
  const value = await handler(uow);
  sealed = true;
  return { envelope, written, events, value };
}
