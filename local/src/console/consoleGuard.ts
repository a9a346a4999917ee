/**
 * Who may talk to the console. It listens on 127.0.0.1 only; on top of that every request must
 * - name the console itself in its Host header (`127.0.0.1:<port>` or `localhost:<port>`): a page
 *   of another site whose name an attacker re-binds to 127.0.0.1 (DNS rebinding) sends its own
 *   name, and is refused before anything else;
 * - carry the run's random token: in the URL for the page, its assets and the event stream (what a
 *   browser can send there), in the `X-Console-Token` header for the API;
 * - and an action is a POST with the token in that header and a JSON body, from the console's own
 *   origin when the browser says one: a form or an image of another site can set neither.
 * Pure.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

export interface GuardedRequest {
  readonly method: string;
  /** Path and query, as in the request line. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type GuardVerdict =
  | { readonly ok: true; readonly path: string; readonly query: URLSearchParams }
  | { readonly ok: false; readonly status: 400 | 403 | 405 | 415; readonly reason: string };

export const TOKEN_HEADER = "x-console-token";

/** A new token: 192 random bits, URL-safe. */
export function newConsoleToken(): string {
  return randomBytes(24).toString("base64url");
}

const header = (h: GuardedRequest["headers"], name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The Host values that name this console (what a browser sends for the URL the console printed). */
export function allowedHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`];
}

/** Whether a request may proceed, and to which path; why not otherwise. */
export function checkRequest(req: GuardedRequest, expected: { token: string; port: number }): GuardVerdict {
  const host = header(req.headers, "host")?.toLowerCase();
  if (!host || !allowedHosts(expected.port).includes(host))
    return { ok: false, status: 403, reason: `Host ${host ?? "(none)"} is not this console` };
  let url: URL;
  try {
    url = new URL(req.url, `http://${host}`);
  } catch {
    return { ok: false, status: 400, reason: "bad request line" };
  }
  const isAction = url.pathname.startsWith("/api/actions/");
  if (req.method !== (isAction ? "POST" : "GET"))
    return { ok: false, status: 405, reason: isAction ? "an action is a POST" : "only GET here" };
  const given = isAction
    ? header(req.headers, TOKEN_HEADER)
    : (header(req.headers, TOKEN_HEADER) ?? url.searchParams.get("token") ?? undefined);
  if (!sameToken(given, expected.token))
    return {
      ok: false,
      status: 403,
      reason: isAction ? `an action needs the token in ${TOKEN_HEADER}` : "no valid token",
    };
  if (isAction) {
    const origin = header(req.headers, "origin");
    if (origin !== undefined && !allowedHosts(expected.port).some((h) => origin === `http://${h}`))
      return { ok: false, status: 403, reason: `Origin ${origin} is not this console` };
    if (!/^application\/json\b/.test(header(req.headers, "content-type") ?? ""))
      return { ok: false, status: 415, reason: "an action takes a JSON body" };
  }
  return { ok: true, path: url.pathname, query: url.searchParams };
}
