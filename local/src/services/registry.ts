/**
 * Every emulated service, one entry each. The runtime, the AWS gateway and the console read their
 * dispatch tables from here (localService.ts says what a service may contribute).
 */
import { dynamodbService } from "./dynamodb/service.ts";
import { iamService } from "./iam/service.ts";
import { kafkaService } from "./kafka/service.ts";
import { kinesisService } from "./kinesis/service.ts";
import { lambdaService } from "./lambda/service.ts";
import type { LocalService } from "./localService.ts";
import { schedulerService } from "./scheduler/service.ts";
import { schemaRegistryService } from "./schemaRegistry/service.ts";
import { sqsService } from "./sqs/service.ts";

export const SERVICES: readonly LocalService[] = [
  sqsService,
  dynamodbService,
  kafkaService,
  kinesisService,
  lambdaService,
  iamService,
  schedulerService,
  schemaRegistryService,
];
