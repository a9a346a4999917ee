import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";

/**
 * A stand-in for the external payment provider of functions/payment-consumer (PAYMENT_GATEWAY_URL):
 * POST /charges with an `Idempotency-Key`. It is the *external effect* of the chaos runs, and its
 * ledger (a JSON-lines file, the provider's own storage) is what the invariants read: every call,
 * in order, whether it charged, and whether chaos crashed the caller around it.
 *
 * Crash hooks: for each call, `decide` may say
 * - `before`: the caller's environment is killed before the charge (no effect; the lease dies with it);
 * - `after`: the charge is made and answered, then the caller is killed before it can complete its
 *   dedup record: the one window where a lease-guarded effect may legitimately run twice.
 */
export interface ChargeCall {
  readonly seq: number;
  readonly at: number;
  readonly orderId: string;
  readonly idempotencyKey: string;
  readonly amountCents: number;
  /** charged | declined | crash-before | unavailable (503: a transient failure, retried by the consumer) */
  readonly outcome: "charged" | "declined" | "crash-before" | "unavailable";
  /** The caller was killed right after this (charged) call was answered. */
  readonly crashAfter: boolean;
  /**
   * Every function environment charging this order when the call arrived (their ids). An order can
   * be in two invocations at once (the main topic and a retry topic), and the provider cannot tell
   * which one called.
   */
  readonly callers: readonly string[];
}

/** A crash of a caller's environment, at `at` (for any reason: injected, timed out...). */
export interface CrashRecord {
  readonly crash: true;
  readonly environment: string;
  readonly at: number;
  readonly reason: string;
}

export type CrashDecision = "none" | "before" | "after";

export interface PaymentProvider {
  readonly url: string;
  readonly ledgerFile: string;
  /** Reads the charge calls back from the ledger file. */
  readLedger(): ChargeCall[];
  /** Reads the crashes back from the ledger file. */
  readCrashes(): CrashRecord[];
  /** Appends a crash of a caller's environment to the ledger (every death of a payment environment). */
  recordCrash(environment: string, reason: string): void;
  close(): Promise<void>;
}

export async function startPaymentProvider(options: {
  ledgerFile: string;
  /** Amounts above this are declined (402). @default 1 000 000 */
  limitCents?: number;
  decide?: (orderId: string) => CrashDecision;
  /** Kills the environments that are charging `orderId`. Returns false if none could be found. */
  killCaller?: (orderId: string) => boolean;
  /** The ids of the environments charging `orderId`, for the ledger. */
  callers?: (orderId: string) => string[];
  /** While true, every call is answered 503 (the provider is down; nothing is charged). */
  unavailable?: () => boolean;
}): Promise<PaymentProvider> {
  if (!existsSync(options.ledgerFile)) writeFileSync(options.ledgerFile, "");
  let seq = 0;
  const limit = options.limitCents ?? 1_000_000;
  const write = (call: ChargeCall) => appendFileSync(options.ledgerFile, `${JSON.stringify(call)}\n`);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: { orderId?: string; amountCents?: number } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const orderId = String(body.orderId ?? "");
      const idempotencyKey = String(req.headers["idempotency-key"] ?? "");
      const amountCents = Number(body.amountCents ?? 0);
      const base = {
        seq: ++seq,
        at: Date.now(),
        orderId,
        idempotencyKey,
        amountCents,
        callers: options.callers?.(orderId) ?? [],
      };
      if (options.unavailable?.()) {
        write({ ...base, outcome: "unavailable", crashAfter: false });
        res
          .writeHead(503, { "content-type": "application/json" })
          .end(JSON.stringify({ error: "unavailable" }));
        return;
      }
      if (amountCents > limit) {
        write({ ...base, outcome: "declined", crashAfter: false });
        res.writeHead(402, { "content-type": "application/json" }).end(JSON.stringify({ error: "declined" }));
        return;
      }
      const decision = options.decide?.(orderId) ?? "none";
      if (decision === "before" && options.killCaller?.(orderId)) {
        write({ ...base, outcome: "crash-before", crashAfter: false });
        res.destroy();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: `pay_${idempotencyKey}` }), () => {
        // Answered: the effect is done. Now crash the caller before it records completion.
        const crashAfter = decision === "after" && (options.killCaller?.(orderId) ?? false);
        write({ ...base, outcome: "charged", crashAfter });
      });
    });
  });
  const readLines = () =>
    readFileSync(options.ledgerFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ChargeCall | CrashRecord);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  server.unref();
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    ledgerFile: options.ledgerFile,
    readLedger: () => readLines().filter((l): l is ChargeCall => !("crash" in l)),
    readCrashes: () => readLines().filter((l): l is CrashRecord => "crash" in l),
    recordCrash(environment, reason) {
      appendFileSync(
        options.ledgerFile,
        `${JSON.stringify({ crash: true, environment, at: Date.now(), reason })}\n`,
      );
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
