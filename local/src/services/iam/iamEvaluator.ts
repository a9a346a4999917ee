/**
 * IAM decisions for the local gateways: a caller's identity policies and the resource's policy,
 * evaluated by `@cloud-copilot/iam-simulate` (AWS's evaluation logic: explicit deny, then allow by
 * identity or resource policy in one account, conditions with every operator). Decisions are cached
 * per caller, action, resource and context, since a batch repeats the same few questions.
 */
import { MissingPrerequisiteError } from "../../childProcess.ts";
import type { AccessModel, FunctionPrincipal, PolicyDocument } from "./accessModel.ts";

/** One question AWS asks of a request: may this caller do `action` on `resource`? */
export interface AuthzRequest {
  /** `sqs:SendMessage` */
  readonly action: string;
  /** The resource ARN, or `*` when the request names none (ListQueues, GetSchemaVersion by id). */
  readonly resource: string;
  /** Request-specific context keys (`kms:ViaService`...), over the caller's own. */
  readonly context?: Readonly<Record<string, string>>;
}

export type Decision =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      /** How AWS words the reason after "because". */
      readonly reason: "no-identity-policy" | "explicit-deny-identity" | "explicit-deny-resource";
      /** AWS's own message: `User: … is not authorized to perform: … on resource: … because …`. */
      readonly message: string;
    };

type IamSimulate = typeof import("@cloud-copilot/iam-simulate");

let loaded: Promise<IamSimulate> | undefined;

/** iam-simulate is an optional peer dependency (AGPL-3.0): only the local runtime needs it. */
export function loadIamSimulate(): Promise<IamSimulate> {
  loaded ??= import("@cloud-copilot/iam-simulate").catch((error: { code?: string }) => {
    loaded = undefined;
    if (error.code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new MissingPrerequisiteError(
      "IAM enforcement needs the package '@cloud-copilot/iam-simulate' (AGPL-3.0). Install it: " +
        "npm install --save-dev --save-exact @cloud-copilot/iam-simulate@0.1.173, or run with --no-enforce-iam",
    );
  });
  return loaded;
}

const REASON_TEXT: Record<Exclude<Decision, { allowed: true }>["reason"], string> = {
  "no-identity-policy": "no identity-based policy allows the {action} action",
  "explicit-deny-identity": "of an explicit deny in an identity-based policy",
  "explicit-deny-resource": "of an explicit deny in a resource-based policy",
};

/** AWS's wording of a denial (SQS lower-cases the action in its messages; the rest do not). */
export function denialMessage(
  caller: string,
  request: AuthzRequest,
  reason: Exclude<Decision, { allowed: true }>["reason"],
): string {
  const action = request.action.startsWith("sqs:") ? request.action.toLowerCase() : request.action;
  const on = request.resource === "*" ? "" : ` on resource: ${request.resource}`;
  return `User: ${caller} is not authorized to perform: ${action}${on} because ${REASON_TEXT[reason].replace("{action}", action)}`;
}

/** The context AWS fills for an SDK call from a Lambda function's role session. */
export function callerContext(p: FunctionPrincipal, region: string): Record<string, string> {
  return {
    "aws:SecureTransport": "true",
    "aws:PrincipalArn": p.roleArn,
    "aws:PrincipalAccount": p.accountId,
    "aws:PrincipalType": "AssumedRole",
    "aws:userid": `AROALOCAL${p.credentials.accessKeyId.slice(4)}:${p.functionName}`,
    "aws:RequestedRegion": region,
    "aws:ViaAWSService": "false",
    "lambda:SourceFunctionArn": p.functionArn,
  };
}

/** A request that names no resource is allowed only by statements whose Resource is `*`. */
function starOnly(doc: PolicyDocument): PolicyDocument {
  const statements = (Array.isArray(doc.Statement) ? doc.Statement : [doc.Statement]).filter((s) => {
    const st = s as { Resource?: unknown; NotResource?: unknown };
    const resources = st.Resource === undefined ? [] : [st.Resource].flat();
    return st.NotResource !== undefined || resources.includes("*");
  });
  return { Version: doc.Version ?? "2012-10-17", Statement: statements };
}

export interface IamEvaluator {
  authorize(caller: FunctionPrincipal, request: AuthzRequest): Promise<Decision>;
  /** The same question for a service principal (`events.amazonaws.com` invoking a function). */
  authorizeService(
    service: string,
    request: AuthzRequest & { readonly context: Readonly<Record<string, string>> },
  ): Promise<Decision>;
}

export async function createIamEvaluator(access: AccessModel): Promise<IamEvaluator> {
  const sim = await loadIamSimulate();
  const cache = new Map<string, Promise<Decision>>();

  async function evaluate(
    principal: string,
    identity: readonly { name: string; document: PolicyDocument }[],
    request: AuthzRequest,
    context: Record<string, string>,
  ): Promise<Decision> {
    const [service, name] = request.action.split(":") as [string, string];
    const noResource = request.resource === "*" && !(await sim.isWildcardOnlyAction(service, name));
    const resourcePolicy = access.resourcePolicies.get(request.resource)?.document;
    const result = await sim.runSimulation(
      {
        identityPolicies: identity.map((p) => ({
          name: p.name,
          policy: (noResource ? starOnly(p.document) : p.document) as never,
        })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        ...(resourcePolicy ? { resourcePolicy: resourcePolicy as never } : {}),
        request: {
          action: request.action,
          principal,
          resource: { resource: request.resource, accountId: access.accountId },
          contextVariables: context,
        },
      },
      {},
    );
    if (result.resultType === "error")
      throw new Error(
        `IAM evaluation of ${request.action} on ${request.resource} failed: ${JSON.stringify(result.errors)}`,
      );
    if (result.overallResult === "Allowed") return { allowed: true };
    const reason =
      result.overallResult !== "ExplicitlyDenied"
        ? "no-identity-policy"
        : explicitlyDeniedByResource(result)
          ? "explicit-deny-resource"
          : "explicit-deny-identity";
    return { allowed: false, reason, message: denialMessage(principal, request, reason) };
  }

  const cached = (key: string, run: () => Promise<Decision>) => {
    let d = cache.get(key);
    if (!d) {
      d = run();
      cache.set(key, d);
      d.catch(() => cache.delete(key));
    }
    return d;
  };

  return {
    authorize(caller, request) {
      const context = { ...callerContext(caller, access.region), ...request.context };
      const key = `${caller.sessionArn}\0${request.action}\0${request.resource}\0${JSON.stringify(request.context ?? {})}`;
      return cached(key, () => evaluate(caller.sessionArn, caller.policies, request, context));
    },
    authorizeService(service, request) {
      const key = `${service}\0${request.action}\0${request.resource}\0${JSON.stringify(request.context)}`;
      return cached(key, () => evaluate(service, [], request, { ...request.context }));
    },
  };
}

/** Whether the resource policy holds the explicit deny (for AWS's wording of the reason). */
function explicitlyDeniedByResource(result: unknown): boolean {
  const analysis = (result as { result?: { analysis?: { resourceAnalysis?: { result?: string } } } }).result
    ?.analysis;
  return analysis?.resourceAnalysis?.result === "ExplicitlyDenied";
}
