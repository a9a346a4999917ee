import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../lib/cdk/functionDefaults.ts";
import { declareTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

// Issue 14 item 18: the kafkajs TimeoutNegativeWarning must be gone from a user's Lambda bundle, not
// only from this repository's install. Both programs below are bundled the way ConsumerFunction
// bundles a handler (esbuild, ESM, node target) and run in a fresh Node >= 23 against the local Kafka;
// the control uses kafkajs directly and must still print the warning, so the check can fail.

const run = promisify(execFile);
const name = names(import.meta.url);
const dir = mkdtempSync(join(tmpdir(), "kafkajs-warning-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function bundleAndRun(label: string, source: string): Promise<string> {
  const entry = join(dir, `${label}.ts`);
  writeFileSync(entry, source);
  const outfile = join(dir, `${label}.mjs`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    // As NodejsFunction does for ESM: give bundled CommonJS (kafkajs) a require.
    banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
    nodePaths: [join(PROJECT_ROOT, "node_modules")],
    logLevel: "silent",
  });
  const { stderr } = await run(process.execPath, [outfile], { env: { ...process.env }, timeout: 60_000 });
  return stderr;
}

const produceOnce = (topic: string, viaLibrary: boolean) => `
${
  viaLibrary
    ? `import { createKafkaProducer } from ${JSON.stringify(join(PROJECT_ROOT, "lib/kafka/producer.ts"))};
const producer = createKafkaProducer();
await producer.send(${JSON.stringify(topic)}, [{ key: "k", value: "v" }]);
await new Promise((r) => setTimeout(r, 200));
await producer.disconnect();`
    : `import { Kafka, logLevel } from "kafkajs";
const producer = new Kafka({ brokers: process.env.KAFKA_BROKERS.split(","), logLevel: logLevel.NOTHING }).producer();
await producer.connect();
await producer.send({ topic: ${JSON.stringify(topic)}, messages: [{ key: "k", value: "v" }] });
await new Promise((r) => setTimeout(r, 200));
await producer.disconnect();`
}
`;

describe("kafkajs TimeoutNegativeWarning in a bundled handler", () => {
  it("is printed by plain kafkajs 2.2.4 and not by the library's producer", {
    timeout: 180_000,
  }, async () => {
    expect(
      Number(process.versions.node.split(".")[0]),
      "needs Node >= 23 (npm ci installs node 24)",
    ).toBeGreaterThanOrEqual(23);
    // A real broker creates no topic on first use (MSK's default).
    await declareTopics([name("plain"), name("library")]);
    const control = await bundleAndRun("plain", produceOnce(name("plain"), false));
    expect(control).toMatch(/TimeoutNegativeWarning/);
    const ours = await bundleAndRun("library", produceOnce(name("library"), true));
    expect(ours).not.toMatch(/TimeoutNegativeWarning/);
  });
});
