/**
 * The AWS gateway's HTTP plumbing, the same for every service: its listeners, reading a body,
 * answering an error or a JSON document itself, and forwarding a call to an emulator with the
 * answer piped back (or rewritten on the way, when a service's stage asks for it).
 *
 * A listener speaks HTTP/1.1 and cleartext HTTP/2 on one port: the SDK's Kinesis client always
 * uses HTTP/2 (NodeHttp2Handler, for SubscribeToShard), which on an `http://` endpoint means HTTP/2
 * with prior knowledge; the other clients use HTTP/1.1. The first bytes of a connection tell which.
 */
import {
  type Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttp2Server, type Http2Server } from "node:http2";
import {
  type AddressInfo,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from "node:net";
import { type GatewayService, renderServiceError, type ServiceError } from "./serviceError.ts";

/** An emulator's answer (JSON text) as the caller gets it; `status` is the emulator's HTTP status. */
export type AnswerRewrite = (answer: string, status: number | undefined) => string;

/** The whole body of a request or of an emulator's answer. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Answers `error` in `service`'s own shape, so the SDK raises the exception it would on AWS. */
export function replyError(res: ServerResponse, service: GatewayService, error: ServiceError): void {
  const r = renderServiceError(service, error);
  res.writeHead(r.status, { ...r.headers, "content-length": Buffer.byteLength(r.body) });
  res.end(r.body);
}

/** Answers a JSON-protocol document (`text`) with HTTP 200, as SQS answers a batch. */
export function replyJson(res: ServerResponse, text: string): void {
  res.writeHead(200, {
    "content-type": "application/x-amz-json-1.0",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Sends the call on to `upstream` (the emulator), with `body` in place of the one read, over
 * `agent`; its answer goes back to the caller, through `rewrite` when given.
 */
export function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  upstream: string,
  agent: Agent,
  rewrite: AnswerRewrite | undefined,
): void {
  const target = new URL(req.url ?? "/", upstream);
  const headers = {
    ...withoutHeaders(req.headers, (name) => name.startsWith(":")),
    host: target.host,
    "content-length": String(body.length),
  };
  // HTTP/2 has no connection-specific headers (RFC 9113 §8.2.2): drop them from the emulator's answer.
  const h2 = req.httpVersionMajor === 2;
  const answerHeaders = (up: IncomingMessage) =>
    h2 ? withoutHeaders(up.headers, (name) => CONNECTION_HEADERS.has(name)) : up.headers;
  const out = request(target, { method: req.method, headers, agent }, (up) => {
    if (!rewrite) {
      res.writeHead(up.statusCode ?? 502, answerHeaders(up));
      up.pipe(res);
      return;
    }
    readBody(up).then(
      (raw) => {
        const text = rewrite(raw.toString("utf8"), up.statusCode);
        const { "transfer-encoding": _, ...rest } = answerHeaders(up);
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

const CONNECTION_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

function withoutHeaders<H extends Record<string, unknown>>(headers: H, drop: (name: string) => boolean): H {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !drop(name))) as H;
}

/** HTTP/2's connection preface starts so (RFC 9113 §3.4). */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0");

/** A gateway listener on 127.0.0.1 and its `http://127.0.0.1:<port>`. */
export interface GatewayListener {
  /** The port's listener, which hands each connection to `server` (HTTP/1.1) or `http2`. */
  readonly listener: NetServer;
  readonly server: Server;
  readonly http2: Http2Server;
  readonly sockets: Set<Socket>;
  readonly origin: string;
}

/**
 * Listens on a free port of 127.0.0.1 and hands each request to `handle`; a request it fails gets
 * HTTP 500 with the reason. The server does not keep the process alive.
 */
export async function listenGateway(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<GatewayListener> {
  const server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`local gateway error: ${error.message}`);
    });
  });
  // Long polls (20 s) and slow emulators: no server-side timeouts of our own.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 60_000;
  const http2 = createHttp2Server();
  http2.on("request", (req, res) => server.emit("request", req, res));
  const sockets = new Set<Socket>();
  const listener = createNetServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.once("readable", () => {
      const head = socket.read() as Buffer | null;
      if (head === null) return void socket.end();
      socket.unshift(head);
      const h2 = head.subarray(0, HTTP2_PREFACE.length).equals(HTTP2_PREFACE);
      (h2 ? http2 : server).emit("connection", socket);
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  listener.unref();
  return {
    listener,
    server,
    http2,
    sockets,
    origin: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
  };
}

/** Closes the listeners, dropping their open connections (idle keep-alives and long polls alike). */
export async function closeGateway(listeners: readonly GatewayListener[]): Promise<void> {
  await Promise.all(
    listeners.map(
      ({ listener, server, http2, sockets }) =>
        new Promise<void>((resolve) => {
          listener.close(() => resolve());
          server.closeAllConnections();
          http2.close();
          for (const socket of sockets) socket.destroy();
        }),
    ),
  );
}
