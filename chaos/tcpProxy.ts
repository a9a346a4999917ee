import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A loopback TCP proxy that can break the connection between a client and a service: the network
 * fault injector for DynamoDB Local, fauxqs and the Kafka mock brokers alike.
 *
 * - `cut()` resets every open connection at once (a connection dropped mid-request);
 * - `down()` also refuses new connections until `up()` (the service is unreachable);
 * - `retarget()` points it at a new upstream (a restarted service on another port), so clients keep
 *   one stable address across restarts;
 * - `onClientData` is told of every chunk a client sends (a request on its way), so a fault can be
 *   injected at a request, by count, instead of at a moment guessed with a clock.
 *
 * Listens on 127.0.0.1 only.
 */
export interface TcpProxy {
  /** `127.0.0.1:<port>` */
  readonly address: string;
  readonly port: number;
  /** Resets every open connection; returns how many. */
  cut(): number;
  /** Refuses new connections (and cuts the open ones) until up(). */
  down(): number;
  up(): void;
  readonly isDown: boolean;
  retarget(upstream: string): void;
  readonly upstream: string;
  readonly stats: { connections: number; cuts: number; refused: number };
  close(): Promise<void>;
}

function splitHostPort(hostPort: string): { host: string; port: number } {
  const clean = hostPort.replace(/^[a-z]+:\/\//, "").replace(/\/.*$/, "");
  const at = clean.lastIndexOf(":");
  return { host: clean.slice(0, at), port: Number(clean.slice(at + 1)) };
}

export async function startTcpProxy(
  upstream: string,
  options: { port?: number; onClientData?: () => void } = {},
): Promise<TcpProxy> {
  let target = splitHostPort(upstream);
  let upstreamText = upstream;
  let isDown = false;
  const open = new Set<Socket>();
  const stats = { connections: 0, cuts: 0, refused: 0 };

  const server: Server = createServer((client) => {
    if (isDown) {
      stats.refused++;
      client.resetAndDestroy();
      return;
    }
    stats.connections++;
    const service = createConnection({ host: target.host, port: target.port });
    open.add(client);
    open.add(service);
    const close = () => {
      open.delete(client);
      open.delete(service);
      if (!client.destroyed) client.destroy();
      if (!service.destroyed) service.destroy();
    };
    client.on("error", close);
    service.on("error", () => {
      if (!client.destroyed) client.resetAndDestroy();
      close();
    });
    client.on("close", close);
    service.on("close", close);
    client.pipe(service);
    service.pipe(client);
    // After the pipe: the chunk is on its way upstream when the listener cuts.
    if (options.onClientData) client.on("data", () => options.onClientData?.());
  });
  server.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  server.unref();
  const port = (server.address() as { port: number }).port;

  const cut = () => {
    let n = 0;
    for (const s of [...open]) {
      if (!s.destroyed) {
        s.resetAndDestroy();
        n++;
      }
    }
    open.clear();
    if (n > 0) stats.cuts++;
    return n;
  };

  return {
    address: `127.0.0.1:${port}`,
    port,
    cut,
    down() {
      isDown = true;
      return cut();
    },
    up() {
      isDown = false;
    },
    get isDown() {
      return isDown;
    },
    retarget(next) {
      target = splitHostPort(next);
      upstreamText = next;
    },
    get upstream() {
      return upstreamText;
    },
    stats,
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
