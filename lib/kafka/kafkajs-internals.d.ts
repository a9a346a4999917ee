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

// Only what the stopped-fetcher fix touches.
declare module "kafkajs/src/consumer/runner.js" {
  export default class Runner {
    running: boolean;
    fetch(nodeId: number): Promise<unknown[]>;
  }
}

// Only what the ordered-headers fix touches.
declare module "kafkajs/src/protocol/encoder.js" {
  export default class Encoder {
    writeVarIntBytes(value: unknown): Encoder;
    writeVarIntArray(array: unknown[], type?: string): Encoder;
    writeVarIntString(value: string): Encoder;
    readonly buffer: Buffer;
  }
}
