import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A STAND-IN for Confluent Schema Registry: the subset of its REST API (v1) that the library and
 * `@confluentinc/schemaregistry`'s serializers use, on 127.0.0.1, in memory. Used because no real
 * Confluent-API registry runs here without a Kafka cluster of its own (Karapace has no release on PyPI
 * (`pip download karapace` finds none) and stores schemas in Kafka; Apicurio is a Quarkus application that Maven would have to
 * assemble first). Listed as a stand-in in docs/kafka.md. Behaviour follows Confluent's API docs:
 *
 * - `POST /subjects/{subject}/versions` `{schema, schemaType?}` → `{id}`; the same schema text and
 *   type get the same global id in every subject, and a new version only when new to the subject.
 * - `POST /subjects/{subject}` → `{subject, id, version, schema}`, else 404 with error_code 40403
 *   (schema not found) or 40401 (subject not found).
 * - `GET /schemas/ids/{id}` → `{schema}` plus `schemaType` unless AVRO, else 404 / 40403.
 * - `GET /subjects/{subject}/versions/latest|{n}`, `GET /subjects`.
 * - Basic auth when `auth` is given: 401 / 40101 otherwise.
 */
export interface ConfluentStandIn {
  readonly url: string;
  /** Requests served, by `METHOD path` without the query. */
  readonly requests: string[];
  /** `unavailable`: answer 503 (error_code 50003); `reset`: destroy each connection; `up`: serve. */
  mode: "up" | "unavailable" | "reset";
  /** Delay before each answer (to hold concurrent requests in flight). */
  delayMs: number;
  stop(): Promise<void>;
}

interface Stored {
  readonly id: number;
  readonly schema: string;
  readonly schemaType: string;
}

export async function startConfluentStandIn(
  options: { auth?: { username: string; password: string } } = {},
): Promise<ConfluentStandIn> {
  const byId = new Map<number, Stored>();
  const subjects = new Map<string, number[]>(); // subject → ids, by version
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  const state = { mode: "up" as ConfluentStandIn["mode"], delayMs: 0 };
  const expected = options.auth
    ? `Basic ${Buffer.from(`${options.auth.username}:${options.auth.password}`).toString("base64")}`
    : undefined;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/vnd.schemaregistry.v1+json" });
    res.end(JSON.stringify(body));
  };
  const idOf = (schema: string, schemaType: string): number => {
    for (const s of byId.values()) if (s.schema === schema && s.schemaType === schemaType) return s.id;
    const id = byId.size + 1;
    byId.set(id, { id, schema, schemaType });
    return id;
  };
  const readBody = async (req: IncomingMessage): Promise<{ schema?: string; schemaType?: string }> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return chunks.length
      ? (JSON.parse(Buffer.concat(chunks).toString()) as { schema?: string; schemaType?: string })
      : {};
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? "/").split("?")[0]!;
    requests.push(`${req.method} ${path}`);
    if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
    if (state.mode === "reset") {
      req.socket.destroy();
      return;
    }
    if (state.mode === "unavailable")
      return send(res, 503, {
        error_code: 50003,
        message: "Error while forwarding the request to the leader",
      });
    if (expected && req.headers.authorization !== expected)
      return send(res, 401, { error_code: 40101, message: "Unauthorized" });
    const route = (method: string, re: RegExp) => (req.method === method ? path.match(re) : null);
    const m1 = route("GET", /^\/schemas\/ids\/(\d+)$/);
    if (m1) {
      const m = m1;
      const s = byId.get(Number(m[1]));
      if (!s) return send(res, 404, { error_code: 40403, message: `Schema ${m[1]} not found` });
      return send(res, 200, {
        schema: s.schema,
        ...(s.schemaType !== "AVRO" ? { schemaType: s.schemaType } : {}),
      });
    }
    if (req.method === "GET" && path === "/subjects") return send(res, 200, [...subjects.keys()]);
    const m2 = route("POST", /^\/subjects\/([^/]+)\/versions$/);
    if (m2) {
      const m = m2;
      const subject = decodeURIComponent(m[1]!);
      const body = await readBody(req);
      if (typeof body.schema !== "string")
        return send(res, 422, { error_code: 42201, message: "Invalid schema" });
      const id = idOf(body.schema, body.schemaType ?? "AVRO");
      const versions = subjects.get(subject) ?? [];
      if (!versions.includes(id)) versions.push(id);
      subjects.set(subject, versions);
      return send(res, 200, { id });
    }
    const m3 = route("POST", /^\/subjects\/([^/]+)$/);
    if (m3) {
      const m = m3;
      const subject = decodeURIComponent(m[1]!);
      const body = await readBody(req);
      const versions = subjects.get(subject);
      if (!versions) return send(res, 404, { error_code: 40401, message: `Subject '${subject}' not found.` });
      const v = versions.findIndex((id) => {
        const s = byId.get(id)!;
        return s.schema === body.schema && s.schemaType === (body.schemaType ?? "AVRO");
      });
      if (v < 0) return send(res, 404, { error_code: 40403, message: "Schema not found" });
      const s = byId.get(versions[v]!)!;
      return send(res, 200, { subject, id: s.id, version: v + 1, schema: s.schema });
    }
    const m4 = route("GET", /^\/subjects\/([^/]+)\/versions\/(latest|\d+)$/);
    if (m4) {
      const m = m4;
      const subject = decodeURIComponent(m[1]!);
      const versions = subjects.get(subject);
      if (!versions) return send(res, 404, { error_code: 40401, message: `Subject '${subject}' not found.` });
      const v = m[2] === "latest" ? versions.length : Number(m[2]);
      const id = versions[v - 1];
      if (id === undefined)
        return send(res, 404, { error_code: 40402, message: `Version ${m[2]} not found.` });
      const s = byId.get(id)!;
      return send(res, 200, {
        subject,
        id,
        version: v,
        schema: s.schema,
        ...(s.schemaType !== "AVRO" ? { schemaType: s.schemaType } : {}),
      });
    }
    return send(res, 404, { error_code: 404, message: "HTTP 404 Not Found" });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, { error_code: 50001, message: String(error) }));
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get mode() {
      return state.mode;
    },
    set mode(m) {
      state.mode = m;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms) {
      state.delayMs = ms;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
