import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { LocalSchedule } from "../../runtime/model.ts";
import type { FunctionHost } from "../lambda/functionHost.ts";
import { type EventSource, newStats } from "../sqs/eventSource.ts";

/**
 * An EventBridge schedule rule (`rate(...)`) targeting functions: every period each target is
 * invoked asynchronously with a "Scheduled Event", retried up to the target's
 * MaximumRetryAttempts (Lambda's asynchronous retries, compressed to seconds locally). The first
 * run happens one period after start, as with a new rule.
 */
export function scheduleEventSource(
  schedule: LocalSchedule,
  host: FunctionHost,
  region: string,
  accountId: string,
  options: { firstRunAfterMs?: number } = {},
): EventSource {
  const stats = newStats();
  const abort = new AbortController();
  let loop: Promise<void> | undefined;
  let inFlight = 0;
  const pause = (ms: number) =>
    sleep(ms, undefined, { signal: abort.signal }).then(
      () => true,
      () => false,
    );

  const fire = async () => {
    for (const target of schedule.targets) {
      const event = target.input ?? {
        version: "0",
        id: randomUUID(),
        "detail-type": "Scheduled Event",
        source: "aws.events",
        account: accountId,
        time: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
        region,
        resources: [schedule.arn],
        detail: {},
      };
      inFlight++;
      try {
        for (let attempt = 0; attempt <= schedule.retryAttempts; attempt++) {
          stats.batches++;
          const result = await host.invoke(target.functionName, event);
          if (result.ok) {
            stats.succeeded++;
            break;
          }
          stats.functionErrors++;
          if (attempt === schedule.retryAttempts) stats.discarded++;
          else if (!(await pause(1000 * (attempt + 1)))) break;
        }
      } finally {
        inFlight--;
      }
    }
  };

  return {
    mapping: {
      logicalId: schedule.logicalId,
      functionName: schedule.targets.map((t) => t.functionName).join(","),
      kind: "schedule",
    },
    stats,
    async start() {
      loop = (async () => {
        let wait = options.firstRunAfterMs ?? schedule.everyMs;
        while (await pause(wait)) {
          void fire();
          wait = schedule.everyMs;
        }
      })();
    },
    async stop() {
      abort.abort();
      await loop;
    },
    inFlight: () => inFlight,
  };
}
