/**
 * One route of the console's API: a path pattern and a small function over the console's parts,
 * plus the checks every action's body goes through (a wrong body is a 400 that says what is wrong).
 * Each service declares its own routes (`services/<name>/service.ts`); consoleRoutes.ts joins them.
 */
import { BadRequest } from "./consoleErrors.ts";
import type { ConsoleParts } from "./consoleServer.ts";

export interface RouteInput {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly body: unknown;
}

export interface Route {
  match(segments: readonly string[]): Record<string, string> | undefined;
  run(parts: ConsoleParts, input: RouteInput): unknown;
}

/** A service's routes: reads answer GET, actions answer POST. */
export interface ConsoleRoutes {
  readonly reads?: readonly Route[];
  readonly actions?: readonly Route[];
}

/** `api/queues/:name` → a route that matches `/api/queues/orders` with `{ name: "orders" }`. */
export function at(pattern: string, run: Route["run"]): Route {
  const want = pattern.split("/");
  return {
    match(segments) {
      if (segments.length !== want.length) return undefined;
      const params: Record<string, string> = {};
      for (const [i, w] of want.entries()) {
        if (w.startsWith(":")) params[w.slice(1)] = segments[i]!;
        else if (w !== segments[i]) return undefined;
      }
      return params;
    },
    run,
  };
}

export const required = (query: URLSearchParams, name: string): string => {
  const v = query.get(name);
  if (!v) throw new BadRequest(`?${name}= is required`);
  return v;
};

type Json = Record<string, unknown>;

export function object(body: unknown): Json {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new BadRequest("the body is not an object");
  return body as Json;
}

export function text(b: Json, name: string): string {
  const v = b[name];
  if (typeof v !== "string" || v === "") throw new BadRequest(`'${name}' must be a non-empty string`);
  return v;
}

function texts(b: Json, name: string): string[] | undefined {
  const v = b[name];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string"))
    throw new BadRequest(`'${name}' must be a list of strings`);
  return v as string[];
}

function seconds(b: Json, name: string): number | undefined {
  const v = b[name];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
    throw new BadRequest(`'${name}' must be a number ≥ 0`);
  return v;
}

/** The filter and dry-run flag both moves (an SQS redrive, a Kafka replay) take. */
export function moveOf(b: Json) {
  const ids = texts(b, "ids");
  const errorTypes = texts(b, "errorTypes");
  const olderThanSeconds = seconds(b, "olderThanSeconds");
  return {
    dryRun: b.dryRun === true,
    ...(ids ? { ids } : {}),
    ...(errorTypes ? { errorTypes } : {}),
    ...(olderThanSeconds !== undefined ? { olderThanSeconds } : {}),
  };
}
