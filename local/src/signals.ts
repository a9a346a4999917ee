/**
 * Resolves on the first Ctrl-C or SIGTERM, and keeps the process alive until then. Replaces the
 * default handlers (the emulator guard in childProcess.ts re-raises them), so the caller stops
 * everything in order first.
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  const keepAlive = setInterval(() => {}, 1 << 30);
  process.removeAllListeners("SIGINT");
  process.removeAllListeners("SIGTERM");
  return new Promise((resolve) => {
    const done = (signal: NodeJS.Signals) => {
      clearInterval(keepAlive);
      resolve(signal);
    };
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
  });
}
