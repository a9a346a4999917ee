/**
 * Deployed in place of a reference function whose handler file does not exist yet (only when the
 * app runs with `allowMissingHandlers`; synth prints a warning for each). It fails every
 * invocation, so SQS messages end in the DLQ and alarms fire instead of being silently dropped.
 */
export async function handler(): Promise<never> {
  throw new Error(`${process.env.POWERTOOLS_SERVICE_NAME ?? "this function"} is not implemented yet`);
}
