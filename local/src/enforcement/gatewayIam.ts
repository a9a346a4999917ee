/**
 * The AWS gateway's IAM stage: for a call signed with a function's credentials, the questions AWS
 * would ask of it (each service's `authz`, from the registry), put to the evaluator; the first
 * denial is recorded with its grant advice and answered as the service answers AccessDenied.
 */
import { type AccessModel, accessKeyOf, type FunctionPrincipal } from "../services/iam/accessModel.ts";
import { grantAdvice } from "../services/iam/grantAdvice.ts";
import type { IamEvaluator } from "../services/iam/iamEvaluator.ts";
import { streamArnOf } from "../services/kinesis/enforcement.ts";
import type { GatewayContext } from "../services/localService.ts";
import { queueArns } from "../services/sqs/queueUrls.ts";
import type { DenialLog } from "./denials.ts";
import type { ClassifiedRequest } from "./gatewayRoutes.ts";
import { GATEWAY_ROUTES } from "./gatewayRoutes.ts";
import { accessDenied, type ServiceError } from "./serviceError.ts";

/** How the gateway names the resources of a request, as the materialised app has them. */
export interface GatewayArns {
  tableArn(name: string): string;
}

/** What the IAM stage is set up with. */
export interface GatewayIamOptions {
  readonly region: string;
  readonly accountId: string;
  /** Where denials are recorded. */
  readonly denials: DenialLog;
  /** The clock denials are stamped with (epoch ms). */
  readonly now: () => number;
  /** The stream a Kinesis shard iterator handed out by the gateway reads. */
  readonly iteratorStream: (iterator: string) => string | undefined;
}

/** The IAM stage of one gateway: nobody is checked until `enforce`. */
export interface GatewayIam {
  /** Whom to enforce from now on: the app's access model and its evaluator. */
  enforce(access: AccessModel, evaluator: IamEvaluator, arns: GatewayArns): void;
  /** The function whose credentials signed a request (its Authorization header), if one did. */
  callerOf(authorization: string | undefined): FunctionPrincipal | undefined;
  /** The first denial among the call's IAM questions (recorded), or `undefined` when all are allowed. */
  denial(caller: FunctionPrincipal, call: ClassifiedRequest): Promise<ServiceError | undefined>;
}

interface Enforcement {
  readonly access: AccessModel;
  readonly evaluator: IamEvaluator;
  readonly byKey: ReadonlyMap<string, FunctionPrincipal>;
  readonly ctx: GatewayContext;
}

/** The IAM stage, enforcing nobody yet. */
export function createGatewayIam(options: GatewayIamOptions): GatewayIam {
  const { region, accountId } = options;
  const queues = queueArns(region, accountId);
  let enforcement: Enforcement | undefined;
  return {
    enforce(access, evaluator, arns) {
      const ctx: GatewayContext = {
        region,
        accountId,
        queueArnOfUrl: queues.queueArnOfUrl,
        queueArnOfName: queues.queueArnOfName,
        tableArn: arns.tableArn,
        streamArnOfName: (name) => streamArnOf(region, accountId, name),
        streamOfIterator: options.iteratorStream,
        keyOf: (arn) => access.encryption.get(arn)?.keyArn,
      };
      const byKey = new Map(access.principals.map((p) => [p.credentials.accessKeyId, p]));
      enforcement = { access, evaluator, byKey, ctx };
    },
    callerOf: (authorization) => enforcement?.byKey.get(accessKeyOf(authorization) ?? ""),
    async denial(caller, { service, operation, json }) {
      const e = enforcement!;
      const route = GATEWAY_ROUTES.find((r) => r.service === service);
      for (const question of route?.authz(operation, json, e.ctx) ?? []) {
        const decision = await e.evaluator.authorize(caller, question);
        if (decision.allowed) continue;
        options.denials.record({
          at: options.now(),
          functionName: caller.functionName,
          action: question.action,
          resource: question.resource,
          message: decision.message,
          advice: grantAdvice(
            question.action,
            question.resource,
            e.access.constructPaths.get(question.resource),
          ),
        });
        return accessDenied(service, decision.message);
      }
      return undefined;
    },
  };
}
