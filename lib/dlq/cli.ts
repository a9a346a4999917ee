/**
 * `npm run dlq -- <command> [options]`: inspect, replay and redrive dead letters.
 *
 *   inspect  --topic <topic>.DLQ | --queue <dlq-url>        what sits there, grouped by error type
 *   replay   --topic <topic>.DLQ [--to-topic t] [--ledger-table t | --no-ledger] [--limit n]
 *   redrive  --queue <dlq-url> [--to <queue-url>] [--no-move-task] [--limit n]
 *
 *   filters (all commands): --error-type <Type> (repeatable) --since <ISO time> --until <ISO time>
 *                           --id <id> (repeatable: an SQS MessageId, a Kafka <partition>:<offset>)
 *   moves:                  --dry-run   count what would move, move nothing
 *
 * Connection settings come from the environment, like the functions: KAFKA_BROKERS, MSK_IAM_AUTH,
 * AWS_REGION, AWS_ENDPOINT_URL_SQS, DEDUP_TABLE_NAME. The result is printed as JSON on stdout;
 * progress goes to stderr.
 */
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { LAMBDA_ENV } from "../env.ts";
import { disconnectAllKafkaProducers } from "../kafka/producer.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import type { DeadLetterFilter } from "./filters.ts";
import { inspectKafkaDeadLetters, replayKafkaDeadLetters } from "./kafkaDeadLetters.ts";
import { progressBar } from "./progressBar.ts";
import { inspectSqsDeadLetters, redriveSqsDeadLetters } from "./sqsDeadLetters.ts";

const USAGE = `usage: npm run dlq -- <inspect|replay|redrive> [options]
  inspect  --topic <topic>.DLQ | --queue <dlq-url>
  replay   --topic <topic>.DLQ [--to-topic <topic>] [--ledger-table <table> | --no-ledger] [--limit <n>] [--dry-run]
  redrive  --queue <dlq-url> [--to <queue-url>] [--no-move-task] [--limit <n>] [--dry-run]
  filters: --error-type <Type> (repeatable)  --since <ISO time>  --until <ISO time>
           --id <SQS MessageId | Kafka partition:offset> (repeatable)`;

function time(value: string | undefined, flag: string): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new Error(`${flag}: '${value}' is not a date/time`);
  return d;
}

/** The command line, parsed (node:util parseArgs). */
function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      topic: { type: "string" },
      queue: { type: "string" },
      to: { type: "string" },
      "to-topic": { type: "string" },
      "error-type": { type: "string", multiple: true },
      id: { type: "string", multiple: true },
      since: { type: "string" },
      until: { type: "string" },
      limit: { type: "string" },
      "dry-run": { type: "boolean", default: false },
      "ledger-table": { type: "string" },
      "no-ledger": { type: "boolean", default: false },
      "no-move-task": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
}

/** `--error-type`, `--since`, `--until` as a filter. */
function filterOf(values: ReturnType<typeof parse>["values"]): DeadLetterFilter {
  const since = time(values.since, "--since");
  const until = time(values.until, "--until");
  return {
    ...(values["error-type"]?.length ? { errorTypes: values["error-type"] } : {}),
    ...(values.id?.length ? { ids: values.id } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
  };
}

/** The replay ledger the options name: a table, none (`--no-ledger`), or an error that says how to give one. */
function ledgerOf(values: ReturnType<typeof parse>["values"]) {
  if (values["no-ledger"]) return false as const;
  const ledgerTable = values["ledger-table"] ?? process.env[LAMBDA_ENV.dedupTableName];
  if (!ledgerTable)
    throw new Error("replay needs a ledger table (--ledger-table or DEDUP_TABLE_NAME), or --no-ledger");
  return { tableName: ledgerTable, client: new DynamoDBClient({}) };
}

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  const command = positionals[0];
  if (values.help || !command) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const filter = filterOf(values);
  const limit = values.limit !== undefined ? Number(values.limit) : undefined;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new Error("--limit must be ≥ 1");
  const dryRun = values["dry-run"];
  const print = (result: unknown) => console.log(JSON.stringify(result, null, 2));

  switch (command) {
    case "inspect": {
      if (values.topic) print(await inspectKafkaDeadLetters(values.topic, { filter }));
      else if (values.queue) print(await inspectSqsDeadLetters(createSqsClient(), values.queue, { filter }));
      else throw new Error("inspect needs --topic or --queue");
      return 0;
    }
    case "replay": {
      if (!values.topic) throw new Error("replay needs --topic <topic>.DLQ");
      const bar = progressBar(dryRun ? `replay (dry run) ${values.topic}` : `replay ${values.topic}`);
      const result = await replayKafkaDeadLetters(values.topic, {
        filter,
        dryRun,
        ...(values["to-topic"] ? { toTopic: values["to-topic"] } : {}),
        ...(limit ? { limit } : {}),
        ledger: ledgerOf(values),
        onProgress: bar.update,
      });
      bar.done(result);
      print(result);
      return result.failed > 0 ? 1 : 0;
    }
    case "redrive": {
      if (!values.queue) throw new Error("redrive needs --queue <dlq-url>");
      const bar = progressBar(dryRun ? `redrive (dry run) ${values.queue}` : `redrive ${values.queue}`);
      const result = await redriveSqsDeadLetters(createSqsClient(), values.queue, {
        filter,
        dryRun,
        ...(values.to ? { toQueueUrl: values.to } : {}),
        ...(limit ? { maxMessages: limit } : {}),
        useMoveTask: !values["no-move-task"],
        onProgress: bar.update,
      });
      bar.done(result);
      print(result);
      return result.failed > 0 ? 1 : 0;
    }
    default:
      console.error(`unknown command '${command}'\n${USAGE}`);
      return 2;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2))
    .then(async (code) => {
      await disconnectAllKafkaProducers();
      process.exit(code);
    })
    .catch(async (error: unknown) => {
      console.error(`dlq: ${(error as Error).message}`);
      await disconnectAllKafkaProducers();
      process.exit(1);
    });
}
