/**
 * Routes Kafka broker connections through chaos TCP proxies.
 *
 * A Kafka client connects to the bootstrap address, then to whatever addresses the brokers
 * advertise in their metadata; the librdkafka mock cluster advertises its own ports and cannot be
 * told otherwise. So a proxy in front of the bootstrap alone would be bypassed. Instead, every
 * connection to a broker address is redirected to that broker's proxy:
 *
 * - in this process, through kafkajs' `socketFactory` (`redirectingSocketFactory`);
 * - in a handler process we do not control (functions/*), by preloading this module with
 *   `node --import chaos/netRedirect.ts` and `CHAOS_NET_REDIRECT={"127.0.0.1:9092":"127.0.0.1:40123"}`:
 *   it wraps `net.connect`, which kafkajs' default socket factory calls. Nothing else in such a
 *   process uses `net.connect` for those addresses (the AWS SDK goes through `http`).
 */
import net from "node:net";
import type { ISocketFactory } from "kafkajs";

export type RedirectMap = Readonly<Record<string, string>>;

export const REDIRECT_ENV = "CHAOS_NET_REDIRECT";

function lookup(map: RedirectMap, host: string, port: number): { host: string; port: number } {
  const to = map[`${host}:${port}`];
  if (!to) return { host, port };
  const at = to.lastIndexOf(":");
  return { host: to.slice(0, at), port: Number(to.slice(at + 1)) };
}

/** A kafkajs socket factory (plaintext) that dials the proxy of each redirected broker. */
export function redirectingSocketFactory(map: RedirectMap): ISocketFactory {
  return ({ host, port, onConnect }) => {
    const to = lookup(map, host, port);
    const socket = net.connect({ host: to.host, port: to.port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    return socket;
  };
}

function install(map: RedirectMap): void {
  const original = net.connect;
  const patched = ((...args: unknown[]) => {
    const first = args[0];
    if (typeof first === "object" && first !== null && "port" in first) {
      const o = first as { host?: string; port: number };
      const to = lookup(map, o.host ?? "localhost", Number(o.port));
      args[0] = { ...o, host: to.host, port: to.port };
    }
    return (original as (...a: unknown[]) => net.Socket)(...args);
  }) as typeof net.connect;
  net.connect = patched;
}

const fromEnv = process.env[REDIRECT_ENV];
if (fromEnv) install(JSON.parse(fromEnv) as RedirectMap);
