import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { sqsConsumer } from "reliable-consumers/sqs";
import { z } from "zod";

const ReportJob = z.object({ reportId: z.string().min(1), workMs: z.number().int().min(0).max(600_000) });
type ReportJob = z.infer<typeof ReportJob>;

const ddb = new DynamoDBClient({});
const table = process.env.APP_TABLE_NAME ?? "app";

/**
 * A long job, one record at a time. The visibility heartbeat keeps the message hidden (and the
 * dedup lease alive) while it runs, so it is neither redelivered nor run twice; the job watches
 * `signal` and stops if its lease is lost anyway.
 */
export const handler = sqsConsumer<ReportJob>(
  async ({ body: job }, { signal }) => {
    // Stand-in for the real work (rendering, aggregation...), in slices so it can stop early.
    for (let done = 0; done < job.workMs; done += 250) {
      signal.throwIfAborted();
      await sleep(Math.min(250, job.workMs - done));
    }
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          pk: { S: `REPORT#${job.reportId}` },
          sk: { S: "REPORT" },
          finishedAt: { S: new Date().toISOString() },
        },
      }),
    );
  },
  {
    schema: ReportJob,
    key: (job) => job.reportId,
    concurrency: 1,
    telemetry: { serviceName: "report-worker" },
  },
);
