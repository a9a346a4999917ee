import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bodyView, contextView } from "../../src/console/bodyView.ts";
import { checkRequest, newConsoleToken } from "../../src/console/consoleGuard.ts";
import { type TraceFacts, traceSteps } from "../../src/console/messageTrace.ts";
import { rungOf } from "../../src/services/kafka/consoleKafka.ts";
import { FunctionMetrics, quantile } from "../../src/services/lambda/functionMetrics.ts";
import { failedItems, type InvocationEntry, recordRefs } from "../../src/services/lambda/invocationTrail.ts";
import { parseLogLine } from "../../src/services/lambda/logLine.ts";

const token = newConsoleToken();
const port = 4321;
const req = (url: string, headers: Record<string, string> = {}, method = "GET") => ({
  method,
  url,
  headers: { host: `127.0.0.1:${port}`, ...headers },
});

describe("console guard: Host, token, actions", () => {
  it("lets the page, its assets and the API through with the token, on either local name", () => {
    expect(checkRequest(req(`/?token=${token}`), { token, port })).toMatchObject({ ok: true, path: "/" });
    expect(checkRequest(req("/api/queues", { "x-console-token": token }), { token, port }).ok).toBe(true);
    expect(checkRequest(req(`/?token=${token}`, { host: `localhost:${port}` }), { token, port }).ok).toBe(
      true,
    );
  });

  it("refuses a foreign Host first (DNS rebinding), even with the token", () => {
    for (const host of ["evil.example", `evil.example:${port}`, `127.0.0.1:${port + 1}`, "127.0.0.1", ""])
      expect(checkRequest(req(`/?token=${token}`, { host }), { token, port })).toMatchObject({
        ok: false,
        status: 403,
      });
  });

  it("refuses a request without the token, or with another one", () => {
    expect(checkRequest(req("/"), { token, port })).toMatchObject({ ok: false, status: 403 });
    expect(checkRequest(req("/assets/console.js"), { token, port })).toMatchObject({
      ok: false,
      status: 403,
    });
    expect(checkRequest(req(`/?token=${newConsoleToken()}`), { token, port })).toMatchObject({
      ok: false,
      status: 403,
    });
    expect(checkRequest(req(`/?token=${token}x`), { token, port })).toMatchObject({ ok: false, status: 403 });
  });

  it("takes an action only as a POST with the token in its header, a JSON body, from its own origin", () => {
    const json = { "content-type": "application/json", "x-console-token": token };
    const path = "/api/actions/redrive";
    expect(checkRequest(req(path, json, "POST"), { token, port }).ok).toBe(true);
    expect(
      checkRequest(req(path, { ...json, origin: `http://127.0.0.1:${port}` }, "POST"), { token, port }).ok,
    ).toBe(true);
    expect(checkRequest(req(`${path}?token=${token}`, json, "GET"), { token, port })).toMatchObject({
      status: 405,
    });
    // The token in the URL is not enough for an action (a link or an image of another page could carry it).
    expect(
      checkRequest(req(`${path}?token=${token}`, { "content-type": "application/json" }, "POST"), {
        token,
        port,
      }),
    ).toMatchObject({ status: 403 });
    expect(
      checkRequest(req(path, { ...json, origin: "http://evil.example" }, "POST"), { token, port }),
    ).toMatchObject({ status: 403 });
    expect(
      checkRequest(req(path, { ...json, "content-type": "text/plain" }, "POST"), { token, port }),
    ).toMatchObject({ status: 415 });
    expect(checkRequest(req("/api/queues", json, "POST"), { token, port })).toMatchObject({ status: 405 });
  });
});

describe("console: log lines, metrics", () => {
  it("reads the platform lines, the logger's JSON lines and EMF lines", () => {
    expect(
      parseLogLine("REPORT RequestId: r1\tDuration: 12.50 ms\tMemory Size: 256 MB\tInit Duration: 300.00 ms"),
    ).toMatchObject({
      level: "PLATFORM",
      requestId: "r1",
      report: { durationMs: 12.5, initMs: 300 },
    });
    expect(parseLogLine("START RequestId: r2 Version: $LATEST")).toMatchObject({
      level: "PLATFORM",
      requestId: "r2",
    });
    expect(
      parseLogLine('2026-01-01T00:00:00.000Z\tr3\tERROR\tInvoke Error\t{"errorType":"Error"}'),
    ).toMatchObject({
      level: "ERROR",
      requestId: "r3",
      invocationError: true,
    });
    expect(parseLogLine("2026-01-01T00:00:00.000Z r4 Task timed out after 3 seconds")).toMatchObject({
      timedOut: true,
      requestId: "r4",
    });
    expect(parseLogLine('{"level":"WARN","message":"record parked in the dead-letter queue"}').level).toBe(
      "WARN",
    );
    const emf = parseLogLine(
      JSON.stringify({
        _aws: {
          Timestamp: 1,
          CloudWatchMetrics: [
            {
              Namespace: "N",
              Dimensions: [["service"]],
              Metrics: [{ Name: "Processed" }, { Name: "DuplicatesSuppressed" }],
            },
          ],
        },
        service: "s",
        Processed: [2, 3],
        DuplicatesSuppressed: 1,
      }),
    );
    expect(emf).toMatchObject({ level: "METRICS", metrics: { Processed: 5, DuplicatesSuppressed: 1 } });
    expect(parseLogLine("hello from console.log").level).toBe("TEXT");
  });

  it("counts invocations, errors, durations and outcomes per bucket, empty buckets filled", () => {
    const m = new FunctionMetrics("f", { bucketMs: 1000, keep: 10 });
    m.add(parseLogLine("REPORT RequestId: a\tDuration: 10.00 ms\tMemory Size: 1 MB"), 1000);
    m.add(parseLogLine("REPORT RequestId: b\tDuration: 30.00 ms\tMemory Size: 1 MB"), 1500);
    m.add(parseLogLine("2026-01-01T00:00:00.000Z c Task timed out after 3 seconds"), 3200);
    m.add(
      parseLogLine(
        JSON.stringify({
          _aws: {
            CloudWatchMetrics: [
              {
                Metrics: [
                  { Name: "Processed" },
                  { Name: "PermanentFailuresParked" },
                  { Name: "InProgressElsewhere" },
                ],
              },
            ],
          },
          Processed: 4,
          PermanentFailuresParked: 1,
          InProgressElsewhere: 2,
        }),
      ),
      3300,
    );
    const s = m.series(3900);
    expect(s.at).toEqual([1000, 2000, 3000]);
    expect(s.invocations).toEqual([2, 0, 1]);
    expect(s.errors).toEqual([0, 0, 1]);
    expect(s.p50Ms).toEqual([10, null, null]);
    expect(s.p99Ms).toEqual([30, null, null]);
    expect(s.outcomes.succeeded).toEqual([0, 0, 4]);
    expect(s.outcomes.parked).toEqual([0, 0, 1]);
    expect(s.outcomes.heldElsewhere).toEqual([0, 0, 2]);
    expect(m.totals()).toMatchObject({ invocations: 3, errors: 1, p50Ms: 10, p99Ms: 30 });
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
  });
});

describe("console: bodies and context are text", () => {
  it("shows JSON pretty-printed, text as it is, bytes as hex, and markup as the characters it is", () => {
    expect(bodyView('{"a":1}')).toMatchObject({ kind: "json", text: '{\n  "a": 1\n}' });
    expect(bodyView("<img src=x onerror=alert(1)>")).toMatchObject({
      kind: "text",
      text: "<img src=x onerror=alert(1)>",
    });
    expect(bodyView(Uint8Array.from([0xff, 0x00, 0x41]))).toMatchObject({
      kind: "hex",
      text: "ff 00 41",
      bytes: 3,
    });
    expect(bodyView("a\u0001b").kind).toBe("hex");
    expect(
      contextView({ "x-last-error": "InvalidJsonError: bad", "x-retry-count": "2", "x-other": "o" }),
    ).toEqual({
      lastError: "InvalidJsonError: bad",
      retryCount: "2",
      all: { "x-last-error": "InvalidJsonError: bad", "x-retry-count": "2", "x-other": "o" },
    });
  });

  it("the page never parses a string as markup", () => {
    const src = join(import.meta.dirname, "..", "..", "src");
    const dir = join(src, "console", "page");
    const services = join(src, "services");
    const serviceViews = readdirSync(services)
      .filter((s) => existsSync(join(services, s, "page")))
      .flatMap((s) => readdirSync(join(services, s, "page")).map((f) => `../../services/${s}/page/${f}`));
    const files = [
      ...readdirSync(dir),
      ...readdirSync(join(dir, "views")).map((f) => `views/${f}`),
      ...serviceViews,
    ].filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(8);
    for (const f of files) {
      const text = readFileSync(join(dir, f), "utf8");
      expect(text, f).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|srcdoc/,
      );
    }
  });
});

describe("console: the trace of one message", () => {
  const sqsEvent = (messageId: string, body: string, attributes: Record<string, string> = {}) => ({
    Records: [
      {
        eventSource: "aws:sqs",
        messageId,
        body,
        eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders",
        messageAttributes: Object.fromEntries(
          Object.entries(attributes).map(([k, v]) => [k, { stringValue: v }]),
        ),
      },
    ],
  });

  it("reads the records of SQS, MSK and stream events, and the items a partial response failed", () => {
    expect(recordRefs(sqsEvent("m1", '{"orderId":"o-1","n":2}', { "message-id": "p-1" }))).toEqual([
      { source: "sqs", where: "orders", item: "m1", ids: ["m1", "p-1"], keys: ["o-1", "2"] },
    ]);
    const kafka = recordRefs({
      eventSource: "aws:kafka",
      records: {
        "payments-0": [
          {
            topic: "payments",
            partition: 0,
            offset: 7,
            value: Buffer.from('{"id":"x"}').toString("base64"),
            headers: [{ "message-id": [...Buffer.from("e-1")] }],
          },
        ],
      },
    });
    expect(kafka[0]).toMatchObject({
      source: "kafka",
      item: "payments-0:7",
      ids: ["payments:0:7", "e-1"],
      keys: ["x"],
    });
    expect(
      failedItems({
        ok: true,
        requestId: "r",
        durationMs: 1,
        value: {
          batchItemFailures: [
            { itemIdentifier: "m1" },
            { itemIdentifier: { partition: "payments-0", offset: 7 } },
          ],
        },
      }),
    ).toEqual(["m1", "payments-0:7"]);
  });

  it("follows a message through its handler, its DLQ copy, a replayed copy, its dedup record and its outbox event downstream", () => {
    const inv = (
      fn: string,
      at: number,
      event: unknown,
      failed: string[] = [],
      ok = true,
    ): InvocationEntry => ({
      fn,
      requestId: `${fn}-${at}`,
      at,
      durationMs: 5,
      ok,
      records: recordRefs(event),
      failed,
    });
    const replayed = sqsEvent("m2", '{"orderId":"o-1"}', {
      "x-failure-context": JSON.stringify({ "x-message-id": "m1", "x-last-error": "E: x" }),
    });
    const downstream = {
      eventSource: "aws:kafka",
      records: {
        "events-0": [
          { topic: "events", partition: 0, offset: 1, headers: [{ "message-id": [...Buffer.from("ev-1")] }] },
        ],
      },
    };
    const facts: TraceFacts = {
      invocations: [
        inv("consumer", 100, sqsEvent("m1", '{"orderId":"o-1"}'), ["m1"]),
        inv("consumer", 300, replayed),
        inv("payments", 500, downstream),
        inv("consumer", 600, sqsEvent("other", '{"orderId":"o-2"}')),
      ],
      logs: [
        {
          seq: 1,
          at: 150,
          fn: "consumer",
          level: "WARN",
          text: '{"level":"WARN","message":"record parked in the dead-letter queue","messageId":"m1"}',
        },
      ],
      queued: [],
      outbox: [
        {
          table: "app",
          pk: "OUTBOX#Order#o-1",
          sk: "EVENT#ev-1",
          eventId: "ev-1",
          eventType: "OrderPlaced",
          aggregate: "Order/o-1",
          destination: "kafka:events",
          createdAt: 310,
          state: "published",
          causationId: "o-1",
          publishedAt: 400,
        },
      ],
      dedup: [
        {
          table: "dedup",
          scope: "consumer",
          key: "o-1",
          record: { pk: "consumer#o-1", status: "COMPLETED", attempts: 1, hasResult: false },
        },
      ],
    };
    const { related, steps } = traceSteps("m1", facts);
    expect(related).toEqual(expect.arrayContaining(["m1", "m2", "ev-1", "events:0:1"]));
    expect(related).not.toContain("other");
    expect(steps.map((s) => `${s.kind}@${s.where}`)).toEqual([
      "received@sqs orders",
      "claimed@dedup",
      "handler@consumer",
      "parked@consumer",
      "replayed@orders",
      "received@sqs orders",
      "handler@consumer",
      "outbox@app",
      "published@kafka:events",
      "consumed@kafka events",
      "handler@payments",
    ]);
    expect(steps[2]!.detail).toContain("reported failed");
  });
});

describe("console: Kafka rungs", () => {
  it("places a topic in its retry ladder", () => {
    expect(rungOf("orders")).toEqual({ base: "orders", rung: "main" });
    expect(rungOf("orders.retry.5s")).toEqual({ base: "orders", rung: "retry.5s" });
    expect(rungOf("orders.DLQ")).toEqual({ base: "orders", rung: "DLQ" });
  });
});
