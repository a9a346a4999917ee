import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sqs } from "../support/clients.ts";
import { names } from "../support/names.ts";
import { onLocalStack, SQS_NAME } from "../support/sqsSubstrate.ts";

const name = names(import.meta.url);
const client = sqs();
let queueUrl = "";
let dlqUrl = "";

beforeAll(async () => {
  dlqUrl = (await client.send(new CreateQueueCommand({ QueueName: name("dlq") }))).QueueUrl!;
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ["QueueArn"] }),
  );
  queueUrl = (
    await client.send(
      new CreateQueueCommand({
        QueueName: name("main"),
        Attributes: {
          VisibilityTimeout: "30",
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes?.QueueArn, maxReceiveCount: 2 }),
        },
      }),
    )
  ).QueueUrl!;
});

afterAll(async () => {
  await client.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  await client.send(new DeleteQueueCommand({ QueueUrl: dlqUrl }));
});

const receive = (url: string) =>
  client.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageSystemAttributeNames: ["ApproximateReceiveCount"],
      MessageAttributeNames: ["All"],
    }),
  );

describe(`${SQS_NAME} smoke`, () => {
  it("runs on the SQS this pass is for (its queue URLs tell them apart)", () => {
    // fauxqs names a host of its own; LocalStack (SQS_ENDPOINT_STRATEGY=path) its gateway and a path.
    expect(queueUrl).toMatch(
      onLocalStack
        ? /^http:\/\/127\.0\.0\.1:\d+\/queue\/us-east-1\/000000000000\/smoke-/
        : /^http:\/\/sqs\.us-east-1\.localhost:\d+\/000000000000\/smoke-/,
    );
    expect(new URL(queueUrl).port).toBe(new URL(process.env.AWS_ENDPOINT_URL_SQS!).port);
  });

  it("sends, receives, changes visibility, and redrives to the DLQ after maxReceiveCount", async () => {
    await client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: '{"n":1}',
        MessageAttributes: { "message-id": { DataType: "String", StringValue: "m-1" } },
      }),
    );
    const first = await receive(queueUrl);
    expect(first.Messages).toHaveLength(1);
    const message = first.Messages![0]!;
    expect(message.Body).toBe('{"n":1}');
    expect(message.MessageAttributes?.["message-id"]?.StringValue).toBe("m-1");
    expect(message.Attributes?.ApproximateReceiveCount).toBe("1");

    // Invisible for 30 s: nothing comes back until we shorten the visibility to 0.
    expect((await receive(queueUrl)).Messages ?? []).toHaveLength(0);
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: message.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const second = await receive(queueUrl);
    expect(second.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe("2");
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: second.Messages![0]!.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );

    // A third receive exceeds maxReceiveCount = 2: the message moves to the DLQ instead.
    expect((await receive(queueUrl)).Messages ?? []).toHaveLength(0);
    const parked = await receive(dlqUrl);
    expect(parked.Messages?.[0]?.Body).toBe('{"n":1}');
  });
});
