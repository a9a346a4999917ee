/**
 * The broker's answer as a client of the gateway may see it: the APIs capped to what the gateway
 * reads, every broker address (Metadata, FindCoordinator) replaced by the gateway's listener for
 * it, and the topics refused here added to the answer.
 */
import { API, GATEWAY_VERSIONS, RESPONSES } from "./messages.ts";
import { decode, encode, type Message, WireReader } from "./wire.ts";

/** The request a response answers: enough to decode it and to add what the gateway refused. */
export interface AnsweredRequest {
  readonly apiKey: number;
  readonly apiVersion: number;
  /** Topics refused here, added to the broker's answer. */
  readonly denied?: Message[];
}

/** The gateway's own address for a broker's `host:port`. */
export type LocalAddress = (host: string, port: number) => Promise<{ host: string; port: number }>;

/** The body of the broker's response, rewritten where the client must not see it as it is. */
export async function rewriteResponse(
  request: AnsweredRequest,
  body: Buffer,
  localAddress: LocalAddress,
): Promise<Buffer> {
  const schema = RESPONSES[request.apiKey];
  const needs =
    request.apiKey === API.ApiVersions ||
    request.apiKey === API.Metadata ||
    request.apiKey === API.FindCoordinator ||
    request.denied !== undefined;
  if (!schema || !needs) return body;
  const m = decode(schema, request.apiVersion, new WireReader(body));
  if (request.apiKey === API.ApiVersions) m.apiKeys = cappedApis(m.apiKeys as Message[]);
  if (request.apiKey === API.Metadata)
    for (const b of (m.brokers as Message[]) ?? [])
      Object.assign(b, await localAddress(String(b.host), Number(b.port)));
  if (request.apiKey === API.FindCoordinator && Number(m.port) > 0)
    Object.assign(m, await localAddress(String(m.host), Number(m.port)));
  if (request.denied) m.topics = [...((m.topics as Message[]) ?? []), ...request.denied];
  return encode(schema, request.apiVersion, m).toBuffer();
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
