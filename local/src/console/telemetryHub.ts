/**
 * The functions' log streams as the console sees them: each line parsed once (logLine.ts), the
 * last lines of each function kept for the page, the figures derived from them (functionMetrics.ts),
 * and every new line handed to the listeners (the server's live stream). It is fed through the
 * function host's `logTee` (`sink`), so it reads exactly what the log files get.
 */
import { Writable } from "node:stream";
import { FunctionMetrics } from "../services/lambda/functionMetrics.ts";
import { parseLogLine } from "../services/lambda/logLine.ts";
import type { LogLineDto } from "./consoleApi.ts";

export interface TelemetryHubOptions {
  /** Lines kept per function. @default 2000 */
  readonly linesPerFunction?: number;
  readonly bucketMs?: number;
  readonly now?: () => number;
}

/** The console's view of every function's log stream. */
export interface TelemetryHub {
  /** A stream that takes one function's output (give it as the runtime's `logTee`). */
  sink(functionName: string): NodeJS.WritableStream;
  /** The kept lines of one function (all, when none is named), oldest first, after `afterSeq`. */
  lines(functionName?: string, afterSeq?: number): LogLineDto[];
  metrics(functionName: string): FunctionMetrics;
  functionNames(): string[];
  /** Called with each new line. @returns unsubscribe */
  subscribe(listener: (line: LogLineDto) => void): () => void;
}

export function createTelemetryHub(options: TelemetryHubOptions = {}): TelemetryHub {
  const keep = options.linesPerFunction ?? 2_000;
  const now = options.now ?? Date.now;
  const kept = new Map<string, LogLineDto[]>();
  const metrics = new Map<string, FunctionMetrics>();
  const listeners = new Set<(line: LogLineDto) => void>();
  let seq = 0;

  const metricsOf = (fn: string) => {
    let m = metrics.get(fn);
    if (!m) {
      m = new FunctionMetrics(fn, options.bucketMs ? { bucketMs: options.bucketMs } : {});
      metrics.set(fn, m);
      kept.set(fn, kept.get(fn) ?? []);
    }
    return m;
  };
  const take = (fn: string, text: string) => {
    if (text.length === 0) return;
    const at = now();
    const parsed = parseLogLine(text);
    metricsOf(fn).add(parsed, at);
    const line: LogLineDto = {
      seq: ++seq,
      at,
      fn,
      level: parsed.level,
      text,
      ...(parsed.requestId ? { requestId: parsed.requestId } : {}),
    };
    const list = kept.get(fn)!;
    list.push(line);
    if (list.length > keep) list.splice(0, list.length - keep);
    for (const l of listeners) l(line);
  };

  return {
    sink(functionName) {
      metricsOf(functionName);
      let partial = "";
      return new Writable({
        write(chunk: Buffer, _encoding, done) {
          const lines = (partial + chunk.toString()).split("\n");
          partial = lines.pop() ?? "";
          for (const l of lines) take(functionName, l);
          done();
        },
      });
    },
    lines(functionName, afterSeq = 0) {
      const all = functionName ? (kept.get(functionName) ?? []) : [...kept.values()].flat();
      return all.filter((l) => l.seq > afterSeq).sort((a, b) => a.seq - b.seq);
    },
    metrics: metricsOf,
    functionNames: () => [...metrics.keys()],
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** A stream that writes every chunk to each of `streams` (the terminal's tee and the console's). */
export function fanOut(...streams: NodeJS.WritableStream[]): NodeJS.WritableStream {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const s of streams) s.write(chunk);
      done();
    },
  });
}
