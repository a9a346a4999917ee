import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createSqsClient } from "reliable-consumers/sqs";
import { createDedupTable, startEmulators } from "reliable-consumers/testing";
import { batchShapedCeiling, partiqlWriteCeiling } from "./ceilings.ts";
import {
  batchShapes,
  benchQueueArn,
  DEFAULT_SQS_BENCH,
  ourSide,
  runSide,
  warmUp,
  workload,
} from "./sqsIdempotency.ts";

const em = await startEmulators({ kafka: "mock", fullJit: true });
process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
try {
  await warmUp();
  const sqs = createSqsClient();
  const arn = await benchQueueArn(sqs, "tl");
  const shapes = batchShapes(DEFAULT_SQS_BENCH);
  console.log(
    JSON.stringify(shapes.slice(0, 5)),
    shapes.reduce((a, s) => a + s.newKeys, 0),
    shapes.reduce((a, s) => a + s.knownKeys, 0),
  );
  const keys = workload(DEFAULT_SQS_BENCH, arn, "x").unique;
  const c = new DynamoDBClient({});
  for (let r = 0; r < 6; r++) {
    await createDedupTable(c, `p-${r}`);
    await createDedupTable(c, `s-${r}`);
    const bare = await partiqlWriteCeiling(c, `p-${r}`, keys, 4);
    const shaped = await batchShapedCeiling(c, `s-${r}`, shapes, 2);
    const ours = await runSide(ourSide(sqs), createDedupTable, DEFAULT_SQS_BENCH, arn, `o-${r}`);
    console.log(
      r,
      "bare",
      bare.perSec,
      "shaped",
      shaped.perSec,
      "ours",
      ours.writeUnitsPerSec,
      "ours/shaped",
      (ours.writeUnitsPerSec / shaped.perSec).toFixed(3),
      "shaped/bare",
      (shaped.perSec / bare.perSec).toFixed(3),
    );
  }
} finally {
  await em.stop();
}
