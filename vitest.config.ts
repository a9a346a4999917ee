import { defineConfig } from "vitest/config";

/**
 * The end-to-end runs (the chaos scenarios and `npm run local`) each start dozens of function
 * environments and saturate both cores; beside other files they starve each other past their
 * timeouts. So they run in a second group, one file at a time, after everything else.
 */
const HEAVY = [
  "test/chaos/scenarios.test.ts",
  "test/integration/localRuntimeMain.test.ts",
  // packs, installs, synthesizes and runs the example app: minutes of CPU.
  "test/package/consumerApp.test.ts",
  // the same, with the local console in Chromium.
  "local/test/package/consoleBrowser.test.ts",
  // builds the documentation site (TypeDoc over both packages: a minute or more) and opens every
  // page in Chromium.
  "test/docs/siteBrowser.test.ts",
];

/**
 * The SQS-side integration tests, run a second time with SQS on LocalStack's own runtime
 * (localstack-core from PyPI, started by the global setup; test/support/sqsSubstrate.ts). DynamoDB
 * Local and Kafka stay shared with the first run.
 */
const SQS_SIDE = [
  "test/integration/smoke-sqs.test.ts",
  "test/integration/sqsSemantics.test.ts",
  "test/integration/sqsConsumer.test.ts",
  "test/integration/sqsHeartbeat.test.ts",
  "test/integration/dlqTooling.test.ts",
  "test/integration/consumerFixes.test.ts",
  "test/integration/concurrentInvocations.test.ts",
  "test/integration/examples.test.ts",
  // the stream consumers park in SQS
  "test/integration/kinesisConsumer.test.ts",
  "test/integration/dynamodbStreamConsumer.test.ts",
  "test/integration/outbox.test.ts",
  "test/integration/outboxSweeper.test.ts",
  "test/integration/outboxOrder.test.ts",
  "local/test/integration/localRuntime.test.ts",
];

/**
 * Code and tests import the package by its own name (`reliable-consumers/sqs`); this condition
 * resolves those imports to the TypeScript sources in lib/ (package.json `exports`), so tests run
 * the current code with no build step. tsconfig.json (`customConditions`) and the tsx scripts
 * (`NODE_OPTIONS=--conditions=...`) use the same condition; the built dist/ is tested from the
 * packed tarball (test/package).
 */
export const SOURCE_CONDITION = "reliable-consumers-source";

export default defineConfig({
  // Not Vite's default server conditions: their "module" picks the AWS SDK's bundler-only dist-es.
  ssr: { resolve: { conditions: [SOURCE_CONDITION, "node"] } },
  // The environment Vitest loads its global setup in (test/support/globalSetup.ts) resolves the same.
  environments: { __vitest__: { resolve: { conditions: [SOURCE_CONDITION, "node"] } } },
  test: {
    // Child processes of the tests (a synth of infra/app.ts, tsx scripts) resolve the package's own
    // name to lib/ too.
    env: { NODE_OPTIONS: `--conditions=${SOURCE_CONDITION}` },
    globalSetup: ["test/support/globalSetup.ts"],
    setupFiles: ["test/support/applyEmulatorEnv.ts"],
    pool: "forks",
    // Two cores: more workers only queue on the emulators.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: ["test/**/*.test.ts", "local/test/**/*.test.ts"],
          exclude: HEAVY,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "sqs-localstack",
          include: SQS_SIDE,
          provide: { sqsSubstrate: "localstack" },
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "end-to-end",
          include: HEAVY,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
