/**
 * The page's calls to its console: reads are GETs, actions POSTs with the token in a header and a
 * JSON body (consoleGuard.ts), and one EventSource for everything live.
 */
import type { ConsoleEvents } from "../consoleApi.ts";

const token = document.querySelector<HTMLMetaElement>('meta[name="console-token"]')?.content ?? "";

/** An answer that was not 200, with the server's reason. */
export class ApiError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

async function answer<T>(res: Response): Promise<T> {
  const body = (await res.json().catch(() => ({ error: res.statusText }))) as T & { error?: string };
  if (!res.ok) throw new ApiError(body.error ?? res.statusText, res.status);
  return body;
}

export async function get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
  const q = new URLSearchParams(query).toString();
  return answer<T>(await fetch(`${path}${q ? `?${q}` : ""}`, { headers: { "X-Console-Token": token } }));
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  return answer<T>(
    await fetch(path, {
      method: "POST",
      headers: { "X-Console-Token": token, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
}

export type LiveEvent = keyof ConsoleEvents | "tick";
export type LiveListener = <K extends LiveEvent>(
  event: K,
  data: K extends keyof ConsoleEvents ? ConsoleEvents[K] : number,
) => void;

/** The live stream; `onState` says whether it is connected (the EventSource reconnects by itself). */
export function live(listener: LiveListener, onState: (connected: boolean) => void): EventSource {
  const source = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  source.onopen = () => onState(true);
  source.onerror = () => onState(false);
  for (const event of ["logs", "queues", "functions", "denial", "changed", "tick"] as const)
    source.addEventListener(event, (e) => listener(event, JSON.parse((e as MessageEvent<string>).data)));
  return source;
}
