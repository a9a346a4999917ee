/**
 * MSK's IAM semantics for Kafka requests (MSK Developer Guide, "Semantics of IAM authorization
 * policy actions and resources"): which `kafka-cluster:*` action on which cluster, topic, group or
 * transactional-id ARN each request needs, and the answer Kafka gives a request that was refused
 * (its own error codes, per topic or group, as the broker's authorizer would). Pure.
 */
import type { AuthzRequest } from "../../iam/iamEvaluator.ts";
import { API, KAFKA_ERROR } from "./messages.ts";
import type { Message } from "./wire.ts";

export interface KafkaArns {
  readonly cluster: string;
  topic(name: string): string;
  group(name: string): string;
  transactionalId(id: string): string;
}

/** `arn:aws:kafka:<r>:<a>:cluster/<name>/<uuid>` → its topic, group and transactional-id ARNs. */
export function kafkaArns(clusterArn: string): KafkaArns {
  const child = (kind: string) => (name: string) =>
    clusterArn.replace(/:cluster\/([^/]+)\/([^/]+)$/, `:${kind}/$1/$2/${name}`);
  return {
    cluster: clusterArn,
    topic: child("topic"),
    group: child("group"),
    transactionalId: child("transactional-id"),
  };
}

/** One IAM question of a request, and which of its topics or groups it is about. */
export interface KafkaQuestion extends AuthzRequest {
  readonly topic?: string;
  readonly group?: string;
}

type Topics = Array<{ name: string; partitions?: unknown[] }> | null;
const topicsOf = (m: Message) => (m.topics as Topics) ?? [];

const q = (
  action: string,
  resource: string,
  about: { topic?: string; group?: string } = {},
): KafkaQuestion => ({
  action: `kafka-cluster:${action}`,
  resource,
  ...about,
});

/** The IAM questions one request asks (after Connect, which the SASL handshake checks). */
export function kafkaQuestions(apiKey: number, m: Message, arns: KafkaArns): KafkaQuestion[] {
  const perTopic = (action: string) =>
    topicsOf(m).map((t) => q(action, arns.topic(t.name), { topic: t.name }));
  const group = (action: string) => q(action, arns.group(String(m.groupId)), { group: String(m.groupId) });
  switch (apiKey) {
    case API.Produce:
      return [
        ...perTopic("WriteData"),
        ...(m.transactionalId
          ? [q("AlterTransactionalId", arns.transactionalId(String(m.transactionalId)))]
          : []),
      ];
    case API.Fetch:
      return perTopic("ReadData");
    case API.ListOffsets:
    case API.Metadata:
      return perTopic("DescribeTopic");
    case API.CreateTopics:
      return perTopic("CreateTopic");
    case API.OffsetCommit:
      return [group("AlterGroup"), ...perTopic("ReadData")];
    case API.OffsetFetch:
      return [group("DescribeGroup"), ...perTopic("DescribeTopic")];
    case API.JoinGroup:
    case API.SyncGroup:
    case API.Heartbeat:
    case API.LeaveGroup:
      return [group("AlterGroup")];
    case API.DescribeGroups:
      return ((m.groups as string[]) ?? []).map((g) => q("DescribeGroup", arns.group(g), { group: g }));
    case API.FindCoordinator:
      return Number(m.keyType ?? 0) === 1
        ? [q("DescribeTransactionalId", arns.transactionalId(String(m.key)))]
        : [q("DescribeGroup", arns.group(String(m.key)), { group: String(m.key) })];
    case API.InitProducerId:
      return m.transactionalId
        ? [q("AlterTransactionalId", arns.transactionalId(String(m.transactionalId)))]
        : [q("WriteDataIdempotently", arns.cluster)];
    default:
      return [];
  }
}

const NO_OFFSET = -1n;

/** A refused topic's entry in each response that lists topics, as Kafka answers it. */
const DENIED_TOPIC: Readonly<Record<number, (t: { name: string; partitions?: unknown[] }) => Message>> = {
  [API.Produce]: (t) => ({
    name: t.name,
    partitions: ((t.partitions ?? []) as Message[]).map((p) => ({
      index: p.index,
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      baseOffset: NO_OFFSET,
      logAppendTimeMs: NO_OFFSET,
      logStartOffset: NO_OFFSET,
      recordErrors: [],
      errorMessage: null,
    })),
  }),
  [API.Fetch]: (t) => ({
    name: t.name,
    partitions: ((t.partitions ?? []) as Message[]).map((p) => ({
      partition: p.partition,
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      highWatermark: NO_OFFSET,
      lastStableOffset: NO_OFFSET,
      logStartOffset: NO_OFFSET,
      abortedTransactions: null,
      preferredReadReplica: -1,
      records: null,
    })),
  }),
  [API.ListOffsets]: (t) => ({
    name: t.name,
    partitions: ((t.partitions ?? []) as Message[]).map((p) => ({
      partition: p.partition,
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      timestamp: NO_OFFSET,
      offset: NO_OFFSET,
      leaderEpoch: -1,
    })),
  }),
  [API.Metadata]: (t) => ({
    errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    name: t.name,
    isInternal: false,
    partitions: [],
    topicAuthorizedOperations: -2147483648,
  }),
  [API.CreateTopics]: (t) => ({
    name: t.name,
    errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    errorMessage: "Authorization failed.",
  }),
  [API.OffsetCommit]: (t) => ({
    name: t.name,
    partitions: ((t.partitions ?? []) as Message[]).map((p) => ({
      partition: p.partition,
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    })),
  }),
  [API.OffsetFetch]: (t) => ({
    name: t.name,
    partitions: ((t.partitions ?? []) as number[]).map((p) => ({
      partition: p,
      committedOffset: NO_OFFSET,
      committedLeaderEpoch: -1,
      metadata: null,
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    })),
  }),
};

/** The whole answer to a request refused at the group, cluster or transactional-id level. */
function refusedWhole(apiKey: number, m: Message, code: number): Message | undefined {
  switch (apiKey) {
    case API.JoinGroup:
      return { errorCode: code, generationId: -1, protocolName: "", leader: "", memberId: "", members: [] };
    case API.SyncGroup:
      return { errorCode: code, assignment: Buffer.alloc(0) };
    case API.Heartbeat:
      return { errorCode: code };
    case API.LeaveGroup:
      return { errorCode: code, members: [] };
    case API.FindCoordinator:
      return { errorCode: code, errorMessage: "Authorization failed.", nodeId: -1, host: "", port: -1 };
    case API.InitProducerId:
      return { errorCode: code, producerId: NO_OFFSET, producerEpoch: -1 };
    case API.OffsetCommit:
      return {
        topics: topicsOf(m).map((t) => ({
          name: t.name,
          partitions: ((t.partitions ?? []) as Message[]).map((p) => ({
            partition: p.partition,
            errorCode: code,
          })),
        })),
      };
    case API.OffsetFetch:
      return { topics: [], errorCode: code };
    case API.Produce:
      return {
        topics: topicsOf(m).map((t) => DENIED_TOPIC[API.Produce]!(t)),
      };
    case API.DescribeGroups:
      return {
        groups: ((m.groups as string[]) ?? []).map((g) => ({
          errorCode: code,
          groupId: g,
          groupState: "",
          protocolType: "",
          protocolData: "",
          members: [],
          authorizedOperations: -2147483648,
        })),
      };
    default:
      return undefined;
  }
}

/** What the gateway does with a request whose questions were answered. */
export type KafkaVerdict =
  | { readonly kind: "forward" }
  /** Forward only the topics that were allowed; add the refused ones to the broker's answer. */
  | { readonly kind: "filter"; readonly request: Message; readonly denied: Message[] }
  /** Answer here: the broker never sees it. */
  | { readonly kind: "answer"; readonly response: Message };

export function kafkaVerdict(apiKey: number, m: Message, denied: ReadonlySet<KafkaQuestion>): KafkaVerdict {
  if (denied.size === 0) return { kind: "forward" };
  const wholeCode =
    apiKey === API.InitProducerId
      ? m.transactionalId
        ? KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        : KAFKA_ERROR.CLUSTER_AUTHORIZATION_FAILED
      : apiKey === API.Produce
        ? KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        : KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED;
  const wholeRefused = [...denied].some((d) => d.topic === undefined);
  const perTopic = DENIED_TOPIC[apiKey];
  if (wholeRefused || !perTopic) {
    const response = refusedWhole(apiKey, m, wholeCode);
    if (response) return { kind: "answer", response };
  }
  const deniedTopics = new Set([...denied].map((d) => d.topic));
  const allowed = topicsOf(m).filter((t) => !deniedTopics.has(t.name));
  const refused = topicsOf(m)
    .filter((t) => deniedTopics.has(t.name))
    .map((t) => perTopic!(t));
  // Every topic refused: answer here (Metadata still needs the broker list, from an empty request).
  if (allowed.length === 0 && apiKey !== API.Metadata)
    return { kind: "answer", response: { topics: refused, errorCode: 0, sessionId: 0 } };
  return { kind: "filter", request: { ...m, topics: allowed }, denied: refused };
}
