/**
 * The enforcing gateway's cost (issue 21): the SQS idempotency workload of `sqsIdempotency.ts`
 * through our consumer, its DynamoDB client once straight to DynamoDB Local and once through the
 * local runtime's gateway as a function whose role has the dedup table's grants (every request
 * parsed, authorized by iam-simulate, forwarded). Rounds alternate the two; the ratio is the median
 * of the paired rounds' ratios (off ÷ on: 1.00 means free).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createSqsClient } from "reliable-consumers/sqs";
import { DEDUP_TABLE_ACTIONS } from "../lib/dedup/schema.ts";
import { startAwsGateway } from "../local/src/enforcement/awsGateway.ts";
import { createDenialLog } from "../local/src/enforcement/denials.ts";
import { createDedupTable } from "../local/src/services/dynamodb/dedupTable.ts";
import {
  type AccessModel,
  type FunctionPrincipal,
  localCredentials,
} from "../local/src/services/iam/accessModel.ts";
import { createIamEvaluator } from "../local/src/services/iam/iamEvaluator.ts";
import {
  benchQueueArn,
  DEFAULT_SQS_BENCH,
  ourSide,
  runSide,
  type SqsBenchOptions,
} from "./sqsIdempotency.ts";

const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;

export async function runGatewayOverheadBench(o: SqsBenchOptions = { ...DEFAULT_SQS_BENCH, rounds: 4 }) {
  const sqs = createSqsClient();
  const arn = await benchQueueArn(sqs, "bench-gateway");
  const principal: FunctionPrincipal = {
    functionName: "bench-consumer",
    functionArn: "arn:aws:lambda:us-east-1:000000000000:function:bench-consumer",
    roleArn: "arn:aws:iam::000000000000:role/bench-consumer",
    roleLogicalId: "BenchRole",
    sessionArn: "arn:aws:sts::000000000000:assumed-role/bench-consumer/bench-consumer",
    accountId: "000000000000",
    // What DedupTable.addConsumer grants, on the bench's tables.
    policies: [
      {
        name: "dedup",
        document: {
          Version: "2012-10-17",
          Statement: [
            {
              Effect: "Allow",
              Action: [...DEDUP_TABLE_ACTIONS],
              Resource: "arn:aws:dynamodb:*:*:table/bench-*",
            },
          ],
        },
      },
    ],
    unknownManagedPolicies: [],
    credentials: localCredentials("bench", "bench-consumer"),
  };
  const access: AccessModel = {
    accountId: "000000000000",
    region: "us-east-1",
    principals: [principal],
    resourcePolicies: new Map(),
    encryption: new Map(),
    constructPaths: new Map(),
  };
  const denials = createDenialLog();
  const gateway = await startAwsGateway({
    upstreams: { dynamodb: process.env.AWS_ENDPOINT_URL_DYNAMODB! },
    region: "us-east-1",
    accountId: "000000000000",
    denials,
  });
  const tablePrefix = "arn:aws:dynamodb:ddblocal:000000000000:table/";
  gateway.enforce(access, await createIamEvaluator(access), { tableArn: (name) => `${tablePrefix}${name}` });
  const ours = ourSide(sqs);
  const rounds: { off: number; on: number; ratio: number }[] = [];
  try {
    for (let r = 0; r < o.rounds; r++) {
      const off = await runSide(ours, createDedupTable, o, arn, `gw-off-${r}`);
      const through = new DynamoDBClient({
        endpoint: gateway.functionEndpoint,
        credentials: principal.credentials,
      });
      const on = await runSide(ours, createDedupTable, o, arn, `gw-on-${r}`, through);
      through.destroy();
      if (on.failedRecords > 0 || off.failedRecords > 0)
        throw new Error("records failed in the gateway bench");
      rounds.push({ off: off.msgsPerSec, on: on.msgsPerSec, ratio: off.msgsPerSec / on.msgsPerSec });
      console.error(`gateway round ${r + 1}: off ${off.msgsPerSec} msg/s, on ${on.msgsPerSec} msg/s`);
    }
  } finally {
    await gateway.stop();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  return {
    offMsgsPerSec: median(rounds.map((r) => r.off)),
    onMsgsPerSec: median(rounds.map((r) => r.on)),
    // off ÷ on: how much slower the same consumer is through the enforcing gateway.
    overheadRatio: round(median(rounds.map((r) => r.ratio)), 3),
    roundRatios: rounds.map((r) => round(r.ratio, 3)),
    gatewayRequests: gateway.counts.dynamodb,
    denials: denials.all().length,
  };
}
