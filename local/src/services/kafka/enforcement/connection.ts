/**
 * One client connection through the gateway: requests are screened one at a time, in order
 * (requestScreen.ts), and the answers go back in request order whether the gateway or the broker
 * gave them (Kafka clients match answers to requests by order as well as by correlation id).
 */
import type { Socket } from "node:net";
import { RESPONSES } from "./messages.ts";
import { type RequestHeader, type ScreenDeps, type Session, screenRequest } from "./requestScreen.ts";
import { type AnsweredRequest, type LocalAddress, rewriteResponse } from "./responseRewrite.ts";
import { encode, frame, frameSplitter, type Message, responseFrame } from "./wire.ts";

/** A request waiting for its answer, in request order. */
interface Slot extends AnsweredRequest {
  readonly correlationId: number;
  /** The answer, once known (the broker's, rewritten, or the gateway's own). */
  ready?: Buffer;
}

export interface ConnectionDeps extends ScreenDeps {
  readonly localAddress: LocalAddress;
}

/** Serves `client` through `broker` (already dialled) until either closes; `onClose` once they are. */
export function serveConnection(
  client: Socket,
  broker: Socket,
  deps: ConnectionDeps,
  onClose: () => void,
): void {
  const slots: Slot[] = [];
  const session: Session = { caller: undefined };
  let closeAfterFlush = false;
  const close = () => {
    client.destroy();
    broker.destroy();
    onClose();
  };
  // Nothing is answered before the broker is reached, SASL included (the gateway answers that
  // itself): a broker that is down must look down. A refused dial resets the client, which a
  // client reads as a connection error, as it would read a refused connect, and so tries another
  // broker; a close in the middle of SASL would read as a failed authentication, which kafkajs
  // never retries (a consumer of a dead broker's listener then rejoined without end).
  let chain = new Promise<void>((resolve) => {
    if (!broker.connecting) return resolve();
    broker.once("connect", () => resolve());
  });
  client.on("error", close).on("close", close);
  broker.on("close", close).on("error", () => {
    if (!client.destroyed) client.resetAndDestroy();
    close();
  });

  const flush = () => {
    while (slots[0]?.ready) client.write(slots.shift()!.ready!);
    if (closeAfterFlush && slots.length === 0) client.end();
  };
  const push = (h: RequestHeader, apiVersion: number, denied?: Message[]): Slot => {
    const slot: Slot = {
      correlationId: h.correlationId,
      apiKey: h.apiKey,
      apiVersion,
      ...(denied ? { denied } : {}),
    };
    slots.push(slot);
    return slot;
  };

  async function onRequest(raw: Buffer) {
    const { header, screened } = await screenRequest(raw, session, deps);
    switch (screened.kind) {
      case "refuse":
        return close();
      case "drop":
        return;
      case "answer": {
        const slot = push(header, screened.version);
        if (screened.close) closeAfterFlush = true;
        slot.ready = responseFrame(
          slot.correlationId,
          encode(RESPONSES[slot.apiKey]!, slot.apiVersion, screened.body).toBuffer(),
        );
        return flush();
      }
      case "forward":
        if (screened.awaitsAnswer) push(header, header.apiVersion, screened.denied);
        broker.write(frame(screened.bytes));
    }
  }

  async function onResponse(raw: Buffer) {
    const correlationId = raw.readInt32BE(0);
    const slot = slots.find((s) => s.correlationId === correlationId && !s.ready);
    if (!slot) return; // an answer to nothing we forwarded
    slot.ready = responseFrame(
      correlationId,
      await rewriteResponse(slot, raw.subarray(4), deps.localAddress),
    );
    flush();
  }

  const inOrder = (handle: (frame: Buffer) => Promise<void>) =>
    frameSplitter((f) => {
      chain = chain
        .then(() => handle(f))
        .catch((error: Error) => {
          process.emitWarning(`local Kafka gateway: ${error.message}`);
          close();
        });
    });
  client.on("data", inOrder(onRequest));
  broker.on("data", inOrder(onResponse));
}
