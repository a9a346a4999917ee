import { DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { createDedupStore } from "reliable-consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyReuseError, LeaseLostError } from "../../lib/core/errors.ts";
import { dedupPk } from "../../lib/dedup/schema.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";
import { countRequests } from "../support/requestCounter.ts";

const name = names(import.meta.url);
const table = name("dedup");
const client = new DynamoDBClient({});

beforeAll(() => createDedupTable(client, table));
afterAll(() => deleteTable(client, table));

const getItem = async (scope: string, key: string) =>
  (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: dedupPk(scope, key) } } }))).Item;

describe("dedup store", () => {
  it("claims a new key once; a completed key is a duplicate carrying its result", async () => {
    const store = createDedupStore({ tableName: table, scope: "s1", client });
    const first = await store.claim("k");
    expect(first.status).toBe("claimed");
    if (first.status !== "claimed") return;
    expect(first.lease.attempt).toBe(1);
    await store.complete(first.lease, '{"ok":true}');
    await store.flush();
    expect(await store.claim("k")).toEqual({ status: "duplicate", result: '{"ok":true}' });
    expect((await getItem("s1", "k"))?.status?.S).toBe("COMPLETED");
  });

  it("a claim whose answer was lost after it landed is still ours when the SDK's retry meets it", async () => {
    // The first answer of each kind of claim write is dropped (as by a timeout) after DynamoDB
    // applied it; the SDK retries, and the retry finds the item our own write created.
    const lossy = new DynamoDBClient({});
    const dropped = new Set<string>();
    lossy.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const command = context.commandName ?? "";
        if (/BatchExecuteStatement|UpdateItem/.test(command) && !dropped.has(command)) {
          dropped.add(command);
          throw Object.assign(new Error("answer lost"), { name: "TimeoutError", $metadata: {} });
        }
        return out;
      },
      { step: "deserialize", name: "loseFirstAnswer" },
    );
    const inserting = createDedupStore({ tableName: table, scope: "lost-answer", client: lossy });
    const viaInsert = await inserting.claim("i");
    expect(viaInsert.status).toBe("claimed");
    // Without the INSERT path, the conditional UpdateItem's retry meets its own write.
    const updating = createDedupStore({
      tableName: table,
      scope: "lost-answer",
      client: lossy,
      claims: { maxBatch: 1 },
    });
    const viaUpdate = await updating.claim("u");
    expect(viaUpdate.status).toBe("claimed");
    expect(dropped).toEqual(new Set(["BatchExecuteStatementCommand", "UpdateItemCommand"]));
    if (viaInsert.status !== "claimed" || viaUpdate.status !== "claimed") return;
    // The leases really are ours: fenced completion succeeds.
    await Promise.all([inserting.complete(viaInsert.lease), updating.complete(viaUpdate.lease)]);
    await Promise.all([inserting.flush(), updating.flush()]);
    expect((await getItem("lost-answer", "i"))?.status?.S).toBe("COMPLETED");
    expect((await getItem("lost-answer", "u"))?.status?.S).toBe("COMPLETED");
    lossy.destroy();
  });

  it("scopes keys by consumer: another scope processes the same key", async () => {
    const a = createDedupStore({ tableName: table, scope: "consumer-a", client });
    const b = createDedupStore({ tableName: table, scope: "consumer-b", client });
    expect((await a.claim("shared")).status).toBe("claimed");
    expect((await b.claim("shared")).status).toBe("claimed");
  });

  it("reports an unexpired lease as in-progress and lets a new holder take an expired one, fencing the old", async () => {
    let clock = Date.now();
    const store = createDedupStore({
      tableName: table,
      scope: "s2",
      client,
      leaseMs: 1_000,
      now: () => clock,
    });
    const old = await store.claim("k");
    if (old.status !== "claimed") throw new Error("expected claim");
    expect((await store.claim("k")).status).toBe("in-progress");

    clock += 1_500; // the old holder "crashed"; its lease is past
    const taken = await store.claim("k");
    if (taken.status !== "claimed") throw new Error(`expected takeover, got ${taken.status}`);
    expect(taken.lease.attempt).toBe(2);

    await expect(store.complete(old.lease)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.renew(old.lease)).rejects.toBeInstanceOf(LeaseLostError);
    await store.complete(taken.lease);
    await store.flush();
    expect((await getItem("s2", "k"))?.status?.S).toBe("COMPLETED");
  });

  it("a live lease is never taken over, not even by its own delivery; that claim says so (issue 34 item 10)", async () => {
    // Issue 26 item 4 let a claim under the lease's own delivery (a Kafka offset) take it over, for
    // an invocation that died holding it. But the same offset can be in two invocations at once
    // (AWS promises nothing about concurrency): taking over a live lease ran the effect twice.
    for (const maxBatch of [25, 1]) {
      const scope = `delivery-${maxBatch}`;
      let clock = Date.now();
      const now = () => clock;
      const first = createDedupStore({ tableName: table, scope, client, claims: { maxBatch }, now });
      const held = await first.claim("k", { delivery: "orders:3:42" });
      if (held.status !== "claimed") throw new Error(`expected a claim, got ${held.status}`);
      expect((await getItem(scope, "k"))?.holder?.S).toBe("orders:3:42");
      // Another environment (module state of its own) claims for the same record, and for others.
      const second = createDedupStore({ tableName: table, scope, client, claims: { maxBatch }, now });
      expect(await second.claim("k", { delivery: "orders:3:42" })).toEqual({
        status: "in-progress",
        leaseExpiresAtMs: held.lease.expiresAtMs,
        sameDelivery: true,
      });
      expect(await second.claim("k", { delivery: "orders.retry.5s:0:7" })).toEqual({
        status: "in-progress",
        leaseExpiresAtMs: held.lease.expiresAtMs,
      });
      expect((await second.claim("k")).status).toBe("in-progress");
      // In the holder's own environment (a second invocation there) the answer is the same.
      expect(await first.claim("k", { delivery: "orders:3:42" })).toMatchObject({ sameDelivery: true });
      // A holder that died: its lease ends, and the record's redelivery claims it then.
      clock = held.lease.expiresAtMs + 1;
      const taken = await second.claim("k", { delivery: "orders:3:42" });
      if (taken.status !== "claimed") throw new Error(`expected a claim, got ${taken.status}`);
      expect(taken.lease.attempt).toBe(2);
      await expect(first.complete(held.lease)).rejects.toBeInstanceOf(LeaseLostError);
      await second.complete(taken.lease);
      await second.flush();
      expect(await second.claim("k", { delivery: "orders:3:42" })).toEqual({
        status: "duplicate",
        result: undefined,
      });
    }
  });

  it("a recorded route frees the key for the copy and answers every routed delivery's redelivery with the route (issue 26 item 3)", async () => {
    for (const maxBatch of [25, 1]) {
      const scope = `routed-${maxBatch}`;
      const store = createDedupStore({ tableName: table, scope, client, claims: { maxBatch } });
      const main = await store.claim("k", { delivery: "orders:0:5", payloadHash: "h" });
      if (main.status !== "claimed") throw new Error(`expected a claim, got ${main.status}`);
      await store.recordRoute?.(main.lease, "to retry.5s");
      expect((await getItem(scope, "k"))?.status?.S).toBe("ROUTED");
      // The redelivery of the routed record is recognised; the copy it was sent on as claims.
      expect(await store.claim("k", { delivery: "orders:0:5", payloadHash: "h" })).toEqual({
        status: "routed",
        route: "to retry.5s",
      });
      const copy = await store.claim("k", { delivery: "orders.retry.5s:0:0", payloadHash: "h" });
      if (copy.status !== "claimed") throw new Error(`expected the copy's claim, got ${copy.status}`);
      expect(copy.lease.attempt).toBe(2);
      // While the copy holds it, and after the copy was routed on in its turn, both are recognised.
      expect((await store.claim("k", { delivery: "orders:0:5", payloadHash: "h" })).status).toBe("routed");
      await store.recordRoute?.(copy.lease, "to DLQ");
      for (const delivery of ["orders:0:5", "orders.retry.5s:0:0"])
        expect(await store.claim("k", { delivery, payloadHash: "h" })).toEqual({
          status: "routed",
          route: "to DLQ",
        });
      // A copy replayed from the DLQ (new coordinates), or a claim with no delivery, processes it.
      await expect(
        store.claim("k", { delivery: "orders:0:99", payloadHash: "other" }),
      ).rejects.toBeInstanceOf(KeyReuseError);
      const replayed = await store.claim("k", { delivery: "orders:0:99", payloadHash: "h" });
      if (replayed.status !== "claimed")
        throw new Error(`expected the replay's claim, got ${replayed.status}`);
      await store.complete(replayed.lease);
      await store.flush();
      expect((await store.claim("k", { delivery: "orders:0:5" })).status).toBe("duplicate");
      // A route is fenced like a completion; without a delivery there is nothing to recognise: released.
      await expect(store.recordRoute?.(main.lease, "x")).rejects.toBeInstanceOf(LeaseLostError);
      const plain = await store.claim("plain");
      if (plain.status !== "claimed") throw new Error(`expected a claim, got ${plain.status}`);
      await store.recordRoute?.(plain.lease, "x");
      expect(await getItem(scope, "plain")).toBeUndefined();
    }
  });

  it("treats an item past its TTL that DynamoDB has not deleted yet as absent", async () => {
    const past = Math.floor(Date.now() / 1000) - 60;
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: dedupPk("s3", "old") }, status: { S: "COMPLETED" }, expiresAt: { N: String(past) } },
      }),
    );
    const store = createDedupStore({ tableName: table, scope: "s3", client });
    expect((await store.claim("old")).status).toBe("claimed");
  });

  it("rejects the same key with a different payload hash as key reuse", async () => {
    const store = createDedupStore({ tableName: table, scope: "s4", client });
    const first = await store.claim("k", { payloadHash: "aaa" });
    if (first.status !== "claimed") throw new Error("expected claim");
    await store.complete(first.lease);
    await store.flush();
    expect((await store.claim("k", { payloadHash: "aaa" })).status).toBe("duplicate");
    await expect(store.claim("k", { payloadHash: "bbb" })).rejects.toBeInstanceOf(KeyReuseError);
  });

  it("release lets a retry claim at once; renew extends the lease", async () => {
    const store = createDedupStore({ tableName: table, scope: "s5", client, leaseMs: 60_000 });
    const first = await store.claim("k");
    if (first.status !== "claimed") throw new Error("expected claim");
    const renewed = await store.renew(first.lease, 120_000);
    expect(renewed.expiresAtMs).toBeGreaterThan(first.lease.expiresAtMs);
    await store.release(renewed);
    expect((await store.claim("k")).status).toBe("claimed");
  });

  it("groups completions into one request per group, and fails only the member whose lease was lost", async () => {
    const counted = new DynamoDBClient({});
    const requests = countRequests(counted);
    let clock = Date.now();
    const store = createDedupStore({
      tableName: table,
      scope: "s6",
      client: counted,
      leaseMs: 1_000,
      now: () => clock,
      completion: { maxBatch: 25, maxDelayMs: 50 },
    });
    const leases = [];
    for (let i = 0; i < 10; i++) {
      const r = await store.claim(`k${i}`);
      if (r.status !== "claimed") throw new Error("expected claim");
      leases.push(r.lease);
    }
    // Someone else takes over k3 after its lease expired.
    clock += 2_000;
    const thief = await store.claim("k3");
    expect(thief.status).toBe("claimed");
    const before = requests.total;
    const batchesBefore = requests.byCommand.BatchExecuteStatementCommand ?? 0;
    const results = await Promise.allSettled(leases.map((l) => store.complete(l)));
    await store.flush();
    expect(results.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    // One BatchExecuteStatement: each fenced statement succeeds or fails on its own.
    expect(requests.total - before).toBe(1);
    expect(requests.byCommand.BatchExecuteStatementCommand! - batchesBefore).toBe(1);
    expect((await getItem("s6", "k9"))?.status?.S).toBe("COMPLETED");
    expect((await getItem("s6", "k3"))?.status?.S).toBe("IN_PROGRESS");
  });

  it("a burst of completions goes once it ends (idleMs), not when its group's longest wait runs out", async () => {
    const counted = new DynamoDBClient({});
    const requests = countRequests(counted);
    const store = createDedupStore({
      tableName: table,
      scope: "s-idle",
      client: counted,
      // Without the idle rule the group would wait 10 minutes for company: the test times out.
      completion: { maxBatch: 25, maxDelayMs: 600_000, idleMs: 5 },
    });
    const leases = [];
    for (const key of ["x", "y", "z"]) {
      const r = await store.claim(key);
      if (r.status !== "claimed") throw new Error("expected claim");
      leases.push(r.lease);
    }
    const before = requests.byCommand.BatchExecuteStatementCommand ?? 0;
    // No flush: only the idle rule sends the group.
    await Promise.all(leases.map((l) => store.complete(l)));
    expect(requests.byCommand.BatchExecuteStatementCommand! - before).toBe(1);
    expect((await getItem("s-idle", "z"))?.status?.S).toBe("COMPLETED");
  }, 30_000);

  it("coalesces concurrent claims of new keys into one request; a key known to exist is read, not written", async () => {
    const counted = new DynamoDBClient({});
    const requests = countRequests(counted);
    const store = createDedupStore({ tableName: table, scope: "s7", client: counted });
    const seed = await store.claim("known");
    if (seed.status !== "claimed") throw new Error("expected claim");
    await store.complete(seed.lease);
    await store.flush();
    const before = { ...requests.byCommand };
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) => store.claim(`new-${i}`)).concat(store.claim("known")),
    );
    expect(results.slice(0, 24).every((r) => r.status === "claimed")).toBe(true);
    expect(results[24]).toEqual({ status: "duplicate", result: undefined });
    // 25 claims: one BatchExecuteStatement of the 24 new keys, one strongly consistent read for the
    // key this store completed, and no write of it (a write could only fail).
    const delta = (c: string) => (requests.byCommand[c] ?? 0) - (before[c] ?? 0);
    expect(delta("BatchExecuteStatementCommand")).toBe(1);
    expect(delta("BatchGetItemCommand")).toBe(1);
    expect(delta("UpdateItemCommand")).toBe(0);
  });

  it("a duplicate this container never saw costs its failed INSERT and a read, not a second write", async () => {
    const counted = new DynamoDBClient({});
    const requests = countRequests(counted);
    const first = createDedupStore({ tableName: table, scope: "s8", client });
    const lease = await first.claim("k", { payloadHash: "h" });
    if (lease.status !== "claimed") throw new Error("expected claim");
    await first.complete(lease.lease, '"done"');
    await first.flush();
    // Another environment: its container has never seen the key.
    const other = createDedupStore({ tableName: table, scope: "s8", client: counted });
    expect(await other.claim("k", { payloadHash: "h" })).toEqual({ status: "duplicate", result: '"done"' });
    expect(requests.byCommand).toEqual({ BatchExecuteStatementCommand: 1, BatchGetItemCommand: 1 });
    await expect(other.claim("k", { payloadHash: "other" })).rejects.toBeInstanceOf(KeyReuseError);
    // An expired lease read this way is claimable: the conditional update takes it.
    let clock = Date.now();
    const leasing = createDedupStore({
      tableName: table,
      scope: "s8",
      client,
      leaseMs: 1_000,
      now: () => clock,
    });
    const stuck = await leasing.claim("stuck");
    if (stuck.status !== "claimed") throw new Error("expected claim");
    clock += 1_500;
    const later = createDedupStore({ tableName: table, scope: "s8", client: counted, now: () => clock });
    const taken = await later.claim("stuck");
    expect(taken.status).toBe("claimed");
    if (taken.status === "claimed") expect(taken.lease.attempt).toBe(2);
    counted.destroy();
  });
});
