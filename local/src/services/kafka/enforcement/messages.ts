/**
 * The Kafka messages the gateway reads, answers or rewrites, in their non-flexible versions (from
 * Apache Kafka's message specs, clients/src/main/resources/common/message). The gateway offers a
 * client only these APIs and versions (it caps the broker's ApiVersions answer), so every request
 * it sees is one it can read; kafkajs needs nothing else.
 */
import type { Schema } from "./wire.ts";

export const API = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  SaslHandshake: 17,
  ApiVersions: 18,
  CreateTopics: 19,
  InitProducerId: 22,
  SaslAuthenticate: 36,
} as const;

/** The versions the gateway reads: up to the last one before each API went flexible. */
export const GATEWAY_VERSIONS: Readonly<Record<number, readonly [min: number, max: number]>> = {
  [API.Produce]: [3, 8],
  [API.Fetch]: [4, 11],
  [API.ListOffsets]: [1, 5],
  [API.Metadata]: [0, 8],
  [API.OffsetCommit]: [2, 7],
  [API.OffsetFetch]: [1, 5],
  [API.FindCoordinator]: [0, 2],
  [API.JoinGroup]: [0, 5],
  [API.Heartbeat]: [0, 3],
  [API.LeaveGroup]: [0, 3],
  [API.SyncGroup]: [0, 3],
  [API.DescribeGroups]: [0, 4],
  [API.SaslHandshake]: [0, 1],
  [API.ApiVersions]: [0, 2],
  [API.CreateTopics]: [0, 4],
  [API.InitProducerId]: [0, 1],
  [API.SaslAuthenticate]: [0, 1],
};

/** Kafka error codes the gateway answers with. */
export const KAFKA_ERROR = {
  NONE: 0,
  TOPIC_AUTHORIZATION_FAILED: 29,
  GROUP_AUTHORIZATION_FAILED: 30,
  CLUSTER_AUTHORIZATION_FAILED: 31,
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  UNSUPPORTED_VERSION: 35,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  SASL_AUTHENTICATION_FAILED: 58,
} as const;

const i32Array = { array: "int32" as const };

export const REQUESTS: Readonly<Record<number, Schema>> = {
  [API.Produce]: [
    { name: "transactionalId", type: "nstring", from: 3 },
    { name: "acks", type: "int16" },
    { name: "timeoutMs", type: "int32" },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "index", type: "int32" },
                { name: "records", type: "nbytes" },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.Fetch]: [
    { name: "replicaId", type: "int32" },
    { name: "maxWaitMs", type: "int32" },
    { name: "minBytes", type: "int32" },
    { name: "maxBytes", type: "int32", from: 3 },
    { name: "isolationLevel", type: "int8", from: 4 },
    { name: "sessionId", type: "int32", from: 7 },
    { name: "sessionEpoch", type: "int32", from: 7 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "currentLeaderEpoch", type: "int32", from: 9 },
                { name: "fetchOffset", type: "int64" },
                { name: "logStartOffset", type: "int64", from: 5 },
                { name: "partitionMaxBytes", type: "int32" },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.ListOffsets]: [
    { name: "replicaId", type: "int32" },
    { name: "isolationLevel", type: "int8", from: 2 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "currentLeaderEpoch", type: "int32", from: 4 },
                { name: "timestamp", type: "int64" },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.Metadata]: [
    { name: "topics", type: { array: [{ name: "name", type: "string" }], nullable: true } },
    { name: "allowAutoTopicCreation", type: "bool", from: 4 },
    { name: "includeClusterAuthorizedOperations", type: "bool", from: 8 },
    { name: "includeTopicAuthorizedOperations", type: "bool", from: 8 },
  ],
  [API.OffsetCommit]: [
    { name: "groupId", type: "string" },
    { name: "generationId", type: "int32", from: 1 },
    { name: "memberId", type: "string", from: 1 },
    { name: "groupInstanceId", type: "nstring", from: 7 },
    { name: "retentionTimeMs", type: "int64", from: 2, to: 4 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "committedOffset", type: "int64" },
                { name: "committedLeaderEpoch", type: "int32", from: 6 },
                { name: "metadata", type: "nstring" },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.OffsetFetch]: [
    { name: "groupId", type: "string" },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          { name: "partitions", type: i32Array },
        ],
        nullable: true,
      },
    },
  ],
  [API.FindCoordinator]: [
    { name: "key", type: "string" },
    { name: "keyType", type: "int8", from: 1 },
  ],
  [API.JoinGroup]: [{ name: "groupId", type: "string" }],
  [API.Heartbeat]: [{ name: "groupId", type: "string" }],
  [API.LeaveGroup]: [{ name: "groupId", type: "string" }],
  [API.SyncGroup]: [{ name: "groupId", type: "string" }],
  [API.DescribeGroups]: [{ name: "groups", type: { array: "string" } }],
  [API.SaslHandshake]: [{ name: "mechanism", type: "string" }],
  [API.SaslAuthenticate]: [{ name: "authBytes", type: "bytes" }],
  [API.CreateTopics]: [
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          { name: "numPartitions", type: "int32" },
          { name: "replicationFactor", type: "int16" },
          {
            name: "assignments",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "brokers", type: i32Array },
              ],
            },
          },
          {
            name: "configs",
            type: {
              array: [
                { name: "name", type: "string" },
                { name: "value", type: "nstring" },
              ],
            },
          },
        ],
      },
    },
    { name: "timeoutMs", type: "int32" },
    { name: "validateOnly", type: "bool", from: 1 },
  ],
  [API.InitProducerId]: [
    { name: "transactionalId", type: "nstring" },
    { name: "transactionTimeoutMs", type: "int32" },
  ],
};

const broker = [
  { name: "nodeId", type: "int32" },
  { name: "host", type: "string" },
  { name: "port", type: "int32" },
  { name: "rack", type: "nstring", from: 1 },
] as const satisfies Schema;

export const RESPONSES: Readonly<Record<number, Schema>> = {
  [API.ApiVersions]: [
    { name: "errorCode", type: "int16" },
    {
      name: "apiKeys",
      type: {
        array: [
          { name: "apiKey", type: "int16" },
          { name: "minVersion", type: "int16" },
          { name: "maxVersion", type: "int16" },
        ],
      },
    },
    { name: "throttleTimeMs", type: "int32", from: 1 },
  ],
  [API.SaslHandshake]: [
    { name: "errorCode", type: "int16" },
    { name: "mechanisms", type: { array: "string" } },
  ],
  [API.SaslAuthenticate]: [
    { name: "errorCode", type: "int16" },
    { name: "errorMessage", type: "nstring" },
    { name: "authBytes", type: "bytes" },
    { name: "sessionLifetimeMs", type: "int64", from: 1 },
  ],
  [API.Metadata]: [
    { name: "throttleTimeMs", type: "int32", from: 3 },
    { name: "brokers", type: { array: broker } },
    { name: "clusterId", type: "nstring", from: 2 },
    { name: "controllerId", type: "int32", from: 1 },
    {
      name: "topics",
      type: {
        array: [
          { name: "errorCode", type: "int16" },
          { name: "name", type: "string" },
          { name: "isInternal", type: "bool", from: 1 },
          {
            name: "partitions",
            type: {
              array: [
                { name: "errorCode", type: "int16" },
                { name: "partition", type: "int32" },
                { name: "leaderId", type: "int32" },
                { name: "leaderEpoch", type: "int32", from: 7 },
                { name: "replicaNodes", type: i32Array },
                { name: "isrNodes", type: i32Array },
                { name: "offlineReplicas", type: i32Array, from: 5 },
              ],
            },
          },
          { name: "topicAuthorizedOperations", type: "int32", from: 8 },
        ],
      },
    },
    { name: "clusterAuthorizedOperations", type: "int32", from: 8 },
  ],
  [API.FindCoordinator]: [
    { name: "throttleTimeMs", type: "int32", from: 1 },
    { name: "errorCode", type: "int16" },
    { name: "errorMessage", type: "nstring", from: 1 },
    { name: "nodeId", type: "int32" },
    { name: "host", type: "string" },
    { name: "port", type: "int32" },
  ],
  [API.Produce]: [
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "index", type: "int32" },
                { name: "errorCode", type: "int16" },
                { name: "baseOffset", type: "int64" },
                { name: "logAppendTimeMs", type: "int64", from: 2 },
                { name: "logStartOffset", type: "int64", from: 5 },
                {
                  name: "recordErrors",
                  type: {
                    array: [
                      { name: "batchIndex", type: "int32" },
                      { name: "message", type: "nstring" },
                    ],
                  },
                  from: 8,
                },
                { name: "errorMessage", type: "nstring", from: 8 },
              ],
            },
          },
        ],
      },
    },
    { name: "throttleTimeMs", type: "int32", from: 1 },
  ],
  [API.Fetch]: [
    { name: "throttleTimeMs", type: "int32", from: 1 },
    { name: "errorCode", type: "int16", from: 7 },
    { name: "sessionId", type: "int32", from: 7 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "errorCode", type: "int16" },
                { name: "highWatermark", type: "int64" },
                { name: "lastStableOffset", type: "int64", from: 4 },
                { name: "logStartOffset", type: "int64", from: 5 },
                {
                  name: "abortedTransactions",
                  type: {
                    array: [
                      { name: "producerId", type: "int64" },
                      { name: "firstOffset", type: "int64" },
                    ],
                    nullable: true,
                  },
                  from: 4,
                },
                { name: "preferredReadReplica", type: "int32", from: 11 },
                { name: "records", type: "nbytes" },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.ListOffsets]: [
    { name: "throttleTimeMs", type: "int32", from: 2 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "errorCode", type: "int16" },
                { name: "timestamp", type: "int64", from: 1 },
                { name: "offset", type: "int64", from: 1 },
                { name: "leaderEpoch", type: "int32", from: 4 },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.OffsetCommit]: [
    { name: "throttleTimeMs", type: "int32", from: 3 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "errorCode", type: "int16" },
              ],
            },
          },
        ],
      },
    },
  ],
  [API.OffsetFetch]: [
    { name: "throttleTimeMs", type: "int32", from: 3 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          {
            name: "partitions",
            type: {
              array: [
                { name: "partition", type: "int32" },
                { name: "committedOffset", type: "int64" },
                { name: "committedLeaderEpoch", type: "int32", from: 5 },
                { name: "metadata", type: "nstring" },
                { name: "errorCode", type: "int16" },
              ],
            },
          },
        ],
      },
    },
    { name: "errorCode", type: "int16", from: 2 },
  ],
  [API.JoinGroup]: [
    { name: "throttleTimeMs", type: "int32", from: 2 },
    { name: "errorCode", type: "int16" },
    { name: "generationId", type: "int32" },
    { name: "protocolName", type: "string" },
    { name: "leader", type: "string" },
    { name: "memberId", type: "string" },
    {
      name: "members",
      type: {
        array: [
          { name: "memberId", type: "string" },
          { name: "groupInstanceId", type: "nstring", from: 5 },
          { name: "metadata", type: "bytes" },
        ],
      },
    },
  ],
  [API.Heartbeat]: [
    { name: "throttleTimeMs", type: "int32", from: 1 },
    { name: "errorCode", type: "int16" },
  ],
  [API.LeaveGroup]: [
    { name: "throttleTimeMs", type: "int32", from: 1 },
    { name: "errorCode", type: "int16" },
    {
      name: "members",
      type: {
        array: [
          { name: "memberId", type: "string" },
          { name: "groupInstanceId", type: "nstring" },
          { name: "errorCode", type: "int16" },
        ],
      },
      from: 3,
    },
  ],
  [API.SyncGroup]: [
    { name: "throttleTimeMs", type: "int32", from: 1 },
    { name: "errorCode", type: "int16" },
    { name: "assignment", type: "bytes" },
  ],
  [API.DescribeGroups]: [
    { name: "throttleTimeMs", type: "int32", from: 1 },
    {
      name: "groups",
      type: {
        array: [
          { name: "errorCode", type: "int16" },
          { name: "groupId", type: "string" },
          { name: "groupState", type: "string" },
          { name: "protocolType", type: "string" },
          { name: "protocolData", type: "string" },
          {
            name: "members",
            type: {
              array: [
                { name: "memberId", type: "string" },
                { name: "groupInstanceId", type: "nstring", from: 4 },
                { name: "clientId", type: "string" },
                { name: "clientHost", type: "string" },
                { name: "memberMetadata", type: "bytes" },
                { name: "memberAssignment", type: "bytes" },
              ],
            },
          },
          { name: "authorizedOperations", type: "int32", from: 3 },
        ],
      },
    },
  ],
  [API.CreateTopics]: [
    { name: "throttleTimeMs", type: "int32", from: 2 },
    {
      name: "topics",
      type: {
        array: [
          { name: "name", type: "string" },
          { name: "errorCode", type: "int16" },
          { name: "errorMessage", type: "nstring", from: 1 },
        ],
      },
    },
  ],
  [API.InitProducerId]: [
    { name: "throttleTimeMs", type: "int32" },
    { name: "errorCode", type: "int16" },
    { name: "producerId", type: "int64" },
    { name: "producerEpoch", type: "int16" },
  ],
};
