import { KafkaJSNonRetriableError, KafkaJSProtocolError } from "kafkajs";
// kafkajs 2.2.4 warns TimeoutNegativeWarning on every connection without it (see the file).
import "../../../lib/kafka/kafkajsRequestQueueFix.ts";
import { describe, expect, it } from "vitest";
import { OUTBOX_STREAM_FILTER_PATTERN } from "../../../lib/outbox/schema.ts";
import {
  type ResolveContext,
  referencedIds,
  resolveValue,
  UnresolvableError,
} from "../../src/runtime/intrinsics.ts";
import { rateMs } from "../../src/runtime/materialise.ts";
import { runStreamBatch, type StreamSource } from "../../src/services/dynamodb/streamMapping.ts";
import { groupError } from "../../src/services/kafka/groupMember.ts";
import { matchesAnyFilter } from "../../src/services/lambda/eventFilter.ts";
import type { DiscardCondition } from "../../src/services/lambda/failureDestination.ts";
import { withoutTsxHooks } from "../../src/services/lambda/functionHost.ts";
import { newStats } from "../../src/services/sqs/eventSource.ts";

const ctx: ResolveContext = {
  region: "us-east-1",
  accountId: "000000000000",
  stackName: "S",
  ref: (id) => {
    if (id === "Queue") return "http://sqs/q";
    throw new UnresolvableError(`unknown ${id}`);
  },
  getAtt: (id, attr) => `${id}.${attr}`,
  condition: (name) => name === "IsProd",
  mappings: { Sizes: { prod: { mem: 1024 } } },
};

describe("intrinsics", () => {
  it("resolves Ref, GetAtt, Join, Sub, Select, Split, If and pseudo parameters", () => {
    expect(resolveValue({ Ref: "Queue" }, ctx)).toBe("http://sqs/q");
    expect(resolveValue({ Ref: "AWS::Region" }, ctx)).toBe("us-east-1");
    expect(resolveValue({ "Fn::GetAtt": ["Table", "StreamArn"] }, ctx)).toBe("Table.StreamArn");
    expect(resolveValue({ "Fn::GetAtt": "Table.Arn" }, ctx)).toBe("Table.Arn");
    expect(resolveValue({ "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":x"]] }, ctx)).toBe(
      "arn:aws:x",
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation Fn::Sub syntax
    expect(resolveValue({ "Fn::Sub": "${AWS::AccountId}-${Queue}-${Table.Arn}-${!Literal}" }, ctx)).toBe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation Fn::Sub syntax
      "000000000000-http://sqs/q-Table.Arn-${Literal}",
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation Fn::Sub syntax
    expect(resolveValue({ "Fn::Sub": ["${A}/${Queue}", { A: { Ref: "AWS::StackName" } }] }, ctx)).toBe(
      "S/http://sqs/q",
    );
    expect(resolveValue({ "Fn::Select": [1, { "Fn::Split": [",", "a,b,c"] }] }, ctx)).toBe("b");
    expect(resolveValue({ "Fn::If": ["IsProd", "p", "d"] }, ctx)).toBe("p");
    expect(resolveValue({ "Fn::FindInMap": ["Sizes", "prod", "mem"] }, ctx)).toBe(1024);
    expect(resolveValue({ a: { Ref: "AWS::NoValue" }, b: [1, { Ref: "AWS::NoValue" }] }, ctx)).toEqual({
      b: [1],
    });
  });

  it("names what it cannot resolve instead of guessing", () => {
    expect(() => resolveValue({ x: { "Fn::ImportValue": "Shared" } }, ctx)).toThrow(
      /\$\.x: Fn::ImportValue is not supported/,
    );
    expect(() => resolveValue({ Ref: "Missing" }, ctx)).toThrow(UnresolvableError);
  });

  it("finds the resources a value depends on", () => {
    expect(
      [
        ...referencedIds({
          a: { Ref: "Q" },
          // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation Fn::Sub syntax
          b: { "Fn::Sub": "${T.Arn}/${AWS::Region}" },
          c: { "Fn::GetAtt": ["F", "Arn"] },
        }),
      ].sort(),
    ).toEqual(["F", "Q", "T"]);
  });
});

describe("event filters", () => {
  const record = (pk: string, eventName = "INSERT", pending?: string) => ({
    eventName,
    dynamodb: {
      Keys: { pk: { S: pk } },
      NewImage: { pk: { S: pk }, ...(pending ? { pending: { S: pending } } : {}) },
    },
  });

  it("evaluates the outbox relay's pattern (CDK FilterCriteria: equals, prefix, exists)", () => {
    const p = [OUTBOX_STREAM_FILTER_PATTERN];
    expect(matchesAnyFilter(p, record("OUTBOX#order#1", "INSERT", "3"))).toBe(true);
    expect(matchesAnyFilter(p, record("OUTBOX#order#1", "MODIFY", "3"))).toBe(false);
    expect(matchesAnyFilter(p, record("OUTBOX#order#1", "INSERT"))).toBe(false);
    expect(matchesAnyFilter(p, record("ORDER#1", "INSERT", "3"))).toBe(false);
  });

  it("supports OR across filters, numeric, anything-but, suffix, equals-ignore-case and exists:false", () => {
    const filters = [
      { body: { amount: [{ numeric: [">", 10, "<=", 20] }] } },
      { body: { kind: [{ "anything-but": ["x"] }], id: [{ exists: false }] } },
    ];
    expect(matchesAnyFilter(filters, { body: { amount: 15 } })).toBe(true);
    expect(matchesAnyFilter(filters, { body: { amount: 25, kind: "x" } })).toBe(false);
    expect(matchesAnyFilter(filters, { body: { amount: 25, kind: "y" } })).toBe(true);
    expect(matchesAnyFilter(filters, { body: { amount: 25, kind: "y", id: "1" } })).toBe(false);
    expect(matchesAnyFilter([{ a: [{ suffix: ".png" }] }], { a: "x.png" })).toBe(true);
    expect(matchesAnyFilter([{ a: [{ "equals-ignore-case": "ABC" }] }], { a: "abc" })).toBe(true);
    expect(matchesAnyFilter([], { anything: true })).toBe(true);
  });
});

describe("schedules", () => {
  it("reads rate() expressions and refuses cron()", () => {
    expect(rateMs("rate(1 minute)")).toBe(60_000);
    expect(rateMs("rate(2 hours)")).toBe(7_200_000);
    expect(() => rateMs("cron(0 12 * * ? *)")).toThrow(/not emulated/);
  });
});

describe("Kafka group errors", () => {
  // As kafkajs builds them: a protocol error from the broker's code, wrapped by its retrier.
  const protocolError = (type: string) =>
    new KafkaJSProtocolError(Object.assign(new Error(type), { type, code: 0, retriable: false }));
  const wrapped = (e: Error) =>
    new (KafkaJSNonRetriableError as unknown as new (e: Error, m: { cause: Error }) => Error)(e, {
      cause: e,
    });

  it("finds the rebalance answer inside kafkajs' non-retriable wrapper, so the member can rejoin in place", () => {
    const refused = protocolError("REBALANCE_IN_PROGRESS");
    const thrown = wrapped(refused);
    expect((thrown as { type?: string }).type).toBeUndefined();
    expect(groupError(thrown)).toBe(refused);
    expect(groupError(wrapped(protocolError("UNKNOWN_MEMBER_ID")))).toBeDefined();
    expect(groupError(protocolError("ILLEGAL_GENERATION"))).toBeDefined();
  });

  it("leaves other errors alone", () => {
    expect(groupError(wrapped(protocolError("OFFSET_METADATA_TOO_LARGE")))).toBeUndefined();
    expect(groupError(new Error("socket hang up"))).toBeUndefined();
    expect(groupError(undefined)).toBeUndefined();
  });
});

describe("stream mapping rules (issue 26 item 7: by count, or by a clock the test controls)", () => {
  /** A plain stream source: records `{ id, at }`, a function that fails while `failing`, the mapping's clock. */
  function plainSource(options: {
    maxAge: number;
    retries: number;
    now: () => number;
    failing: () => boolean;
  }) {
    const invoked: string[][] = [];
    const discarded: { ids: string[]; condition: DiscardCondition }[] = [];
    const source: StreamSource<{ id: string; at: number }> = {
      mapping: {
        bisectBatchOnFunctionError: false,
        maximumRetryAttempts: options.retries,
        maximumRecordAgeSeconds: options.maxAge,
        startingPosition: "TRIM_HORIZON",
        reportBatchItemFailures: true,
      },
      stats: newStats(),
      ageSeconds: (r, nowMs) => (nowMs - r.at) / 1000,
      now: options.now,
      async invoke(records) {
        invoked.push(records.map((r) => r.id));
        return options.failing()
          ? {
              ok: false,
              requestId: "r",
              kind: "Unhandled",
              errorType: "Error",
              errorMessage: "x",
              durationMs: 1,
            }
          : { ok: true, requestId: "r", value: { batchItemFailures: [] }, durationMs: 1 };
      },
      failedIndex: () => -1,
      async discard(records, condition) {
        discarded.push({ ids: records.map((r) => r.id), condition });
        return true;
      },
      stopped: () => false,
      pause: async () => undefined,
    };
    return { source, invoked, discarded };
  }

  it("a record past MaximumRecordAgeInSeconds on the mapping's clock leaves before the next invocation", async () => {
    let now = 1_000_000;
    const { source, invoked, discarded } = plainSource({
      maxAge: 60,
      retries: -1,
      now: () => now,
      // The function fails until the clock has moved past the first record's age; each failed
      // invocation moves the clock 40 s (the test's clock: no waiting).
      failing: () => {
        now += 40_000;
        return true;
      },
    });
    await runStreamBatch(
      [
        { id: "old", at: now - 30_000 },
        { id: "new", at: now },
      ],
      source,
    );
    // 1st invocation at age 30/0; then 70/40: "old" leaves; then 80 for "new": it leaves too.
    expect(invoked).toEqual([["old", "new"], ["new"]]);
    expect(discarded).toEqual([
      { ids: ["old"], condition: "RecordAgeExceeded" },
      { ids: ["new"], condition: "RecordAgeExceeded" },
    ]);
  });

  it("without a record age limit the mapping gives up after MaximumRetryAttempts retries, whatever the clock says", async () => {
    const { source, invoked, discarded } = plainSource({
      maxAge: -1,
      retries: 1,
      now: () => Number.MAX_SAFE_INTEGER,
      failing: () => true,
    });
    await runStreamBatch([{ id: "a", at: 0 }], source);
    expect(invoked).toEqual([["a"], ["a"]]);
    expect(discarded).toEqual([{ ids: ["a"], condition: "RetryAttemptsExhausted" }]);
    expect(source.stats.failed).toBe(1);
  });
});

describe("function environments' Node flags", () => {
  it("drop tsx's loader hooks in either spelling and keep every other flag", () => {
    const tsx = "/w/node_modules/tsx/dist";
    expect(
      withoutTsxHooks([
        "--require",
        `${tsx}/preflight.cjs`,
        `--import=file://${tsx}/loader.mjs`,
        "--import",
        "file:///w/instrument.mjs",
        "--enable-source-maps",
        "--conditions=reliable-consumers-source",
      ]),
    ).toEqual([
      "--import",
      "file:///w/instrument.mjs",
      "--enable-source-maps",
      "--conditions=reliable-consumers-source",
    ]);
    expect(withoutTsxHooks([])).toEqual([]);
  });
});
