/**
 * Which service and operation a call to the AWS gateway is: the AWS JSON protocols by their
 * `X-Amz-Target` prefix (each service of the registry declares its own), else SQS's query protocol
 * by its `Action`.
 */
import type { GatewayRoute } from "../services/localService.ts";
import { SERVICES } from "../services/registry.ts";
import type { GatewayService } from "./serviceError.ts";

/** Every AWS JSON protocol a service of the registry forwards, by its `X-Amz-Target` prefix. */
export const GATEWAY_ROUTES: readonly GatewayRoute[] = SERVICES.flatMap((service) => service.gateway ?? []);

/** A call the gateway recognised: its service, its operation and its parameters. */
export interface ClassifiedRequest {
  readonly service: GatewayService;
  readonly operation: string;
  /** The JSON body (`{}` when empty or malformed), or the query protocol's form fields. */
  readonly json: Record<string, unknown>;
}

/**
 * The call a request with this `X-Amz-Target` (`target`, `""` when absent) and `body` is;
 * `undefined` when it is neither a known JSON protocol nor a query-protocol action.
 */
export function classifyRequest(target: string, body: Buffer): ClassifiedRequest | undefined {
  for (const { targetPrefix: prefix, service } of GATEWAY_ROUTES) {
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
