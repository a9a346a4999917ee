/**
 * What the gateway does with one request of a client, decided before anything reaches the broker:
 * answer it itself (ApiVersions from a newer client, SASL, a request every topic of which is
 * refused), refuse the connection (an API it does not offer: forwarding it unread would bypass the
 * checks), or forward it, whole or with the refused topics taken out (kafkaAuthz.ts decides).
 */
import type { FunctionPrincipal } from "../../iam/accessModel.ts";
import type { IamEvaluator } from "../../iam/iamEvaluator.ts";
import { type KafkaArns, type KafkaQuestion, kafkaQuestions, kafkaVerdict } from "./authz.ts";
import { API, GATEWAY_VERSIONS, KAFKA_ERROR, REQUESTS } from "./messages.ts";
import { decode, encode, type Message, readRequestHeader, WireReader, WireWriter } from "./wire.ts";

export type RequestHeader = ReturnType<typeof readRequestHeader>;

export type Screened =
  /** The gateway's own answer, at `version`; `close` after it (a failed authentication). */
  | { readonly kind: "answer"; readonly version: number; readonly body: Message; readonly close?: true }
  /** To the broker; `denied` topics are added to its answer; no answer is awaited for acks=0. */
  | {
      readonly kind: "forward";
      readonly bytes: Buffer;
      readonly awaitsAnswer: boolean;
      readonly denied?: Message[];
    }
  /** Neither answered nor forwarded: an acks=0 produce whose every topic is refused. */
  | { readonly kind: "drop" }
  | { readonly kind: "refuse" };

export interface ScreenDeps {
  /** The evaluator, once the app is known (undefined: nothing is checked). */
  readonly evaluator: () => IamEvaluator | undefined;
  /** The function an MSK IAM token's access key belongs to (undefined: an administrator). */
  readonly principalOf: (accessKeyId: string) => FunctionPrincipal | undefined;
  readonly arns: () => KafkaArns;
  /** Records a refused question with the grant that would allow it. */
  record(caller: FunctionPrincipal, question: KafkaQuestion, message: string): void;
}

/** One connection's identity: set by SASL, then every request is checked as it. */
export interface Session {
  caller: FunctionPrincipal | undefined;
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

const saslFailed = (errorMessage: string): Message => ({
  errorCode: KAFKA_ERROR.SASL_AUTHENTICATION_FAILED,
  errorMessage,
  authBytes: Buffer.alloc(0),
  sessionLifetimeMs: 0n,
});

/** SaslAuthenticate: the token's function, checked for `kafka-cluster:Connect`, becomes the session's caller. */
async function authenticate(h: RequestHeader, authBytes: Buffer, session: Session, deps: ScreenDeps) {
  const key = accessKeyOfToken(authBytes);
  if (!key)
    return {
      kind: "answer",
      version: h.apiVersion,
      body: saslFailed("Invalid MSK IAM token"),
      close: true,
    } as const;
  const who = deps.principalOf(key);
  const evaluator = deps.evaluator();
  if (who && evaluator) {
    const connect: KafkaQuestion = { action: "kafka-cluster:Connect", resource: deps.arns().cluster };
    const decision = await evaluator.authorize(who, connect);
    if (!decision.allowed) {
      deps.record(who, connect, decision.message);
      const body = saslFailed(`[${h.correlationId}] Access denied: ${decision.message}`);
      return { kind: "answer", version: h.apiVersion, body, close: true } as const;
    }
  }
  session.caller = who;
  // No session lifetime: the local token is not re-checked mid-connection.
  const body = {
    errorCode: KAFKA_ERROR.NONE,
    errorMessage: null,
    authBytes: Buffer.alloc(0),
    sessionLifetimeMs: 0n,
  };
  return { kind: "answer", version: h.apiVersion, body } as const;
}

/** The caller's IAM questions of a request, and what is left of it once the refused parts are out. */
async function checked(
  h: RequestHeader,
  request: Message,
  raw: Buffer,
  caller: FunctionPrincipal,
  evaluator: IamEvaluator,
  deps: ScreenDeps,
): Promise<Screened> {
  const denied = new Set<KafkaQuestion>();
  for (const question of kafkaQuestions(h.apiKey, request, deps.arns())) {
    const decision = await evaluator.authorize(caller, question);
    if (!decision.allowed) {
      denied.add(question);
      deps.record(caller, question, decision.message);
    }
  }
  const verdict = kafkaVerdict(h.apiKey, request, denied);
  const awaitsAnswer = !(h.apiKey === API.Produce && Number(request.acks) === 0);
  if (verdict.kind === "forward") return { kind: "forward", bytes: raw, awaitsAnswer };
  if (verdict.kind === "answer")
    return awaitsAnswer
      ? { kind: "answer", version: h.apiVersion, body: verdict.response }
      : { kind: "drop" };
  const headerBytes = new WireWriter()
    .int16(h.apiKey)
    .int16(h.apiVersion)
    .int32(h.correlationId)
    .nstring(h.clientId)
    .toBuffer();
  const body = encode(REQUESTS[h.apiKey]!, h.apiVersion, verdict.request).toBuffer();
  return { kind: "forward", bytes: Buffer.concat([headerBytes, body]), awaitsAnswer, denied: verdict.denied };
}

/** Decides one request's fate; `session.caller` changes on a successful SaslAuthenticate. */
export async function screenRequest(
  raw: Buffer,
  session: Session,
  deps: ScreenDeps,
): Promise<{ readonly header: RequestHeader; readonly screened: Screened }> {
  const r = new WireReader(raw);
  const header = readRequestHeader(r);
  const range = GATEWAY_VERSIONS[header.apiKey];
  if (header.apiKey === API.ApiVersions && range && header.apiVersion > range[1]) {
    // A client newer than the gateway asks first with a flexible version: Kafka's answer is v0
    // with UNSUPPORTED_VERSION and the versions it may retry with.
    const body = {
      errorCode: KAFKA_ERROR.UNSUPPORTED_VERSION,
      apiKeys: [{ apiKey: API.ApiVersions, minVersion: 0, maxVersion: range[1] }],
    };
    return { header, screened: { kind: "answer", version: 0, body } };
  }
  if (!range || header.apiVersion < range[0] || header.apiVersion > range[1]) {
    // Never offered (ApiVersions is capped): forwarding it unread would bypass the checks.
    process.emitWarning(
      `local Kafka gateway: API ${header.apiKey} v${header.apiVersion} is not offered; closing`,
    );
    return { header, screened: { kind: "refuse" } };
  }
  const request = decode(REQUESTS[header.apiKey] ?? [], header.apiVersion, r);
  if (header.apiKey === API.SaslHandshake) {
    const ok = request.mechanism === "OAUTHBEARER";
    const body = {
      errorCode: ok ? KAFKA_ERROR.NONE : KAFKA_ERROR.UNSUPPORTED_SASL_MECHANISM,
      mechanisms: ["OAUTHBEARER"],
    };
    return { header, screened: { kind: "answer", version: header.apiVersion, body } };
  }
  if (header.apiKey === API.SaslAuthenticate)
    return { header, screened: await authenticate(header, request.authBytes as Buffer, session, deps) };
  const evaluator = deps.evaluator();
  if (!session.caller || !evaluator)
    return { header, screened: { kind: "forward", bytes: raw, awaitsAnswer: true } };
  return { header, screened: await checked(header, request, raw, session.caller, evaluator, deps) };
}
