import { setTimeout as sleep } from "node:timers/promises";
import {
  type AttributeValue,
  BatchGetItemCommand,
  type DynamoDBClient,
  type KeysAndAttributes,
} from "@aws-sdk/client-dynamodb";

/** DynamoDB's limit: keys in one BatchGetItem. */
export const BATCH_GET_LIMIT = 100;

export interface ConsistentReadOptions {
  /** Keys per BatchGetItem (1..100). @default 100 */
  readonly maxBatch?: number;
  /** The longest a read waits for company before it is sent. @default 2 */
  readonly maxDelayMs?: number;
  /** Rounds for keys DynamoDB left unprocessed (throttling). @default 5 */
  readonly maxRounds?: number;
  /** Attributes to read (a ProjectionExpression; `#name` placeholders from `names`). @default the whole item */
  readonly projection?: string;
  readonly names?: Record<string, string>;
}

interface Waiting {
  readonly key: Record<string, AttributeValue>;
  readonly id: string;
  readonly resolve: (item: Record<string, AttributeValue> | undefined) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Strongly consistent single-item reads of one table, coalesced into BatchGetItem calls of up to
 * 100 keys: each read costs what a strongly consistent GetItem costs (1 read unit per 4 KB), and
 * reads issued at about the same time share a request. Used where a read replaces a write that
 * would only have failed (a dedup claim of a key known to exist) and where one read per aggregate
 * replaces a Query each (the outbox's order check).
 *
 * A key asked for twice before its request goes out is read once (BatchGetItem rejects duplicate
 * keys). Keys still unprocessed after `maxRounds` reject their reads: a failed read proves nothing.
 */
export function createConsistentReader(
  client: DynamoDBClient,
  tableName: string,
  keyId: (key: Record<string, AttributeValue>) => string,
  options: ConsistentReadOptions = {},
): (key: Record<string, AttributeValue>) => Promise<Record<string, AttributeValue> | undefined> {
  const maxBatch = Math.min(Math.max(options.maxBatch ?? BATCH_GET_LIMIT, 1), BATCH_GET_LIMIT);
  const maxDelayMs = options.maxDelayMs ?? 2;
  const maxRounds = options.maxRounds ?? 5;
  let queue: Waiting[] = [];
  const queuedIds = new Set<string>();
  let timer: NodeJS.Timeout | undefined;

  const request = (keys: Record<string, AttributeValue>[]): KeysAndAttributes => ({
    Keys: keys,
    ConsistentRead: true,
    ...(options.projection ? { ProjectionExpression: options.projection } : {}),
    ...(options.names ? { ExpressionAttributeNames: options.names } : {}),
  });

  async function send(group: Waiting[]): Promise<void> {
    const byId = new Map<string, Waiting[]>();
    for (const w of group) byId.set(w.id, [...(byId.get(w.id) ?? []), w]);
    let todo = [...byId.values()].map((ws) => ws[0]!.key);
    const found = new Map<string, Record<string, AttributeValue>>();
    try {
      for (let round = 1; todo.length > 0; round++) {
        if (round > maxRounds) throw new Error(`BatchGetItem left ${todo.length} keys unprocessed`);
        if (round > 1) await sleep(Math.min(1000, 25 * 2 ** round * Math.random()));
        const out = await client.send(
          new BatchGetItemCommand({ RequestItems: { [tableName]: request(todo) } }),
        );
        for (const item of out.Responses?.[tableName] ?? []) found.set(keyId(item), item);
        todo = out.UnprocessedKeys?.[tableName]?.Keys ?? [];
      }
    } catch (error) {
      for (const w of group) w.reject(error);
      return;
    }
    for (const [id, ws] of byId) for (const w of ws) w.resolve(found.get(id));
  }

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    queuedIds.clear();
    while (queue.length > 0) {
      const ids = new Set<string>();
      const group: Waiting[] = [];
      const rest: Waiting[] = [];
      for (const w of queue) {
        if (ids.has(w.id) || ids.size < maxBatch) {
          ids.add(w.id);
          group.push(w);
        } else rest.push(w);
      }
      queue = rest;
      void send(group);
    }
  }

  return (key) =>
    new Promise((resolve, reject) => {
      const id = keyId(key);
      queue.push({ key, id, resolve, reject });
      queuedIds.add(id);
      if (queuedIds.size >= maxBatch) flush();
      else timer ??= setTimeout(flush, maxDelayMs);
    });
}
