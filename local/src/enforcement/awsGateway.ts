/**
 * The enforcing gateway in front of the emulators: every SQS, DynamoDB, DynamoDB Streams, Glue and
 * Secrets Manager call of the local runtime passes here. For a call signed with a function's
 * credentials it asks IAM what AWS would ask (`*Requests.ts`) and answers a denial in the service's
 * own shape; for every caller it checks the quotas the emulators let through; then it forwards the
 * call unchanged. Queue URLs it hands out name this gateway on 127.0.0.1, so they work as printed
 * with any SDK client. The code under test never knows it is here.
 */
import { Agent, createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type AccessModel, accessKeyOf, type FunctionPrincipal } from "../services/iam/accessModel.ts";
import { grantAdvice } from "../services/iam/grantAdvice.ts";
import type { AuthzRequest, IamEvaluator } from "../services/iam/iamEvaluator.ts";
import type { GatewayContext, GatewayRoute } from "../services/localService.ts";
import { SERVICES } from "../services/registry.ts";
import { type BatchEntryFailure, batchEntryFailures, sqsQuota } from "../services/sqs/enforcement.ts";
import type { DenialLog } from "./denials.ts";
import { accessDenied, type GatewayService, renderServiceError, type ServiceError } from "./serviceError.ts";

export interface GatewayUpstreams {
  readonly sqs?: string;
  readonly dynamodb?: string;
  readonly streams?: string;
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

/** How the gateway names the resources of a request, as the materialised app has them. */
export interface GatewayArns {
  tableArn(name: string): string;
}

/** Every AWS JSON protocol a service of the registry forwards, by its `X-Amz-Target` prefix. */
const ROUTES: readonly GatewayRoute[] = SERVICES.flatMap((service) => service.gateway ?? []);

/** SQS calls whose answers carry queue URLs, rewritten to name the gateway. */
const URL_ANSWERS = new Set(["CreateQueue", "GetQueueUrl", "ListQueues", "ListDeadLetterSourceQueues"]);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Which service and operation a request is: the JSON protocols' target, else SQS's query protocol. */
function classify(
  req: IncomingMessage,
  body: Buffer,
): { service: GatewayService; operation: string; json: Record<string, unknown> } | undefined {
  const target = String(req.headers["x-amz-target"] ?? "");
  for (const { targetPrefix: prefix, service } of ROUTES) {
    if (!target.startsWith(prefix)) continue;
    let json: Record<string, unknown> = {};
    try {
      json = body.length ? (JSON.parse(body.toString("utf8")) as Record<string, unknown>) : {};
    } catch {
      // Malformed JSON: the emulator answers it in its own words.
    }
    return { service, operation: target.slice(prefix.length), json };
  }
  const form = new URLSearchParams(body.toString("utf8"));
  const action = form.get("Action");
  if (!action) return undefined;
  return { service: "sqs", operation: action, json: Object.fromEntries(form) };
}

export async function startAwsGateway(options: AwsGatewayOptions): Promise<AwsGateway> {
  const now = options.now ?? Date.now;
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const counts: Record<GatewayService, number> = {
    sqs: 0,
    dynamodb: 0,
    streams: 0,
    glue: 0,
    secretsmanager: 0,
  };
  const operations = new Map<string, number>();
  /** Receipt handle → when SQS handed it out (12 h visibility limit). */
  const received = new Map<string, number>();
  /** Queue path (`/<account>/<name>`) → the URL the emulator gave it. */
  const upstreamUrls = new Map<string, string>();
  let enforcement:
    | {
        access: AccessModel;
        evaluator: IamEvaluator;
        byKey: Map<string, FunctionPrincipal>;
        arns: GatewayArns;
      }
    | undefined;
  let origin = "";

  // `/<account>/<name>` (fauxqs, SQS) or `/queue/<region>/<account>/<name>` (LocalStack's paths).
  const queueArnOfUrl = (url: string) => {
    const parts = new URL(url).pathname.split("/").filter(Boolean);
    const [account = options.accountId, name = ""] = parts.slice(-2);
    return `arn:aws:sqs:${options.region}:${account}:${name}`;
  };
  const queueArnOfName = (name: string, account = options.accountId) =>
    `arn:aws:sqs:${options.region}:${account}:${name}`;

  function authzOf(
    service: GatewayService,
    operation: string,
    json: Record<string, unknown>,
  ): AuthzRequest[] {
    const e = enforcement!;
    const ctx: GatewayContext = {
      region: options.region,
      accountId: options.accountId,
      queueArnOfUrl,
      queueArnOfName,
      tableArn: e.arns.tableArn,
      keyOf: (arn) => e.access.encryption.get(arn)?.keyArn,
    };
    return ROUTES.find((r) => r.service === service)?.authz(operation, json, ctx) ?? [];
  }

  /** The first denial among the request's IAM questions, recorded with its grant advice. */
  async function denial(
    caller: FunctionPrincipal,
    service: GatewayService,
    operation: string,
    json: Record<string, unknown>,
  ): Promise<ServiceError | undefined> {
    const e = enforcement!;
    for (const question of authzOf(service, operation, json)) {
      const decision = await e.evaluator.authorize(caller, question);
      if (decision.allowed) continue;
      options.denials.record({
        at: now(),
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
  }

  function reply(res: ServerResponse, service: GatewayService, error: ServiceError) {
    const r = renderServiceError(service, error);
    res.writeHead(r.status, { ...r.headers, "content-length": Buffer.byteLength(r.body) });
    res.end(r.body);
  }

  /** The request's QueueUrl back in the emulator's own form (LocalStack reads its host). */
  function upstreamBody(json: Record<string, unknown>, body: Buffer, upstream: string): Buffer {
    if (typeof json.QueueUrl !== "string" || !json.QueueUrl.startsWith(origin)) return body;
    const path = new URL(json.QueueUrl).pathname;
    json.QueueUrl = upstreamUrls.get(path) ?? new URL(path, upstream).toString();
    return Buffer.from(JSON.stringify(json));
  }

  /**
   * Queue URLs in an answer name the gateway, whatever host the emulator put in them (fauxqs names
   * `sqs.<region>.localhost`, which does not resolve; LocalStack its own address, which a stock
   * client would then reach around the checks); the emulator's own URL is kept for the way back.
   */
  function rewriteUrls(text: string): string {
    let answer: { QueueUrl?: unknown; QueueUrls?: unknown; queueUrls?: unknown };
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      return text; // an error page: nothing to rewrite
    }
    const local = (url: unknown) => {
      if (typeof url !== "string" || !/^https?:\/\//.test(url)) return url;
      const path = new URL(url).pathname;
      upstreamUrls.set(path, url);
      return `${origin}${path}`;
    };
    if (answer.QueueUrl !== undefined) answer.QueueUrl = local(answer.QueueUrl);
    if (Array.isArray(answer.QueueUrls)) answer.QueueUrls = answer.QueueUrls.map(local);
    // ListDeadLetterSourceQueues spells it in lower case.
    if (Array.isArray(answer.queueUrls)) answer.queueUrls = answer.queueUrls.map(local);
    return JSON.stringify(answer);
  }

  function rememberReceipts(text: string) {
    const t = now();
    for (const m of text.matchAll(/"ReceiptHandle"\s*:\s*"([^"]+)"/g)) received.set(m[1]!, t);
    if (received.size > 200_000) for (const [h, at] of received) if (t - at > 43_200_000) received.delete(h);
  }

  async function handle(req: IncomingMessage, res: ServerResponse, upstreams: GatewayUpstreams) {
    let body = await readBody(req);
    const what = classify(req, body);
    const service = what?.service ?? "sqs";
    counts[service]++;
    if (what) {
      const op = `${service}:${what.operation}`;
      operations.set(op, (operations.get(op) ?? 0) + 1);
    }
    const upstream = upstreams[service];
    if (!upstream) {
      reply(res, service, {
        status: 400,
        code: "UnrecognizedClientException",
        message: `${service} is not emulated locally`,
      });
      return;
    }
    const caller = enforcement?.byKey.get(accessKeyOf(req.headers.authorization) ?? "");
    let localFailures: BatchEntryFailure[] = [];
    if (what) {
      if (caller) {
        const denied = await denial(caller, what.service, what.operation, what.json);
        if (denied) return reply(res, service, denied);
      }
      if (service === "sqs") {
        const quota = sqsQuota(what.operation, what.json, (h) => received.get(h), now());
        if (quota) return reply(res, service, quota);
        localFailures = batchEntryFailures(what.operation, what.json, (h) => received.get(h), now());
        if (localFailures.length) {
          const failed = new Set(localFailures.map((f) => f.Id));
          what.json.Entries = (what.json.Entries as Array<{ Id: string }>).filter((e) => !failed.has(e.Id));
          if ((what.json.Entries as unknown[]).length === 0) {
            const text = JSON.stringify({ Successful: [], Failed: localFailures });
            res.writeHead(200, {
              "content-type": "application/x-amz-json-1.0",
              "content-length": Buffer.byteLength(text),
            });
            return res.end(text);
          }
          body = Buffer.from(JSON.stringify(what.json));
        }
        if (req.headers["x-amz-target"]) body = upstreamBody(what.json, body, upstream);
      }
    }
    forward(req, res, body, upstream, service === "sqs" ? what?.operation : undefined, localFailures);
  }

  function forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    upstream: string,
    sqsOperation: string | undefined,
    localFailures: BatchEntryFailure[],
  ) {
    const target = new URL(req.url ?? "/", upstream);
    const headers = { ...req.headers, host: target.host, "content-length": String(body.length) };
    const out = request(target, { method: req.method, headers, agent }, (up) => {
      const rewrite =
        sqsOperation !== undefined &&
        (URL_ANSWERS.has(sqsOperation) || sqsOperation === "ReceiveMessage" || localFailures.length > 0);
      if (!rewrite) {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        return;
      }
      readBody(up).then(
        (raw) => {
          let text = raw.toString("utf8");
          if (sqsOperation === "ReceiveMessage") rememberReceipts(text);
          else if (URL_ANSWERS.has(sqsOperation!)) text = rewriteUrls(text);
          if (localFailures.length && up.statusCode === 200) {
            const merged = JSON.parse(text) as { Failed?: unknown[] };
            merged.Failed = [...(merged.Failed ?? []), ...localFailures];
            text = JSON.stringify(merged);
          }
          const { "transfer-encoding": _, ...rest } = up.headers;
          res.writeHead(up.statusCode ?? 502, { ...rest, "content-length": Buffer.byteLength(text) });
          res.end(text);
        },
        (error: Error) => res.destroy(error),
      );
    });
    out.on("error", (error) => {
      // The emulator is gone (a chaos test killed it): the caller sees a dropped connection, as it would.
      res.destroy(error);
    });
    out.end(body);
  }

  const listen = async (upstreams: GatewayUpstreams) => {
    const server = createServer((req, res) => {
      handle(req, res, upstreams).catch((error: Error) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`local gateway error: ${error.message}`);
      });
    });
    // Long polls (20 s) and slow emulators: no server-side timeouts of our own.
    server.requestTimeout = 0;
    server.headersTimeout = 0;
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    server.unref();
    return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  };
  const runtimeSide = await listen(options.upstreams);
  const functionSide = await listen({ ...options.upstreams, ...options.functionUpstreams });
  origin = runtimeSide.origin;
  return {
    endpoint: origin,
    functionEndpoint: functionSide.origin,
    counts,
    operations,
    enforce(access, evaluator, arns) {
      enforcement = {
        access,
        evaluator,
        arns,
        byKey: new Map(access.principals.map((p) => [p.credentials.accessKeyId, p])),
      };
    },
    async stop() {
      await Promise.all(
        [runtimeSide.server, functionSide.server].map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
      agent.destroy();
    },
  };
}
