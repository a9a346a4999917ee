// kafkajs ships no types for its internals; only what the RequestQueue fix touches is declared.
declare module "kafkajs/src/network/requestQueue/index.js" {
  interface PushedRequest {
    entry: { correlationId: number; [k: string]: unknown };
    expectResponse: boolean;
    sendRequest: () => void;
    requestTimeout?: number;
  }
  export default class RequestQueue {
    constructor(options: Record<string, unknown>);
    pending: unknown[];
    throttledUntil: number;
    throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
    push(request: PushedRequest): void;
    maybeThrottle(ms: number | null): void;
    checkPendingRequests(): void;
    scheduleCheckPendingRequests(): void;
    destroy(): void;
  }
}
