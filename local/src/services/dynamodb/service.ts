/**
 * DynamoDB and its Streams, on DynamoDB Local: tables, the stream event source mapping, IAM for
 * both APIs, and the two views over tables the library writes (the outbox, the dedup records).
 */
import { at, object, required, text } from "../../console/route.ts";
import { eventSourceOf, type LocalService } from "../localService.ts";
import { dynamodbAuthz, streamsAuthz } from "./enforcement.ts";
import { materialiseTable } from "./materialise.ts";
import { dynamodbStreamEventSource } from "./streamEventSource.ts";

export const dynamodbService: LocalService = {
  name: "dynamodb",
  resources: { "AWS::DynamoDB::Table": materialiseTable, "AWS::DynamoDB::GlobalTable": materialiseTable },
  gateway: [
    {
      service: "dynamodb",
      targetPrefix: "DynamoDB_20120810.",
      authz: (operation, body, ctx) => dynamodbAuthz(operation, body, ctx, ctx.region),
    },
    {
      service: "streams",
      targetPrefix: "DynamoDBStreams_20120810.",
      authz: (operation, body) => streamsAuthz(operation, body),
    },
  ],
  eventSources: [
    eventSourceOf("dynamodb", (m, ctx) =>
      dynamodbStreamEventSource(m, ctx.host, ctx.streams, ctx.sqs, ctx.region, ctx.clock),
    ),
  ],
  consoleRoutes: {
    reads: [
      at("api/outbox", (p) => p.outbox.tables()),
      at("api/dedup", (p) => p.dedup.tables()),
      at("api/dedup/lookup", async (p, { query }) => ({
        record:
          (await p.dedup.lookup(
            required(query, "table"),
            query.get("scope") ?? "",
            required(query, "key"),
          )) ?? null,
      })),
      at("api/dedup/sample", (p, { query }) => p.dedup.sample(required(query, "table"))),
    ],
    actions: [
      at("api/actions/requeue", (p, { body }) => {
        const b = object(body);
        return p.outbox.requeue({ table: text(b, "table"), pk: text(b, "pk"), sk: text(b, "sk") });
      }),
    ],
  },
};
