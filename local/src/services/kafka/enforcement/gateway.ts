/**
 * Kafka with MSK's IAM semantics, in front of the local broker: functions reach Kafka through this
 * gateway with their own MSK IAM token (SASL OAUTHBEARER from aws-msk-iam-sasl-signer-js, as on
 * MSK), and every request is checked as MSK checks it (`kafka-cluster:*` on the cluster, topic,
 * group and transactional-id ARNs, kafkaAuthz.ts) before it reaches the broker. A refused request
 * gets Kafka's own error codes, per topic where Kafka answers per topic. The broker itself stays
 * plaintext and unauthenticated; the runtime's own tools talk to it directly.
 *
 * Why a protocol gateway and not a broker plugin: the same check then stands in front of the
 * librdkafka mock (the default of `reliable-consumers local`) and of a real broker, and the code
 * under test cannot reach the broker around it (its KAFKA_BROKERS name only the gateway). The
 * gateway offers only the APIs and versions it can read (it caps the broker's ApiVersions).
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import type { DenialLog } from "../../../enforcement/denials.ts";
import type { FunctionPrincipal } from "../../iam/accessModel.ts";
import { grantAdvice } from "../../iam/grantAdvice.ts";
import type { IamEvaluator } from "../../iam/iamEvaluator.ts";
import { type KafkaArns, type KafkaQuestion, kafkaArns, kafkaQuestions, kafkaVerdict } from "./authz.ts";
import { API, GATEWAY_VERSIONS, KAFKA_ERROR, REQUESTS, RESPONSES } from "./messages.ts";
import {
  decode,
  encode,
  frame,
  frameSplitter,
  type Message,
  readRequestHeader,
  responseFrame,
  WireReader,
  WireWriter,
} from "./wire.ts";

export interface KafkaGatewayOptions {
  /** The broker(s) behind the gateway, `host:port`. */
  readonly upstream: readonly string[];
  /** The MSK cluster the local Kafka stands in for (known once the app is): it roots every topic and group ARN. */
  readonly clusterArn: () => string;
  readonly denials: DenialLog;
  /** The function an MSK IAM token's access key belongs to (undefined: an administrator). */
  readonly principalOf: (accessKeyId: string) => FunctionPrincipal | undefined;
  /** The evaluator, once the app is known (undefined: nothing is checked). */
  readonly evaluator: () => IamEvaluator | undefined;
  /** How to reach a broker (a chaos proxy may stand in between). @default net.connect */
  readonly dial?: (host: string, port: number) => Socket;
  /** Construct paths by ARN, for the grant advice. */
  readonly constructPaths?: () => ReadonlyMap<string, string>;
}

export interface KafkaGateway {
  /** `127.0.0.1:<port>` per upstream bootstrap broker: what functions get as KAFKA_BROKERS. */
  readonly brokers: readonly string[];
  stop(): Promise<void>;
}

interface Slot {
  readonly correlationId: number;
  readonly apiKey: number;
  readonly apiVersion: number;
  /** The answer, once known (the broker's, rewritten, or the gateway's own). */
  ready?: Buffer;
  /** Topics refused here, added to the broker's answer. */
  readonly denied?: Message[];
}

/** The MSK IAM token's access key: a base64url presigned URL whose X-Amz-Credential names it. */
export function accessKeyOfToken(authBytes: Buffer): string | undefined {
  // GS2 header, then `auth=Bearer <token>`, fields separated by \x01 (RFC 7628).
  const field = authBytes
    .toString("utf8")
    .split(String.fromCharCode(1))
    .find((f) => f.startsWith("auth=Bearer "));
  const token = field?.slice("auth=Bearer ".length);
  if (!token) return undefined;
  try {
    const url = new URL(Buffer.from(token, "base64url").toString("utf8"));
    return url.searchParams.get("X-Amz-Credential")?.split("/")[0] ?? undefined;
  } catch {
    return undefined;
  }
}

const splitHostPort = (hostPort: string) => {
  const at = hostPort.lastIndexOf(":");
  return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
};

export async function startKafkaGateway(options: KafkaGatewayOptions): Promise<KafkaGateway> {
  let arns: KafkaArns | undefined;
  const arnsNow = () => {
    const cluster = options.clusterArn();
    if (arns?.cluster !== cluster) arns = kafkaArns(cluster);
    return arns;
  };
  const dial = options.dial ?? ((host: string, port: number) => tcpConnect({ host, port }));
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  /** Upstream `host:port` → the gateway's listener for it. */
  const listeners = new Map<string, Promise<number>>();

  function listenerFor(upstream: string): Promise<number> {
    let port = listeners.get(upstream);
    if (!port) {
      port = new Promise<number>((resolve, reject) => {
        const server = createServer((client) => serve(client, upstream));
        server.on("error", reject);
        server.listen(0, "127.0.0.1", () => {
          server.unref();
          resolve((server.address() as { port: number }).port);
        });
        servers.push(server);
      });
      listeners.set(upstream, port);
    }
    return port;
  }

  /** Advertised brokers → the gateway's listeners, so clients never reach a broker directly. */
  async function localAddress(host: string, port: number): Promise<{ host: string; port: number }> {
    return { host: "127.0.0.1", port: await listenerFor(`${host}:${port}`) };
  }

  function record(caller: FunctionPrincipal, d: KafkaQuestion, message: string) {
    options.denials.record({
      at: Date.now(),
      functionName: caller.functionName,
      action: d.action,
      resource: d.resource,
      message,
      advice: grantAdvice(d.action, d.resource, options.constructPaths?.().get(d.resource)),
    });
  }

  function serve(client: Socket, upstream: string) {
    sockets.add(client);
    const { host, port } = splitHostPort(upstream);
    const broker = dial(host, port);
    sockets.add(broker);
    const slots: Slot[] = [];
    let caller: FunctionPrincipal | undefined;
    let closeAfterFlush = false;
    const close = () => {
      client.destroy();
      broker.destroy();
      sockets.delete(client);
      sockets.delete(broker);
    };
    // Nothing is answered before the broker is reached, SASL included (the gateway answers that
    // itself): a broker that is down must look down. A refused dial resets the client, which a
    // client reads as a connection error, as it would read a refused connect, and so tries another
    // broker; a close in the middle of SASL would read as a failed authentication, which kafkajs
    // never retries (a consumer of a dead broker's listener then rejoined without end).
    let chain = new Promise<void>((resolve) => {
      if (!broker.connecting) return resolve();
      broker.once("connect", () => resolve());
    });
    client.on("error", close).on("close", close);
    broker.on("close", close).on("error", () => {
      if (!client.destroyed) client.resetAndDestroy();
      close();
    });

    const flush = () => {
      while (slots[0]?.ready) client.write(slots.shift()!.ready!);
      if (closeAfterFlush && slots.length === 0) client.end();
    };
    const answer = (slot: Slot, body: Message) => {
      slot.ready = responseFrame(
        slot.correlationId,
        encode(RESPONSES[slot.apiKey]!, slot.apiVersion, body).toBuffer(),
      );
      flush();
    };

    async function onRequest(raw: Buffer) {
      const r = new WireReader(raw);
      const h = readRequestHeader(r);
      const range = GATEWAY_VERSIONS[h.apiKey];
      if (h.apiKey === API.ApiVersions && range && h.apiVersion > range[1]) {
        // A client newer than the gateway asks first with a flexible version: Kafka's answer is v0
        // with UNSUPPORTED_VERSION and the versions it may retry with.
        const slot = push(h, 0);
        answer(slot, {
          errorCode: KAFKA_ERROR.UNSUPPORTED_VERSION,
          apiKeys: [{ apiKey: API.ApiVersions, minVersion: 0, maxVersion: range[1] }],
        });
        return;
      }
      if (!range || h.apiVersion < range[0] || h.apiVersion > range[1]) {
        // Never offered (ApiVersions is capped): forwarding it unread would bypass the checks.
        process.emitWarning(`local Kafka gateway: API ${h.apiKey} v${h.apiVersion} is not offered; closing`);
        close();
        return;
      }
      const request = decode(REQUESTS[h.apiKey] ?? [], h.apiVersion, r);
      if (h.apiKey === API.SaslHandshake) {
        const ok = request.mechanism === "OAUTHBEARER";
        answer(push(h), {
          errorCode: ok ? KAFKA_ERROR.NONE : KAFKA_ERROR.UNSUPPORTED_SASL_MECHANISM,
          mechanisms: ["OAUTHBEARER"],
        });
        return;
      }
      if (h.apiKey === API.SaslAuthenticate) return authenticate(h, request.authBytes as Buffer);
      const evaluator = options.evaluator();
      if (!caller || !evaluator) return forward(push(h), raw);
      const questions = kafkaQuestions(h.apiKey, request, arnsNow());
      const denied = new Set<KafkaQuestion>();
      for (const question of questions) {
        const decision = await evaluator.authorize(caller, question);
        if (!decision.allowed) {
          denied.add(question);
          record(caller, question, decision.message);
        }
      }
      const verdict = kafkaVerdict(h.apiKey, request, denied);
      const noAnswer = h.apiKey === API.Produce && Number(request.acks) === 0;
      if (verdict.kind === "forward") return forward(noAnswer ? undefined : push(h), raw);
      if (verdict.kind === "answer") {
        if (!noAnswer) answer(push(h), verdict.response);
        return;
      }
      const headerBytes = new WireWriter()
        .int16(h.apiKey)
        .int16(h.apiVersion)
        .int32(h.correlationId)
        .nstring(h.clientId)
        .toBuffer();
      const body = encode(REQUESTS[h.apiKey]!, h.apiVersion, verdict.request).toBuffer();
      forward(
        noAnswer ? undefined : push(h, h.apiVersion, verdict.denied),
        Buffer.concat([headerBytes, body]),
      );
    }

    function push(
      h: { correlationId: number; apiKey: number; apiVersion: number },
      version = h.apiVersion,
      denied?: Message[],
    ) {
      const slot: Slot = {
        correlationId: h.correlationId,
        apiKey: h.apiKey,
        apiVersion: version,
        ...(denied ? { denied } : {}),
      };
      slots.push(slot);
      return slot;
    }

    async function authenticate(h: ReturnType<typeof readRequestHeader>, authBytes: Buffer) {
      const slot = push(h);
      const key = accessKeyOfToken(authBytes);
      const evaluator = options.evaluator();
      const who = key ? options.principalOf(key) : undefined;
      if (!key) {
        closeAfterFlush = true;
        return answer(slot, {
          errorCode: KAFKA_ERROR.SASL_AUTHENTICATION_FAILED,
          errorMessage: "Invalid MSK IAM token",
          authBytes: Buffer.alloc(0),
          sessionLifetimeMs: 0n,
        });
      }
      if (who && evaluator) {
        const connect: KafkaQuestion = { action: "kafka-cluster:Connect", resource: arnsNow().cluster };
        const decision = await evaluator.authorize(who, connect);
        if (!decision.allowed) {
          record(who, connect, decision.message);
          closeAfterFlush = true;
          return answer(slot, {
            errorCode: KAFKA_ERROR.SASL_AUTHENTICATION_FAILED,
            errorMessage: `[${h.correlationId}] Access denied: ${decision.message}`,
            authBytes: Buffer.alloc(0),
            sessionLifetimeMs: 0n,
          });
        }
      }
      caller = who;
      // No session lifetime: the local token is not re-checked mid-connection.
      answer(slot, {
        errorCode: KAFKA_ERROR.NONE,
        errorMessage: null,
        authBytes: Buffer.alloc(0),
        sessionLifetimeMs: 0n,
      });
    }

    /** To the broker; `slot` (already queued) receives its answer, none for acks=0. */
    function forward(_slot: Slot | undefined, request: Buffer) {
      broker.write(frame(request));
    }

    async function onResponse(raw: Buffer) {
      const correlationId = raw.readInt32BE(0);
      const slot = slots.find((s) => s.correlationId === correlationId && !s.ready);
      if (!slot) return; // an answer to nothing we forwarded
      const body = raw.subarray(4);
      slot.ready = responseFrame(correlationId, await rewrite(slot, body));
      flush();
    }

    /** The broker's answer as the client may see it: capped versions, the gateway's addresses, refused topics. */
    async function rewrite(slot: Slot, body: Buffer): Promise<Buffer> {
      const schema = RESPONSES[slot.apiKey];
      const needs =
        slot.apiKey === API.ApiVersions ||
        slot.apiKey === API.Metadata ||
        slot.apiKey === API.FindCoordinator ||
        slot.denied !== undefined;
      if (!schema || !needs) return body;
      const m = decode(schema, slot.apiVersion, new WireReader(body));
      if (slot.apiKey === API.ApiVersions) m.apiKeys = cappedApis(m.apiKeys as Message[]);
      if (slot.apiKey === API.Metadata)
        for (const b of (m.brokers as Message[]) ?? [])
          Object.assign(b, await localAddress(String(b.host), Number(b.port)));
      if (slot.apiKey === API.FindCoordinator && Number(m.port) > 0)
        Object.assign(m, await localAddress(String(m.host), Number(m.port)));
      if (slot.denied) m.topics = [...((m.topics as Message[]) ?? []), ...slot.denied];
      return encode(schema, slot.apiVersion, m).toBuffer();
    }

    const fromClient = frameSplitter((f) => {
      chain = chain
        .then(() => onRequest(f))
        .catch((error: Error) => {
          process.emitWarning(`local Kafka gateway: ${error.message}`);
          close();
        });
    });
    const fromBroker = frameSplitter((f) => {
      chain = chain
        .then(() => onResponse(f))
        .catch((error: Error) => {
          process.emitWarning(`local Kafka gateway: ${error.message}`);
          close();
        });
    });
    client.on("data", fromClient);
    broker.on("data", fromBroker);
  }

  const brokers = await Promise.all(options.upstream.map(async (u) => `127.0.0.1:${await listenerFor(u)}`));
  return {
    brokers,
    async stop() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/** The broker's APIs, capped to what the gateway reads; SASL always offered (the gateway answers it). */
function cappedApis(apis: Message[]): Message[] {
  const out: Message[] = [];
  const seen = new Set<number>();
  for (const a of apis) {
    const mine = GATEWAY_VERSIONS[Number(a.apiKey)];
    if (!mine) continue;
    const min = Math.max(mine[0], Number(a.minVersion));
    const max = Math.min(mine[1], Number(a.maxVersion));
    if (min > max) continue;
    out.push({ apiKey: a.apiKey, minVersion: min, maxVersion: max });
    seen.add(Number(a.apiKey));
  }
  for (const key of [API.SaslHandshake, API.SaslAuthenticate])
    if (!seen.has(key))
      out.push({ apiKey: key, minVersion: GATEWAY_VERSIONS[key]![0], maxVersion: GATEWAY_VERSIONS[key]![1] });
  return out;
}
