/**
 * The template's IAM, made evaluable: each function's execution role with every policy that
 * attaches to it (inline, `AWS::IAM::Policy`, customer and AWS managed), and the resource policies
 * AWS evaluates beside them (queue policies, key policies, function permissions). Intrinsics resolve
 * to the local names and ARNs, so a statement the CDK scoped to a queue names the local queue.
 */

import type { CfnResource } from "../../runtime/cloudAssembly.ts";
import { resolveString, resolveValue } from "../../runtime/intrinsics.ts";
import type { MaterialiseState } from "../../runtime/materialiseState.ts";
import {
  type AccessModel,
  type EncryptedResource,
  type FunctionPrincipal,
  localCredentials,
  type NamedPolicy,
  type PolicyDocument,
  type ResourcePolicy,
} from "./accessModel.ts";
import { awsManagedPolicy } from "./awsManagedPolicies.ts";

/** The logical id an intrinsic `Ref`/`Fn::GetAtt` points at, if it is one. */
function logicalIdOf(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.Ref === "string") return v.Ref;
  const att = v["Fn::GetAtt"];
  if (Array.isArray(att) && typeof att[0] === "string") return att[0];
  if (typeof att === "string") return att.split(".")[0];
  return undefined;
}

const asList = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** A policy document with each statement resolved on its own: one that cannot resolve locally is dropped with a note. */
function resolvedDocument(raw: unknown, path: string, s: MaterialiseState): PolicyDocument {
  const doc = (raw ?? {}) as { Version?: unknown; Statement?: unknown };
  const statements: unknown[] = [];
  asList(doc.Statement).forEach((statement, i) => {
    try {
      statements.push(resolveValue(statement, s.ctx, `${path}.Statement[${i}]`));
    } catch (error) {
      s.note(`${path}.Statement[${i}] grants nothing locally: ${(error as Error).message}`);
    }
  });
  return { Version: String(doc.Version ?? "2012-10-17"), Statement: statements };
}

/** Every policy that attaches to the role `roleId`: inline, `AWS::IAM::Policy`, managed. */
function rolePolicies(
  roleId: string,
  role: CfnResource,
  s: MaterialiseState,
): { policies: NamedPolicy[]; unknown: string[] } {
  const resources = s.template.Resources ?? {};
  const policies: NamedPolicy[] = [];
  const unknown: string[] = [];
  const p = role.Properties ?? {};
  for (const [i, inline] of asList(p.Policies).entries()) {
    const named = inline as { PolicyName?: unknown; PolicyDocument?: unknown };
    policies.push({
      name: `${roleId}.Policies[${i}]`,
      document: resolvedDocument(named.PolicyDocument, `${roleId}.Policies[${i}]`, s),
    });
  }
  for (const arnValue of asList(p.ManagedPolicyArns)) {
    const id = logicalIdOf(arnValue);
    if (id && resources[id]?.Type === "AWS::IAM::ManagedPolicy") continue; // attached below, by its own Roles
    let arn: string;
    try {
      arn = resolveString(arnValue, s.ctx, `${roleId}.ManagedPolicyArns`);
    } catch (error) {
      s.note(`${roleId}: a managed policy grants nothing locally: ${(error as Error).message}`);
      continue;
    }
    const known = awsManagedPolicy(arn);
    if (known) policies.push(known);
    else unknown.push(arn);
  }
  for (const [id, r] of Object.entries(resources)) {
    const isPolicy = r.Type === "AWS::IAM::Policy" || r.Type === "AWS::IAM::ManagedPolicy";
    if (!isPolicy || (r.Condition && !s.ctx.condition(r.Condition))) continue;
    const attachedHere =
      asList(r.Properties?.Roles).some((x) => logicalIdOf(x) === roleId) ||
      asList(p.ManagedPolicyArns).some((x) => logicalIdOf(x) === id);
    if (attachedHere)
      policies.push({ name: id, document: resolvedDocument(r.Properties?.PolicyDocument, id, s) });
  }
  return { policies, unknown };
}

/** Lambda refuses a role that Lambda may not assume; so does the local runtime, with the reason. */
function trustsLambda(role: CfnResource, s: MaterialiseState): boolean {
  const doc = resolvedDocument(role.Properties?.AssumeRolePolicyDocument, "trust", s);
  return asList(doc.Statement).some((st) => {
    const x = st as { Effect?: string; Principal?: { Service?: unknown }; Action?: unknown };
    return (
      x.Effect === "Allow" &&
      asList(x.Principal?.Service).includes("lambda.amazonaws.com") &&
      asList(x.Action).some((a) => a === "sts:AssumeRole" || a === "sts:*" || a === "*")
    );
  });
}

function principalOf(
  fn: MaterialiseState["functions"][number],
  salt: string,
  s: MaterialiseState,
): FunctionPrincipal {
  const resources = s.template.Resources ?? {};
  const raw = resources[fn.logicalId]?.Properties?.Role;
  const roleId = logicalIdOf(raw);
  const role = roleId ? resources[roleId] : undefined;
  const roleName =
    role?.Properties?.RoleName !== undefined
      ? resolveString(role.Properties.RoleName, s.ctx, `${roleId}.RoleName`)
      : roleId
        ? `${s.stackName}-${roleId}`
        : String(raw ?? "unknown-role").replace(/^.*:role\/(?:.*\/)?/, "");
  const base = {
    functionName: fn.name,
    functionArn: fn.arn,
    ...(fn.cdkPath ? { cdkPath: fn.cdkPath } : {}),
    roleArn: `arn:aws:iam::${s.accountId}:role/${roleName}`,
    roleLogicalId: roleId ?? roleName,
    sessionArn: `arn:aws:sts::${s.accountId}:assumed-role/${roleName}/${fn.name}`,
    accountId: s.accountId,
    credentials: localCredentials(salt, fn.name),
  };
  if (role?.Type !== "AWS::IAM::Role") {
    s.note(`${fn.name}: its role ${String(raw)} is not in the template; it is granted nothing locally`);
    return { ...base, policies: [], unknownManagedPolicies: [] };
  }
  if (!trustsLambda(role, s))
    s.note(`${fn.name}: role ${roleId} does not trust lambda.amazonaws.com; Lambda would refuse it`);
  const { policies, unknown } = rolePolicies(roleId!, role, s);
  for (const arn of unknown)
    s.note(`${fn.name}: managed policy ${arn} is not known locally and grants nothing here`);
  return { ...base, policies, unknownManagedPolicies: unknown };
}

/** `AWS::SQS::QueuePolicy`, `AWS::KMS::Key`, `AWS::Lambda::Permission` → policies by resource ARN. */
function resourcePolicies(s: MaterialiseState): Map<string, ResourcePolicy> {
  const out = new Map<string, ResourcePolicy>();
  const add = (arn: string, logicalId: string, statements: unknown[]) => {
    const prior = out.get(arn);
    const merged = [...(prior ? asList(prior.document.Statement) : []), ...statements];
    out.set(arn, { arn, logicalId, document: { Version: "2012-10-17", Statement: merged } });
  };
  for (const [id, r] of Object.entries(s.template.Resources ?? {})) {
    if (r.Condition && !s.ctx.condition(r.Condition)) continue;
    const p = r.Properties ?? {};
    if (r.Type === "AWS::SQS::QueuePolicy") {
      const doc = resolvedDocument(p.PolicyDocument, id, s);
      for (const q of asList(p.Queues)) {
        const queueId = logicalIdOf(q);
        const queue = s.queues.find((x) => x.logicalId === queueId);
        if (queue) add(queue.arn, id, asList(doc.Statement));
      }
    } else if (r.Type === "AWS::KMS::Key" && p.KeyPolicy !== undefined) {
      add(keyArn(id, s), id, asList(resolvedDocument(p.KeyPolicy, id, s).Statement));
    } else if (r.Type === "AWS::Lambda::Permission") {
      const permission = functionPermission(id, p, s);
      if (permission) add(permission.arn, id, [permission.statement]);
    }
  }
  return out;
}

const keyArn = (id: string, s: MaterialiseState) => `arn:aws:kms:${s.region}:${s.accountId}:key/${id}`;

/** One `AWS::Lambda::Permission` as the statement of the function's resource policy. */
function functionPermission(
  id: string,
  p: Record<string, unknown>,
  s: MaterialiseState,
): { arn: string; statement: unknown } | undefined {
  try {
    const name = resolveString(p.FunctionName, s.ctx, `${id}.FunctionName`);
    const fn = s.functions.find((f) => f.name === name || f.arn === name || name.startsWith(`${f.arn}:`));
    if (!fn) return undefined;
    const principal = resolveString(p.Principal, s.ctx, `${id}.Principal`);
    const conditions: Record<string, Record<string, string>> = {};
    if (p.SourceArn !== undefined)
      conditions.ArnLike = { "aws:SourceArn": resolveString(p.SourceArn, s.ctx, `${id}.SourceArn`) };
    if (p.SourceAccount !== undefined)
      conditions.StringEquals = {
        "aws:SourceAccount": resolveString(p.SourceAccount, s.ctx, `${id}.SourceAccount`),
      };
    return {
      arn: fn.arn,
      statement: {
        Sid: id,
        Effect: "Allow",
        Principal: principal.endsWith(".amazonaws.com") ? { Service: principal } : { AWS: principal },
        Action: resolveString(p.Action, s.ctx, `${id}.Action`),
        Resource: fn.arn,
        ...(Object.keys(conditions).length ? { Condition: conditions } : {}),
      },
    };
  } catch (error) {
    s.note(`${id}: the permission is not evaluated locally: ${(error as Error).message}`);
    return undefined;
  }
}

/** Queues, tables and Kinesis streams encrypted with a customer-managed key of the template. */
function encryptedResources(s: MaterialiseState): Map<string, EncryptedResource> {
  const out = new Map<string, EncryptedResource>();
  const resources = s.template.Resources ?? {};
  const customerKey = (value: unknown): string | undefined => {
    const id = logicalIdOf(value);
    return id && resources[id]?.Type === "AWS::KMS::Key" ? keyArn(id, s) : undefined;
  };
  for (const q of s.queues) {
    const key = customerKey(resources[q.logicalId]?.Properties?.KmsMasterKeyId);
    if (key) out.set(q.arn, { resourceArn: q.arn, keyArn: key });
  }
  for (const k of s.streams) {
    const enc = resources[k.logicalId]?.Properties?.StreamEncryption as { KeyId?: unknown } | undefined;
    const key = customerKey(enc?.KeyId);
    if (key) out.set(k.arn, { resourceArn: k.arn, keyArn: key });
  }
  for (const t of s.tables) {
    const sse = resources[t.logicalId]?.Properties?.SSESpecification as
      | { KMSMasterKeyId?: unknown }
      | undefined;
    const key = customerKey(sse?.KMSMasterKeyId);
    if (key) out.set(t.arn, { resourceArn: t.arn, keyArn: key });
  }
  return out;
}

function constructPaths(s: MaterialiseState): Map<string, string> {
  const resources = s.template.Resources ?? {};
  const out = new Map<string, string>();
  const pathOf = (id: string) => {
    const path = resources[id]?.Metadata?.["aws:cdk:path"];
    return typeof path === "string" ? path.replace(/\/Resource$/, "") : id;
  };
  // A stand-in has no construct in the template (an import adds no resource).
  for (const q of s.queues) if (!q.importedArn) out.set(q.arn, pathOf(q.logicalId));
  for (const t of s.tables) {
    out.set(t.arn, pathOf(t.logicalId));
    if (t.streamArn) out.set(t.streamArn, pathOf(t.logicalId));
  }
  for (const f of s.functions) out.set(f.arn, pathOf(f.logicalId));
  for (const k of s.streams) if (!k.importedArn) out.set(k.arn, pathOf(k.logicalId));
  for (const c of s.streamConsumers) out.set(c.arn, pathOf(c.logicalId));
  return out;
}

/** The access model of everything materialised so far; `salt` keeps this run's credentials its own. */
export function accessModelOf(s: MaterialiseState, salt: string): AccessModel {
  return {
    accountId: s.accountId,
    region: s.region,
    principals: s.functions.map((fn) => principalOf(fn, salt, s)),
    resourcePolicies: resourcePolicies(s),
    encryption: encryptedResources(s),
    constructPaths: constructPaths(s),
  };
}
