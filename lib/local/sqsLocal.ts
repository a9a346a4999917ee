import { buildApp } from "fauxqs";

export interface SqsLocal {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts fauxqs in this process on 127.0.0.1 and a free port. (`startFauxqs()` would listen on
 * 0.0.0.0, so we build the Fastify app ourselves.) Its queue URLs name `sqs.<region>.localhost`,
 * so SQS clients must be given this endpoint explicitly (AWS_ENDPOINT_URL_SQS does that).
 */
export async function startSqsLocal(): Promise<SqsLocal> {
  const app = buildApp({ logger: false });
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  // An idle emulator must not hold a finished test run open.
  app.server.unref();
  return {
    endpoint: address,
    stop: async () => {
      await app.close();
    },
  };
}
