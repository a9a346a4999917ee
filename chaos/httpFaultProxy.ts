import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { decideFault, type FaultLedger, type FaultPlan, faultResponse, recordFault } from "./faults.ts";
import type { Rng } from "./rng.ts";

/**
 * The same faults as sdkFaults.ts, for SDK clients we cannot reach from outside: the module-level
 * clients inside the reference service's handlers, in their own processes. Point the process's
 * `AWS_ENDPOINT_URL_<SERVICE>` at this proxy and every request of every client in it passes a
 * fault decision:
 *
 * - `throttle` / `server`: an AWS JSON-protocol error response, nothing forwarded;
 * - `reset`: the connection is reset, nothing forwarded;
 * - `timeout`: forwarded and applied, then the connection is reset instead of answering.
 *
 * The operation comes from `X-Amz-Target` (`DynamoDB_20120810.TransactWriteItems`,
 * `AmazonSQS.ReceiveMessage`). Listens on 127.0.0.1 only.
 */
export interface HttpFaultProxy {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Pause or resume injection (the setup and the final checks run without faults). */
  setEnabled(on: boolean): void;
  retarget(upstream: string): void;
  close(): Promise<void>;
}

export interface HttpFaultProxyOptions {
  /** `http://127.0.0.1:<port>` of the real service. */
  readonly upstream: string;
  readonly plan: FaultPlan;
  readonly rng: Rng;
  readonly ledger: FaultLedger;
  /** Ledger label, e.g. `dynamodb`. */
  readonly target: string;
  /** @default true */
  readonly enabled?: boolean;
  /**
   * Sees every request first (even with injection paused); returning true drops it unanswered and
   * unforwarded (the caller was killed meanwhile, say). @default - every request goes on
   */
  readonly intercept?: (operation: string, body: Buffer) => boolean;
}

function operationOf(req: IncomingMessage): string {
  const t = req.headers["x-amz-target"];
  const value = Array.isArray(t) ? t[0] : t;
  return value?.split(".").pop() ?? "unknown";
}

export async function startHttpFaultProxy(options: HttpFaultProxyOptions): Promise<HttpFaultProxy> {
  let upstream = new URL(options.upstream);
  let enabled = options.enabled ?? true;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => {});
    req.on("end", () => {
      const operation = operationOf(req);
      if (options.intercept?.(operation, Buffer.concat(chunks))) {
        req.socket.destroy();
        return;
      }
      const kind = enabled ? decideFault(options.plan, options.rng, operation) : undefined;
      if (kind !== undefined) recordFault(options.ledger, kind, `${options.target}:${operation}`);
      if (kind === "throttle" || kind === "server") {
        const f = faultResponse(kind);
        res.writeHead(f.statusCode, {
          "content-type": "application/x-amz-json-1.0",
          "x-amzn-errortype": f.errorType,
          "x-amzn-requestid": `chaos-${Date.now()}`,
        });
        res.end(f.body);
        return;
      }
      if (kind === "reset") {
        req.socket.resetAndDestroy();
        return;
      }
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (up) => {
          if (kind === "timeout") {
            // Applied upstream; the answer is lost.
            up.resume();
            up.on("end", () => req.socket.resetAndDestroy());
            return;
          }
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      forward.on("error", () => {
        // The service itself is unreachable: what the client would see without the proxy.
        req.socket.resetAndDestroy();
      });
      forward.end(Buffer.concat(chunks));
    });
  });
  server.on("clientError", (_e, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  server.unref();
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    setEnabled(on) {
      enabled = on;
    },
    retarget(next) {
      upstream = new URL(next);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
