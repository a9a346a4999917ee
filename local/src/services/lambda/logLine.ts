/**
 * One line of a function's log stream, read the way CloudWatch Logs Insights reads Lambda's: the
 * platform lines (`START`, `END`, `REPORT`, `Task timed out`, `Invoke Error`), the JSON lines of the
 * library's logger (Powertools' shape: `level`, `message`, extra keys), and its EMF metric lines
 * (`_aws.CloudWatchMetrics`). Pure.
 */
import type { LogLevel } from "../../console/consoleApi.ts";

export interface ParsedLogLine {
  readonly level: LogLevel;
  readonly text: string;
  readonly requestId?: string;
  /** A REPORT line: one invocation ended, after this long. */
  readonly report?: { readonly durationMs: number; readonly initMs?: number };
  /** The invocation failed: an error out of the handler, a timeout, an environment that died. */
  readonly invocationError?: boolean;
  /** Killed at its timeout: an invocation with no REPORT line. */
  readonly timedOut?: boolean;
  /** An EMF line's metric values by name. */
  readonly metrics?: Readonly<Record<string, number>>;
}

const REPORT = /^REPORT RequestId: (\S+)\s+Duration: ([\d.]+) ms(?:.*Init Duration: ([\d.]+) ms)?/;
const PLATFORM = /^(START|END) RequestId: (\S+)/;
// `<iso>\t<request id>\tERROR\tInvoke Error\t{...}` (functionWorker.ts) and the host's timeout line.
const INVOKE_ERROR = /^\S+\t(\S+)\tERROR\tInvoke Error\t/;
const TIMED_OUT = /^\S+ (\S+) (?:Task|Init) timed out after /;
const ENVIRONMENT_DIED = /^\S+ environment \S+ (?:crashed|killed)/;
const LEVELS: ReadonlySet<string> = new Set(["DEBUG", "INFO", "WARN", "ERROR"]);

/** The values of an EMF document's declared metrics (a list of values is summed). */
function emfValues(doc: Record<string, unknown>): Record<string, number> | undefined {
  const aws = doc._aws as { CloudWatchMetrics?: Array<{ Metrics?: Array<{ Name?: unknown }> }> } | undefined;
  if (!aws || !Array.isArray(aws.CloudWatchMetrics)) return undefined;
  const out: Record<string, number> = {};
  for (const directive of aws.CloudWatchMetrics)
    for (const m of directive.Metrics ?? []) {
      if (typeof m.Name !== "string") continue;
      const v = doc[m.Name];
      const values = Array.isArray(v) ? v : [v];
      const sum = values.reduce<number>((n, x) => n + (typeof x === "number" ? x : 0), 0);
      out[m.Name] = (out[m.Name] ?? 0) + sum;
    }
  return out;
}

/** A JSON log line: the logger's level, or an EMF document. */
function parseJson(line: string): ParsedLogLine | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return undefined;
  const record = doc as Record<string, unknown>;
  const metrics = emfValues(record);
  if (metrics) return { level: "METRICS", text: line, metrics };
  const level = String(record.level ?? "").toUpperCase();
  const requestId = typeof record.function_request_id === "string" ? record.function_request_id : undefined;
  return {
    level: LEVELS.has(level) ? (level as LogLevel) : level === "CRITICAL" ? "ERROR" : "INFO",
    text: line,
    ...(requestId ? { requestId } : {}),
  };
}

/** Reads one line (without its newline). */
export function parseLogLine(line: string): ParsedLogLine {
  const report = REPORT.exec(line);
  if (report)
    return {
      level: "PLATFORM",
      text: line,
      requestId: report[1]!,
      report: { durationMs: Number(report[2]), ...(report[3] ? { initMs: Number(report[3]) } : {}) },
    };
  const platform = PLATFORM.exec(line);
  if (platform) return { level: "PLATFORM", text: line, requestId: platform[2]! };
  const failed = INVOKE_ERROR.exec(line);
  if (failed) return { level: "ERROR", text: line, requestId: failed[1]!, invocationError: true };
  const timedOut = TIMED_OUT.exec(line);
  if (timedOut)
    return { level: "ERROR", text: line, requestId: timedOut[1]!, invocationError: true, timedOut: true };
  if (ENVIRONMENT_DIED.test(line)) return { level: "ERROR", text: line };
  if (line.startsWith("{")) {
    const json = parseJson(line);
    if (json) return json;
  }
  return { level: /\bDENIED\b|\bError\b/.test(line) ? "ERROR" : "TEXT", text: line };
}
