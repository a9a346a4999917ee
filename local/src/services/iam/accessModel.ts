/**
 * Who may do what, as the synthesized template says: each function's execution role with its
 * policies, and the resource policies AWS evaluates beside them. The local runtime builds it from
 * the template (`materialisers/access.ts`); the gateways evaluate every request against it.
 */
import { createHash } from "node:crypto";

/** An IAM policy document as it appears in a template, intrinsics resolved. */
export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: unknown;
}

export interface NamedPolicy {
  /** Where it came from: `OrderConsumerRoleDefaultPolicy` (template), `AWSLambdaBasicExecutionRole`. */
  readonly name: string;
  readonly document: PolicyDocument;
}

/** The identity a local function's code, and its event source mappings, act as. */
export interface FunctionPrincipal {
  readonly functionName: string;
  readonly functionArn: string;
  /** `aws:cdk:path` of the function, for messages. */
  readonly cdkPath?: string;
  /** `arn:aws:iam::<account>:role/<name>` */
  readonly roleArn: string;
  /** The role's logical id in the template, for messages. */
  readonly roleLogicalId: string;
  /** `arn:aws:sts::<account>:assumed-role/<role name>/<function name>`: the caller AWS sees. */
  readonly sessionArn: string;
  readonly accountId: string;
  readonly policies: readonly NamedPolicy[];
  /** Managed policy ARNs the role names but the local runtime does not know (granting nothing here). */
  readonly unknownManagedPolicies: readonly string[];
  readonly credentials: LocalCredentials;
}

export interface LocalCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

/** A resource policy (queue policy, key policy, function policy) and the template resource it came from. */
export interface ResourcePolicy {
  readonly arn: string;
  readonly logicalId: string;
  readonly document: PolicyDocument;
}

/** A customer-managed KMS key that encrypts a queue or table: SQS and DynamoDB use it as the caller. */
export interface EncryptedResource {
  readonly resourceArn: string;
  readonly keyArn: string;
}

export interface AccessModel {
  readonly accountId: string;
  readonly region: string;
  readonly principals: readonly FunctionPrincipal[];
  /** By resource ARN. */
  readonly resourcePolicies: ReadonlyMap<string, ResourcePolicy>;
  /** By resource ARN (queue or table). */
  readonly encryption: ReadonlyMap<string, EncryptedResource>;
  /** `aws:cdk:path` (construct path) by resource ARN, for the grant advice. */
  readonly constructPaths: ReadonlyMap<string, string>;
}

/**
 * Stable local credentials for a role session: an `ASIA…` key id (temporary credentials, as Lambda
 * hands out) derived from the run's salt and the function name, so two runtimes on one set of
 * emulators never share an identity.
 */
export function localCredentials(salt: string, functionName: string): LocalCredentials {
  const digest = createHash("sha256").update(`${salt}\0${functionName}`).digest();
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let id = "ASIA";
  for (let i = 0; i < 16; i++) id += alphabet[digest[i]! % 32];
  return {
    accessKeyId: id,
    secretAccessKey: digest.subarray(16).toString("base64"),
    sessionToken: `local-session-${digest.subarray(0, 12).toString("hex")}`,
  };
}

/** The access key id a SigV4 `Authorization` header signs with, if any. */
export function accessKeyOf(authorization: string | undefined): string | undefined {
  return authorization ? /Credential=([^/,\s]+)\//.exec(authorization)?.[1] : undefined;
}
