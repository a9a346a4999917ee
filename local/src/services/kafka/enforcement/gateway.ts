/**
 * Kafka with MSK's IAM semantics, in front of the local broker: functions reach Kafka through this
 * gateway with their own MSK IAM token (SASL OAUTHBEARER from aws-msk-iam-sasl-signer-js, as on
 * MSK), and every request is checked as MSK checks it (`kafka-cluster:*` on the cluster, topic,
 * group and transactional-id ARNs, kafkaAuthz.ts) before it reaches the broker. A refused request
 * gets Kafka's own error codes, per topic where Kafka answers per topic. The broker itself stays
 * plaintext and unauthenticated; the runtime's own tools talk to it directly.
 *
 * Why a protocol gateway and not a broker plugin: the same check then stands in front of the
 * librdkafka mock (the default of `reliable-consumers local`) and of a real broker, and the code
 * under test cannot reach the broker around it (its KAFKA_BROKERS name only the gateway). The
 * gateway offers only the APIs and versions it can read (it caps the broker's ApiVersions).
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import type { DenialLog } from "../../../enforcement/denials.ts";
import type { FunctionPrincipal } from "../../iam/accessModel.ts";
import { grantAdvice } from "../../iam/grantAdvice.ts";
import type { IamEvaluator } from "../../iam/iamEvaluator.ts";
import { type KafkaArns, type KafkaQuestion, kafkaArns } from "./authz.ts";
import { serveConnection } from "./connection.ts";

export interface KafkaGatewayOptions {
  /** The broker(s) behind the gateway, `host:port`. */
  readonly upstream: readonly string[];
  /** The MSK cluster the local Kafka stands in for (known once the app is): it roots every topic and group ARN. */
  readonly clusterArn: () => string;
  readonly denials: DenialLog;
  /** The function an MSK IAM token's access key belongs to (undefined: an administrator). */
  readonly principalOf: (accessKeyId: string) => FunctionPrincipal | undefined;
  /** The evaluator, once the app is known (undefined: nothing is checked). */
  readonly evaluator: () => IamEvaluator | undefined;
  /** How to reach a broker (a chaos proxy may stand in between). @default net.connect */
  readonly dial?: (host: string, port: number) => Socket;
  /** Construct paths by ARN, for the grant advice. */
  readonly constructPaths?: () => ReadonlyMap<string, string>;
}

export interface KafkaGateway {
  /** `127.0.0.1:<port>` per upstream bootstrap broker: what functions get as KAFKA_BROKERS. */
  readonly brokers: readonly string[];
  stop(): Promise<void>;
}

const splitHostPort = (hostPort: string) => {
  const at = hostPort.lastIndexOf(":");
  return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
};

export async function startKafkaGateway(options: KafkaGatewayOptions): Promise<KafkaGateway> {
  let arns: KafkaArns | undefined;
  const arnsNow = () => {
    const cluster = options.clusterArn();
    if (arns?.cluster !== cluster) arns = kafkaArns(cluster);
    return arns;
  };
  const dial = options.dial ?? ((host: string, port: number) => tcpConnect({ host, port }));
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  /** Upstream `host:port` → the gateway's listener for it. */
  const listeners = new Map<string, Promise<number>>();

  function listenerFor(upstream: string): Promise<number> {
    let port = listeners.get(upstream);
    if (!port) {
      port = new Promise<number>((resolve, reject) => {
        const server = createServer((client) => serve(client, upstream));
        server.on("error", reject);
        server.listen(0, "127.0.0.1", () => {
          server.unref();
          resolve((server.address() as { port: number }).port);
        });
        servers.push(server);
      });
      listeners.set(upstream, port);
    }
    return port;
  }

  /** Advertised brokers → the gateway's listeners, so clients never reach a broker directly. */
  async function localAddress(host: string, port: number): Promise<{ host: string; port: number }> {
    return { host: "127.0.0.1", port: await listenerFor(`${host}:${port}`) };
  }

  function record(caller: FunctionPrincipal, d: KafkaQuestion, message: string) {
    options.denials.record({
      at: Date.now(),
      functionName: caller.functionName,
      action: d.action,
      resource: d.resource,
      message,
      advice: grantAdvice(d.action, d.resource, options.constructPaths?.().get(d.resource)),
    });
  }

  function serve(client: Socket, upstream: string) {
    const { host, port } = splitHostPort(upstream);
    const broker = dial(host, port);
    sockets.add(client);
    sockets.add(broker);
    const deps = {
      evaluator: options.evaluator,
      principalOf: options.principalOf,
      arns: arnsNow,
      record,
      localAddress,
    };
    serveConnection(client, broker, deps, () => {
      sockets.delete(client);
      sockets.delete(broker);
    });
  }

  const brokers = await Promise.all(options.upstream.map(async (u) => `127.0.0.1:${await listenerFor(u)}`));
  return {
    brokers,
    async stop() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}
