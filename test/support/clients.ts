import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import { Kafka, logLevel } from "kafkajs";
import "../../lib/kafka/kafkajsRequestQueueFix.ts";
import { createSqsClient } from "reliable-consumers/sqs";

/** Plain SDK clients; endpoints, region and credentials come from the standard AWS_* variables. */
export const dynamodb = () => new DynamoDBClient({});
export const dynamodbStreams = () => new DynamoDBStreamsClient({});
export const sqs = () => createSqsClient();
export const kafka = (clientId = "test") =>
  new Kafka({ clientId, brokers: (process.env.KAFKA_BROKERS ?? "").split(","), logLevel: logLevel.NOTHING });
