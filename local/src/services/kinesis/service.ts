/**
 * Kinesis Data Streams, on kinesis-local (kinesis-mock on Node): streams and enhanced fan-out
 * consumers, imported streams' stand-ins, the Kinesis event source mapping, and IAM for the
 * Kinesis API.
 */
import { at } from "../../console/route.ts";
import { eventSourceOf, type LocalService } from "../localService.ts";
import { kinesisAuthz } from "./enforcement.ts";
import { kinesisEventSource } from "./eventSource.ts";
import { materialiseImportedStreams, materialiseStream, materialiseStreamConsumer } from "./materialise.ts";

/** The Kinesis service of the registry (services/registry.ts). */
export const kinesisService: LocalService = {
  name: "kinesis",
  resources: {
    "AWS::Kinesis::Stream": materialiseStream,
    "AWS::Kinesis::StreamConsumer": materialiseStreamConsumer,
  },
  standIns: materialiseImportedStreams,
  gateway: [
    {
      service: "kinesis",
      targetPrefix: "Kinesis_20131202.",
      authz: (operation, body, ctx) =>
        kinesisAuthz(
          operation,
          body,
          { streamArnOfName: ctx.streamArnOfName, streamOfIterator: ctx.streamOfIterator, keyOf: ctx.keyOf },
          ctx.region,
        ),
    },
  ],
  eventSources: [
    eventSourceOf("kinesis", (m, ctx) =>
      ctx.kinesis
        ? kinesisEventSource(m, {
            host: ctx.host,
            kinesis: ctx.kinesis,
            sqs: ctx.sqs,
            region: ctx.region,
            roleArn: ctx.roleArn ?? "",
            clock: ctx.clock,
          })
        : undefined,
    ),
  ],
  consoleRoutes: { reads: [at("api/kinesis", (p) => p.kinesis.streams())] },
};
