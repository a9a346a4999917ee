/** SQS, on fauxqs (or an SQS the user runs): queues, the SQS event source mapping, IAM, the Queues view. */
import type { RedriveRequest } from "../../console/consoleApi.ts";
import { at, moveOf, object, text } from "../../console/route.ts";
import { eventSourceOf, type LocalService } from "../localService.ts";
import { sqsAuthz } from "./enforcement.ts";
import { sqsEventSource } from "./eventSource.ts";
import { materialiseImportedQueues } from "./importedQueues.ts";
import { materialiseQueue } from "./materialise.ts";

export const sqsService: LocalService = {
  name: "sqs",
  resources: { "AWS::SQS::Queue": materialiseQueue },
  standIns: materialiseImportedQueues,
  gateway: [
    {
      service: "sqs",
      targetPrefix: "AmazonSQS.",
      authz: (operation, body, ctx) => sqsAuthz(operation, body, ctx, ctx.region),
    },
  ],
  eventSources: [eventSourceOf("sqs", (m, ctx) => sqsEventSource(m, ctx.host, ctx.sqs))],
  consoleRoutes: {
    reads: [
      at("api/queues", (p) => p.queues.summaries()),
      at("api/queues/:name", (p, { params }) => p.queues.detail(params.name!)),
    ],
    actions: [
      at("api/actions/redrive", (p, { body }) => {
        const b = object(body);
        const request: RedriveRequest = {
          queue: text(b, "queue"),
          ...moveOf(b),
          ...(typeof b.toQueue === "string" && b.toQueue ? { toQueue: b.toQueue } : {}),
        };
        return p.queues.redrive(request);
      }),
      at("api/actions/purge", (p, { body }) => p.queues.purge(text(object(body), "queue"))),
    ],
  },
};
