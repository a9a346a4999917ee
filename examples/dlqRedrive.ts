// The dead-letter guide's code (docs/dlq.md includes the region); test/integration/examples.test.ts
// runs it on the DLQ the SQS quickstart parks its bad input in.
import { inspectSqsDeadLetters, type RedriveResult, redriveSqsDeadLetters } from "reliable-consumers/dlq";
import { createSqsClient } from "reliable-consumers/sqs";

export async function redriveRuleViolations(dlqUrl: string): Promise<RedriveResult> {
  // #region redrive
  const sqs = createSqsClient(); // AWS_ENDPOINT_URL_SQS as an explicit endpoint, when set
  // What is there, by error type (no bodies); every message stays in place.
  const summary = await inspectSqsDeadLetters(sqs, dlqUrl);
  console.log(summary.total, Object.keys(summary.byErrorType)); // e.g. 2 [ "InvalidJsonError", "PermanentError" ]
  // What a move would take, then the move: back to each message's x-original-queue.
  const filter = { errorTypes: ["PermanentError"] };
  const dryRun = await redriveSqsDeadLetters(sqs, dlqUrl, { filter, dryRun: true });
  console.log(dryRun);
  return redriveSqsDeadLetters(sqs, dlqUrl, { filter });
  // #endregion redrive
}
