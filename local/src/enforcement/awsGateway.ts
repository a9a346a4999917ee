/**
 * The enforcing gateway in front of the emulators: every SQS, DynamoDB, DynamoDB Streams, Glue and
 * Secrets Manager call of the local runtime passes here. For a call signed with a function's
 * credentials it asks IAM what AWS would ask (gatewayIam.ts, each service's `authz`) and answers a
 * denial in the service's own shape; for every caller it checks the quotas the emulators let
 * through (sqs/gatewayStages.ts); then it forwards the call unchanged (gatewayHttp.ts). Queue URLs
 * it hands out name this gateway on 127.0.0.1, so they work as printed with any SDK client. The
 * code under test never knows it is here.
 */
import { Agent, type IncomingMessage, type ServerResponse } from "node:http";
import type { AccessModel } from "../services/iam/accessModel.ts";
import type { IamEvaluator } from "../services/iam/iamEvaluator.ts";
import { type KinesisGatewayStage, kinesisGatewayStage } from "../services/kinesis/enforcement.ts";
import { type SqsGatewayStages, sqsGatewayStages } from "../services/sqs/gatewayStages.ts";
import type { DenialLog } from "./denials.ts";
import {
  type AnswerRewrite,
  closeGateway,
  forwardRequest,
  listenGateway,
  readBody,
  replyError,
  replyJson,
} from "./gatewayHttp.ts";
import { createGatewayIam, type GatewayArns, type GatewayIam } from "./gatewayIam.ts";
import { classifyRequest } from "./gatewayRoutes.ts";
import type { GatewayService } from "./serviceError.ts";

export type { GatewayArns } from "./gatewayIam.ts";

export interface GatewayUpstreams {
  readonly sqs?: string;
  readonly dynamodb?: string;
  readonly streams?: string;
  readonly kinesis?: string;
  readonly glue?: string;
  readonly secretsmanager?: string;
}

export interface AwsGatewayOptions {
  /** The emulators, for the runtime's own calls (materialisation, the mappings' pollers, tools). */
  readonly upstreams: GatewayUpstreams;
  /**
   * Where the functions' own calls go after the checks (a chaos fault proxy in front of the
   * emulators). @default upstreams
   */
  readonly functionUpstreams?: GatewayUpstreams;
  readonly region: string;
  readonly accountId: string;
  readonly denials: DenialLog;
  /** @default Date.now (tests move it to reach SQS's 12 h visibility limit) */
  readonly now?: () => number;
}

export interface AwsGateway {
  /** `http://127.0.0.1:<port>`: for the runtime's own clients and tools; the queue URLs name it. */
  readonly endpoint: string;
  /** `http://127.0.0.1:<port>`: the functions' endpoint (same checks; `functionUpstreams` behind it). */
  readonly functionEndpoint: string;
  /** Whom to enforce from now on: the app's access model and its evaluator (`undefined`: nobody). */
  enforce(access: AccessModel, evaluator: IamEvaluator, arns: GatewayArns): void;
  /** Requests seen, by service (for the overhead figures). */
  readonly counts: Readonly<Record<GatewayService, number>>;
  /** Requests seen, by `service:Operation` (where an emulator's load comes from). */
  readonly operations: ReadonlyMap<string, number>;
  stop(): Promise<void>;
}

/** The stages every request goes through, shared by the gateway's two listeners. */
interface GatewayStages {
  readonly tally: (service: GatewayService, operation: string | undefined) => void;
  readonly iam: GatewayIam;
  readonly sqs: SqsGatewayStages;
  readonly kinesis: KinesisGatewayStage;
  readonly agent: Agent;
}

/**
 * One request through the stages: classified and counted; refused when the service is not emulated,
 * when IAM denies the calling function, or (SQS) when it breaks a quota the emulator lets through;
 * else forwarded to `upstreams`, its answer rewritten where SQS's stage asks.
 */
async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  upstreams: GatewayUpstreams,
  stages: GatewayStages,
): Promise<void> {
  let body = await readBody(req);
  const target = req.headers["x-amz-target"];
  const what = classifyRequest(String(target ?? ""), body);
  const service = what?.service ?? "sqs";
  stages.tally(service, what?.operation);
  const upstream = upstreams[service];
  if (!upstream)
    return replyError(res, service, {
      status: 400,
      code: "UnrecognizedClientException",
      message: `${service} is not emulated locally`,
    });
  const caller = stages.iam.callerOf(req.headers.authorization);
  let rewrite: AnswerRewrite | undefined;
  if (what) {
    if (caller) {
      const denied = await stages.iam.denial(caller, what);
      if (denied) return replyError(res, service, denied);
    }
    if (service === "sqs") {
      const screened = stages.sqs.screen(what.operation, what.json, body, upstream, Boolean(target));
      if (screened.kind === "refuse") return replyError(res, service, screened.error);
      if (screened.kind === "answer") return replyJson(res, screened.text);
      body = screened.body;
      rewrite = stages.sqs.answer(what.operation, screened.failed);
    }
    if (service === "kinesis") rewrite = stages.kinesis.answer(what.operation, what.json);
  }
  forwardRequest(req, res, body, upstream, stages.agent, rewrite);
}

/**
 * Starts the gateway: two listeners on 127.0.0.1 with the same checks, one for the runtime's own
 * calls (to `upstreams`) and one for the functions' (to `functionUpstreams`).
 */
export async function startAwsGateway(options: AwsGatewayOptions): Promise<AwsGateway> {
  const now = options.now ?? Date.now;
  const counts: Record<GatewayService, number> = {
    sqs: 0,
    dynamodb: 0,
    streams: 0,
    kinesis: 0,
    glue: 0,
    secretsmanager: 0,
  };
  const operations = new Map<string, number>();
  let origin = "";
  const kinesis = kinesisGatewayStage(options.region, options.accountId);
  const stages: GatewayStages = {
    tally(service, operation) {
      counts[service]++;
      if (operation === undefined) return;
      const op = `${service}:${operation}`;
      operations.set(op, (operations.get(op) ?? 0) + 1);
    },
    iam: createGatewayIam({ ...options, now, iteratorStream: (it) => kinesis.iterators.streamOf(it) }),
    // Queue URLs name the runtime's listener, whichever listener handed them out.
    sqs: sqsGatewayStages(now, () => origin),
    kinesis,
    agent: new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY }),
  };
  const listen = (upstreams: GatewayUpstreams) =>
    listenGateway((req, res) => handle(req, res, upstreams, stages));
  const runtimeSide = await listen(options.upstreams);
  const functionSide = await listen({ ...options.upstreams, ...options.functionUpstreams });
  origin = runtimeSide.origin;
  return {
    endpoint: origin,
    functionEndpoint: functionSide.origin,
    counts,
    operations,
    enforce: (access, evaluator, arns) => stages.iam.enforce(access, evaluator, arns),
    async stop() {
      await closeGateway([runtimeSide, functionSide]);
      stages.agent.destroy();
    },
  };
}
