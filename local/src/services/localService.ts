/**
 * What one emulated service contributes to the local runtime. Each service folder declares one in
 * its `service.ts`; `registry.ts` lists them, and the runtime's dispatch points (materialising a
 * template, the AWS gateway's IAM questions, starting event source mappings, the console's API)
 * read the registry instead of naming services. A new service is a folder and a line there.
 */

import type { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import type { KinesisClient } from "@aws-sdk/client-kinesis";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Kafka } from "kafkajs";
import type { ConsoleRoutes } from "../console/route.ts";
import type { GatewayService } from "../enforcement/serviceError.ts";
import type { CfnResource } from "../runtime/cloudAssembly.ts";
import type { Materialised, MaterialiseState, ResourceMaterialiser } from "../runtime/materialiseState.ts";
import type { LocalEventSourceMapping } from "../runtime/model.ts";
import type { AuthzRequest } from "./iam/iamEvaluator.ts";
import type { RegistryAccess } from "./kafka/schemaRegistry.ts";
import type { FunctionHost } from "./lambda/functionHost.ts";
import type { EventSource } from "./sqs/eventSource.ts";

/**
 * A resource that can only be made local once everything else exists (its function, queue, table):
 * a placeholder answers `Ref`/`GetAtt` in the first pass, `resolve` builds it in the second.
 */
export interface DeferredMaterialiser {
  placeholder(id: string, s: MaterialiseState): Materialised;
  resolve(id: string, r: CfnResource, s: MaterialiseState): void;
}

/** What the gateway knows when it asks IAM about a call: the account, and how to name resources. */
export interface GatewayContext {
  readonly region: string;
  readonly accountId: string;
  /** `http://host/<account>/<name>` (or LocalStack's path) → the queue's ARN. */
  queueArnOfUrl(url: string): string;
  queueArnOfName(name: string, account?: string): string;
  /** A table's ARN by its local name. */
  tableArn(name: string): string;
  /** A Kinesis stream's ARN by its name. */
  streamArnOfName(name: string): string;
  /** The stream a Kinesis shard iterator the gateway handed out reads. */
  streamOfIterator(iterator: string): string | undefined;
  /** The customer-managed KMS key of a queue, table or stream, if any. */
  keyOf(resourceArn: string): string | undefined;
}

/** One AWS JSON protocol the gateway forwards: its `X-Amz-Target` prefix and the IAM questions of a call. */
export interface GatewayRoute {
  readonly service: GatewayService;
  readonly targetPrefix: string;
  authz(operation: string, body: Record<string, unknown>, ctx: GatewayContext): AuthzRequest[];
}

/** What an event source mapping is started with: the host that runs its function, as the function's role. */
export interface MappingContext {
  readonly host: FunctionHost;
  readonly sqs: SQSClient;
  readonly streams: DynamoDBStreamsClient;
  /** The function's Kinesis client, when there is a local Kinesis. */
  readonly kinesis: KinesisClient | undefined;
  /** The function's execution role ARN (a Kinesis record's `invokeIdentityArn`). */
  readonly roleArn: string | undefined;
  /** The function's Kafka client, when there is a local Kafka. */
  readonly kafka: Kafka | undefined;
  readonly region: string;
  readonly clock: { readonly now?: () => number };
  /** How the mapping reaches a schema registry (a Kafka mapping's `SchemaRegistryConfig`), as its function. */
  readonly registryAccess: RegistryAccess;
}

/** Starts one kind of event source mapping; `undefined` when the service it reads is not there. */
export interface EventSourceFactory {
  readonly kind: LocalEventSourceMapping["kind"];
  create(mapping: LocalEventSourceMapping, ctx: MappingContext): EventSource | undefined;
}

/** The factory of one mapping kind, typed by that kind. */
export function eventSourceOf<K extends LocalEventSourceMapping["kind"]>(
  kind: K,
  create: (
    mapping: Extract<LocalEventSourceMapping, { kind: K }>,
    ctx: MappingContext,
  ) => EventSource | undefined,
): EventSourceFactory {
  return {
    kind,
    create: (mapping, ctx) =>
      mapping.kind === kind
        ? create(mapping as Extract<LocalEventSourceMapping, { kind: K }>, ctx)
        : undefined,
  };
}

/** One emulated service's parts. Every part is optional: IAM has no event source, Lambda no gateway route. */
export interface LocalService {
  readonly name: string;
  /** CloudFormation types made local in the first pass, in dependency order. */
  readonly resources?: Readonly<Record<string, ResourceMaterialiser>>;
  /** Custom resources this service stands in for (e.g. the Kafka-topics custom resource). */
  readonly customResources?: ReadonlyArray<{
    matches(r: CfnResource): boolean;
    materialise: ResourceMaterialiser;
  }>;
  /**
   * Stand-ins for what the template uses but does not create, made before the first pass: given
   * the strings the template computes without its own resources (`runtime/constantStrings.ts`), the
   * service makes a local resource for each one it recognises (an SQS queue's ARN or URL) and
   * aliases the imported value to it (`MaterialiseState.alias`).
   */
  readonly standIns?: (strings: ReadonlySet<string>, state: MaterialiseState) => Promise<void>;
  /** CloudFormation types made local once everything else exists. */
  readonly deferred?: Readonly<Record<string, DeferredMaterialiser>>;
  readonly gateway?: readonly GatewayRoute[];
  readonly eventSources?: readonly EventSourceFactory[];
  /** The console's API routes for this service's view (reads and actions). */
  readonly consoleRoutes?: ConsoleRoutes;
}
