/**
 * The default logger: one JSON line per entry on stdout, in the shape Powertools Logger writes
 * (`level`, `message`, `timestamp`, `service`, then the extra keys), honouring
 * `POWERTOOLS_LOG_LEVEL` / `AWS_LAMBDA_LOG_LEVEL`. Small on purpose: it keeps Powertools Logger
 * (~18 kB minified) out of every consumer's bundle; pass a Powertools `Logger` as
 * `telemetry.logger` for its sampling, context injection and the rest.
 */
export interface TelemetryLogger {
  error(message: string, ...extra: unknown[]): void;
  warn(message: string, ...extra: unknown[]): void;
  info(message: string, ...extra: unknown[]): void;
  debug(message: string, ...extra: unknown[]): void;
}

const LEVELS = { DEBUG: 8, INFO: 12, WARN: 16, ERROR: 20, CRITICAL: 24, SILENT: 28 } as const;
type Level = keyof typeof LEVELS;

function levelFromEnv(): number {
  const raw = (process.env.POWERTOOLS_LOG_LEVEL ?? process.env.AWS_LAMBDA_LOG_LEVEL ?? "INFO").toUpperCase();
  return LEVELS[(raw in LEVELS ? raw : "INFO") as Level];
}

/** Errors as Powertools formats them: name, message, stack and cause, not `{}`. */
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    return {
      name: value.name,
      message: value.message,
      stack: value.stack,
      ...(value.cause !== undefined ? { cause: value.cause } : {}),
    };
  }
  return typeof value === "bigint" ? value.toString() : value;
}

export function createJsonLogger(serviceName: string): TelemetryLogger {
  // Read once per container (the environment does not change under a running function).
  const threshold = levelFromEnv();
  const write = (level: Level, message: string, extra: unknown[]) => {
    if (LEVELS[level] < threshold) return;
    const entry: Record<string, unknown> = {
      level,
      message,
      timestamp: new Date().toISOString(),
      service: serviceName,
    };
    for (const e of extra) {
      if (e instanceof Error) entry.error = e;
      else if (typeof e === "object" && e !== null) Object.assign(entry, e);
      else if (e !== undefined) entry.extra = e;
    }
    // Lambda sets the trace header per invocation; Powertools logs it under this key.
    if (process.env._X_AMZN_TRACE_ID) entry.xray_trace_id = process.env._X_AMZN_TRACE_ID;
    process.stdout.write(`${JSON.stringify(entry, errorReplacer)}\n`);
  };
  return {
    error: (message, ...extra) => write("ERROR", message, extra),
    warn: (message, ...extra) => write("WARN", message, extra),
    info: (message, ...extra) => write("INFO", message, extra),
    debug: (message, ...extra) => write("DEBUG", message, extra),
  };
}
