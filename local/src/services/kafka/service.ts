/**
 * Kafka standing in for MSK: topics (`AWS::MSK::Topic` and the Kafka-topics custom resource), the
 * MSK event source mapping, the Kafka view. Its IAM check is the Kafka gateway's
 * (enforcement/gateway.ts), on the wire protocol rather than an AWS API.
 */
import type { KafkaReplayRequest } from "../../console/consoleApi.ts";
import { at, moveOf, object, text } from "../../console/route.ts";
import { eventSourceOf, type LocalService } from "../localService.ts";
import { kafkaEventSource } from "./eventSource.ts";
import { isCustomTopic, materialiseCustomTopic, materialiseMskTopic } from "./materialise.ts";
import { mappingDeserializer } from "./schemaRegistry.ts";

export const kafkaService: LocalService = {
  name: "kafka",
  resources: { "AWS::MSK::Topic": materialiseMskTopic },
  customResources: [{ matches: isCustomTopic, materialise: materialiseCustomTopic }],
  eventSources: [
    eventSourceOf("kafka", (m, ctx) => {
      if (!ctx.kafka) return undefined;
      const deserializer = m.schemaRegistry
        ? mappingDeserializer(m.schemaRegistry, ctx.registryAccess)
        : undefined;
      return kafkaEventSource(m, ctx.host, ctx.kafka, ctx.sqs, ctx.clock, deserializer);
    }),
  ],
  consoleRoutes: {
    reads: [
      at("api/kafka", (p) => p.kafka.topics()),
      at("api/kafka/:topic/letters", (p, { params }) => p.kafka.letters(params.topic!)),
    ],
    actions: [
      at("api/actions/replay", (p, { body }) => {
        const b = object(body);
        const request: KafkaReplayRequest = { topic: text(b, "topic"), ...moveOf(b) };
        return p.kafka.replay(request);
      }),
    ],
  },
};
