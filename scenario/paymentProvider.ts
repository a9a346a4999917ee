import { createServer, type Server } from "node:http";
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";

export interface PaymentProvider {
  /** `http://127.0.0.1:<port>`: give it to the payment consumer as PAYMENT_GATEWAY_URL. */
  readonly url: string;
  readonly tableName: string;
  stop(): Promise<void>;
}

/**
 * A stand-in for an external payment provider in the style of Stripe's API, for the local
 * scenario: `POST /charges` with an `Idempotency-Key`. Every charge is stored (DynamoDB table, one
 * item per idempotency key, with the order id and the time), so the scenario counts effects from
 * stored data; a repeated key replays the first answer and only counts a replay. Amounts over the
 * limit are declined (402), as the reference service's stub gateway does.
 */
export async function startPaymentProvider(
  ddb: DynamoDBClient,
  options: { tableName?: string; limitCents?: number } = {},
): Promise<PaymentProvider> {
  const tableName = options.tableName ?? "local-payment-provider";
  const limit = options.limitCents ?? 1_000_000;
  await ddb
    .send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      }),
    )
    .catch((e: Error) => {
      if (e.name !== "ResourceInUseException") throw e;
    });

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      try {
        if (req.method !== "POST" || req.url !== "/charges") return reply(404, { error: "not found" });
        const key = req.headers["idempotency-key"];
        if (typeof key !== "string" || key === "") return reply(400, { error: "Idempotency-Key required" });
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          orderId?: string;
          amountCents?: number;
        };
        if (!body.orderId || typeof body.amountCents !== "number")
          return reply(400, { error: "invalid charge" });
        if (body.amountCents > limit) return reply(402, { error: "card declined" });
        const id = `ch_${key.replace(/[^A-Za-z0-9]/g, "").slice(-24)}`;
        try {
          await ddb.send(
            new PutItemCommand({
              TableName: tableName,
              Item: {
                pk: { S: key },
                chargeId: { S: id },
                orderId: { S: body.orderId },
                amountCents: { N: String(body.amountCents) },
                chargedAt: { N: String(Date.now()) },
                replays: { N: "0" },
              },
              ConditionExpression: "attribute_not_exists(pk)",
            }),
          );
          return reply(200, { id });
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
          await ddb.send(
            new UpdateItemCommand({
              TableName: tableName,
              Key: { pk: { S: key } },
              UpdateExpression: "ADD replays :one",
              ExpressionAttributeValues: { ":one": { N: "1" } },
            }),
          );
          const first = await ddb.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: key } } }));
          return reply(200, { id: first.Item?.chargeId?.S ?? id, replayed: true });
        }
      } catch (error) {
        reply(500, { error: (error as Error).message });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    tableName,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
