import { MissingPrerequisiteError } from "../../childProcess.ts";

/** A running fauxqs SQS emulator on 127.0.0.1. */
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
  const { buildApp } = await loadFauxqs();
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

/** fauxqs is an optional peer dependency: only the emulators need it, never a Lambda bundle. */
async function loadFauxqs(): Promise<typeof import("fauxqs")> {
  try {
    return await import("fauxqs");
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new MissingPrerequisiteError(
      "the SQS emulator needs the package 'fauxqs'. Install it: npm install --save-dev --save-exact fauxqs@2.4.1",
    );
  }
}
