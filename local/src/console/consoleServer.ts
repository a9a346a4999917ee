/**
 * The local console: a small HTTP server (node:http) on 127.0.0.1 that serves the page, a JSON API
 * over the running app and its emulators, a live stream of server-sent events (logs, queue counts,
 * function figures, denials, and a tick on which the open view refreshes), and the actions (POST),
 * which call lib/dlq and the library's own outbox code. See consoleGuard.ts for who may call it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { disconnectAllKafkaProducers } from "reliable-consumers/kafka";
import { consoleDedup } from "../services/dynamodb/consoleDedup.ts";
import { consoleOutbox } from "../services/dynamodb/consoleOutbox.ts";
import { consoleKafka } from "../services/kafka/consoleKafka.ts";
import { consoleKinesis } from "../services/kinesis/consoleKinesis.ts";
import { invocationTrail } from "../services/lambda/invocationTrail.ts";
import { consoleQueues } from "../services/sqs/consoleQueues.ts";
import type { ConsoleEvents, DenialDto } from "./consoleApi.ts";
import { BadRequest, ConsoleNotFound } from "./consoleErrors.ts";
import { checkRequest, newConsoleToken } from "./consoleGuard.ts";
import { consoleFunctions, traceOf } from "./consoleOverview.ts";
import { loadPageAssets, type PageAssets, pageHtml } from "./consolePage.ts";
import { actionRoutes, type Route, readRoutes } from "./consoleRoutes.ts";
import { type ConsoleClients, type ConsoleSources, consoleClients } from "./consoleSources.ts";

/** Options of `startConsole`. */
export interface ConsoleOptions {
  readonly sources: ConsoleSources;
  /** @default a free port */
  readonly port?: number;
  /** How often queue counts and function figures are pushed, and the open view refreshes. @default 2000 ms */
  readonly refreshMs?: number;
}

/** A running console. */
export interface LocalConsole {
  /** `http://127.0.0.1:<port>/?token=<token>`: what the CLI prints. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  stop(): Promise<void>;
}

/** Every part a route may use. */
export interface ConsoleParts {
  readonly sources: ConsoleSources;
  readonly clients: ConsoleClients;
  readonly queues: ReturnType<typeof consoleQueues>;
  readonly outbox: ReturnType<typeof consoleOutbox>;
  readonly dedup: ReturnType<typeof consoleDedup>;
  readonly kafka: ReturnType<typeof consoleKafka>;
  readonly kinesis: ReturnType<typeof consoleKinesis>;
  readonly functions: ReturnType<typeof consoleFunctions>;
  readonly trail: ReturnType<typeof invocationTrail> | undefined;
  trace(id: string): ReturnType<typeof traceOf>;
}

/** Headers on every answer: no caching, no sniffing, no referrer (the token is in the URL), a strict CSP. */
const SECURITY_HEADERS = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    "Content-Type": type,
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}

const json = (res: ServerResponse, status: number, value: unknown) =>
  send(res, status, "application/json; charset=utf-8", JSON.stringify(value ?? null));

/** A request body of at most 64 KiB, as JSON. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 64 * 1024) throw new BadRequest("body over 64 KiB");
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
  } catch {
    throw new BadRequest("body is not JSON");
  }
}

/** The live stream: one `text/event-stream` per open page. */
function eventHub() {
  const streams = new Set<ServerResponse>();
  return {
    open(res: ServerResponse) {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        "Content-Type": "text/event-stream",
        Connection: "keep-alive",
      });
      res.write("retry: 1000\n\n");
      streams.add(res);
      res.on("close", () => streams.delete(res));
    },
    push<K extends keyof ConsoleEvents | "tick">(
      event: K,
      data: K extends keyof ConsoleEvents ? ConsoleEvents[K] : number,
    ) {
      const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      for (const s of streams) s.write(frame);
    },
    size: () => streams.size,
    closeAll() {
      for (const s of streams) s.end();
      streams.clear();
    },
  };
}

function partsOf(sources: ConsoleSources): ConsoleParts {
  const clients = consoleClients(sources);
  const queues = consoleQueues(sources.app, clients);
  const outbox = consoleOutbox(sources.app, clients);
  const dedup = consoleDedup(sources.app, clients);
  const trail = sources.host ? invocationTrail(sources.host) : undefined;
  return {
    sources,
    clients,
    queues,
    outbox,
    dedup,
    kafka: consoleKafka(sources.app, clients),
    kinesis: consoleKinesis(sources, clients),
    functions: consoleFunctions(sources),
    trail,
    trace: (id) => traceOf({ sources, trail, queues, outbox, dedup }, id),
  };
}

/** Answers one request that passed the guard. */
async function route(
  parts: ConsoleParts,
  assets: PageAssets,
  token: string,
  events: ReturnType<typeof eventHub>,
  req: IncomingMessage,
  res: ServerResponse,
  verdict: { path: string; query: URLSearchParams },
): Promise<void> {
  const { path, query } = verdict;
  if (path === "/") return send(res, 200, "text/html; charset=utf-8", pageHtml(token));
  if (path === "/assets/console.js") return send(res, 200, "text/javascript; charset=utf-8", assets.script);
  if (path === "/assets/console.css") return send(res, 200, "text/css; charset=utf-8", assets.style);
  if (path === "/api/events") return events.open(res);
  const segments = path.split("/").filter(Boolean).map(decodeURIComponent);
  const table: readonly Route[] = req.method === "POST" ? actionRoutes : readRoutes;
  for (const r of table) {
    const params = r.match(segments);
    if (!params) continue;
    const body = req.method === "POST" ? await jsonBody(req) : undefined;
    return json(res, 200, await r.run(parts, { params, query, body }));
  }
  json(res, 404, { error: `no ${path}` });
}

/** Pushes the live figures while a page is open; logs and denials as they happen. */
function liveFeeds(parts: ConsoleParts, events: ReturnType<typeof eventHub>, refreshMs: number) {
  let pendingLogs: NonNullable<ReturnType<NonNullable<ConsoleSources["telemetry"]>["lines"]>> = [];
  const unsubscribe = [
    parts.sources.telemetry?.subscribe((line) => {
      if (events.size() > 0) pendingLogs.push(line);
    }),
    parts.sources.denials?.subscribe((d) => events.push("denial", d satisfies DenialDto)),
  ];
  const flushLogs = setInterval(() => {
    if (pendingLogs.length === 0) return;
    events.push("logs", pendingLogs);
    pendingLogs = [];
  }, 300);
  let busy = false;
  const refresh = setInterval(async () => {
    if (events.size() === 0 || busy) return;
    busy = true;
    try {
      events.push("queues", await parts.queues.summaries());
      events.push("functions", parts.functions.summaries());
      events.push("tick", Date.now());
    } catch {
      // An emulator away for a moment: the next tick tries again.
    } finally {
      busy = false;
    }
  }, refreshMs);
  for (const t of [flushLogs, refresh]) t.unref();
  return () => {
    clearInterval(flushLogs);
    clearInterval(refresh);
    for (const u of unsubscribe) u?.();
  };
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    // 127.0.0.1 only: never another interface, never ::.
    server.listen({ host: "127.0.0.1", port }, () => resolve((server.address() as AddressInfo).port));
  });
}

/** Starts the console; `url` is what to open. */
export async function startConsole(options: ConsoleOptions): Promise<LocalConsole> {
  const assets = await loadPageAssets();
  const token = newConsoleToken();
  const parts = partsOf(options.sources);
  const events = eventHub();
  let port = 0;
  const server = createServer((req, res) => {
    const verdict = checkRequest(
      { method: req.method ?? "", url: req.url ?? "/", headers: req.headers },
      { token, port },
    );
    if (!verdict.ok) return json(res, verdict.status, { error: verdict.reason });
    route(parts, assets, token, events, req, res, verdict).catch((error: Error) => {
      const status = error instanceof ConsoleNotFound ? 404 : error instanceof BadRequest ? 400 : 500;
      if (!res.headersSent) json(res, status, { error: `${error.name}: ${error.message}` });
      else res.end();
    });
  });
  port = await listen(server, options.port ?? 0);
  const stopFeeds = liveFeeds(parts, events, options.refreshMs ?? 2_000);
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    async stop() {
      stopFeeds();
      parts.trail?.stop();
      events.closeAll();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await disconnectAllKafkaProducers().catch(() => undefined);
      await parts.clients.destroy();
    },
  };
}
