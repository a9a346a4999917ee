import type { CfnResource } from "./cloudAssembly.ts";
import { resolveString } from "./intrinsics.ts";
import type { ResourceMaterialiser } from "./materialiseState.ts";

/** Resource types with no local effect, and why. Listed in the report, never silently dropped. */
export const INERT_TYPES: Readonly<Record<string, string>> = {
  "AWS::IAM::Role": "each function acts as its role: the local gateways evaluate its policies on every call",
  "AWS::IAM::Policy": "evaluated by the local gateways on every call of the roles it attaches to",
  "AWS::IAM::ManagedPolicy": "evaluated by the local gateways on every call of the roles it attaches to",
  "AWS::Lambda::Permission": "evaluated when a schedule invokes the function",
  "AWS::SQS::QueuePolicy": "evaluated by the local gateway with the callers' policies",
  "AWS::Logs::LogGroup": "function logs go to the local log directory, one file per function",
  "AWS::CloudWatch::Alarm": "metrics and alarms are not evaluated locally (EMF lines stay in the logs)",
  "AWS::CloudWatch::Dashboard": "dashboards are not rendered locally",
  "AWS::SNS::Topic": "alarms are not evaluated locally, so nothing is published to alarm topics",
  "AWS::SNS::TopicPolicy": "SNS is not emulated, nor its resource policies",
  "AWS::CDK::Metadata": "CDK metadata",
  "AWS::KMS::Key":
    "encryption at rest is not emulated; the key policy and the callers' kms: grants are checked",
  "AWS::KMS::Alias": "encryption at rest is not emulated",
  "AWS::EC2::SecurityGroup": "networking is not emulated: every function reaches every emulator",
  "AWS::EC2::SecurityGroupIngress": "networking is not emulated",
  "AWS::EC2::SecurityGroupEgress": "networking is not emulated",
  "AWS::MSK::Cluster": "the local Kafka cluster stands in for it",
  "AWS::MSK::ServerlessCluster": "the local Kafka cluster stands in for it",
};

/** Why a resource has no local effect, or `undefined` when it is not one of those. */
export function inertReason(r: CfnResource): string | undefined {
  return INERT_TYPES[r.Type] ?? (r.Type.startsWith("AWS::EC2::") ? "networking is not emulated" : undefined);
}

/** Placeholder attributes, so that what references an inert resource still resolves. */
const INERT_ATTRS: Readonly<
  Record<string, (id: string, arn: (service: string) => string) => Record<string, string>>
> = {
  "AWS::IAM::Role": (id, arn) => ({ Arn: arn("iam"), RoleId: id }),
  "AWS::Logs::LogGroup": (_, arn) => ({ Arn: `${arn("logs")}:*` }),
  "AWS::KMS::Key": (id, arn) => ({ Arn: arn("kms"), KeyId: id }),
  "AWS::EC2::SecurityGroup": (id) => ({ GroupId: `sg-${id.toLowerCase().slice(0, 17)}` }),
  "AWS::MSK::Cluster": (_, arn) => ({ Arn: arn("kafka") }),
  "AWS::MSK::ServerlessCluster": (_, arn) => ({ Arn: arn("kafka") }),
};

/** A resource with no local effect: reported with its reason, resolvable by `Ref` and `GetAtt`. */
export const materialiseInert: ResourceMaterialiser = (id, r, s) => {
  s.report.inert.push({ logicalId: id, type: r.Type, detail: inertReason(r) ?? "no local effect" });
  const explicit = r.Type === "AWS::IAM::Role" ? r.Properties?.RoleName : undefined;
  const named =
    explicit !== undefined ? resolveString(explicit, s.ctx, `${id}.RoleName`) : `${s.stackName}-${id}`;
  const arn = (service: string): string => {
    switch (service) {
      case "iam":
        return `arn:aws:iam::${s.accountId}:role/${named}`;
      case "logs":
        return `arn:aws:logs:${s.region}:${s.accountId}:log-group:${named}`;
      case "kms":
        return `arn:aws:kms:${s.region}:${s.accountId}:key/${id}`;
      case "kafka":
        return `arn:aws:kafka:${s.region}:${s.accountId}:cluster/local/${id}`;
      default:
        return `arn:aws:local:${s.region}:${s.accountId}:${id}`;
    }
  };
  const msk = r.Type === "AWS::MSK::Cluster" || r.Type === "AWS::MSK::ServerlessCluster";
  return {
    ref: msk ? arn("kafka") : named,
    attrs: INERT_ATTRS[r.Type]?.(id, arn) ?? { Arn: arn("local") },
  };
};
