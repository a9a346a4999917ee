import type { CfnResource } from "../../runtime/cloudAssembly.ts";
import { resolveString } from "../../runtime/intrinsics.ts";
import { findFunction, type MaterialiseState } from "../../runtime/materialiseState.ts";

/** `rate(5 minutes)` → ms. cron() schedules are not emulated. */
export function rateMs(expression: string): number {
  const m = /^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$/.exec(expression.trim());
  if (!m) throw new Error(`schedule ${expression} is not emulated (rate() expressions are)`);
  const unit = m[2]!.startsWith("minute") ? 60_000 : m[2]!.startsWith("hour") ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}

/** The rule's ARN, known before its targets resolve (other resources may reference it). */
export const ruleArn = (id: string, s: MaterialiseState): string =>
  `arn:aws:events:${s.region}:${s.accountId}:rule/${s.prefix}${s.stackName}-${id}`;

/**
 * `AWS::Events::Rule` with a `rate()` schedule → a local schedule invoking its Lambda targets, once
 * every function exists. A disabled rule is inert; event-pattern rules and cron are errors.
 */
export function materialiseSchedule(id: string, r: CfnResource, s: MaterialiseState): void {
  const p = r.Properties ?? {};
  if (p.State === "DISABLED") {
    s.report.inert.push({ logicalId: id, type: r.Type, detail: "disabled" });
    return;
  }
  if (p.ScheduleExpression === undefined)
    throw new Error("event-pattern rules are not emulated (schedules are)");
  const expression = resolveString(p.ScheduleExpression, s.ctx, `${id}.ScheduleExpression`);
  const everyMs = rateMs(expression);
  const targets: Array<{ functionName: string; input?: unknown }> = [];
  let retryAttempts = 2;
  for (const t of (p.Targets as Array<Record<string, unknown>> | undefined) ?? []) {
    const arn = resolveString(t.Arn, s.ctx, `${id}.Targets.Arn`);
    const fn = findFunction(s, arn);
    if (!fn) throw new Error(`target ${arn} is not a local function`);
    const input =
      t.Input === undefined ? undefined : JSON.parse(resolveString(t.Input, s.ctx, `${id}.Targets.Input`));
    targets.push({ functionName: fn.name, ...(input !== undefined ? { input } : {}) });
    const rp = t.RetryPolicy as { MaximumRetryAttempts?: unknown } | undefined;
    if (rp?.MaximumRetryAttempts !== undefined) retryAttempts = Number(rp.MaximumRetryAttempts);
  }
  s.schedules.push({
    logicalId: id,
    name: `${s.prefix}${s.stackName}-${id}`,
    arn: ruleArn(id, s),
    expression,
    everyMs,
    targets,
    retryAttempts,
  });
  s.report.created.push({
    logicalId: id,
    type: r.Type,
    detail: `${expression} → ${targets.map((t) => t.functionName).join(", ")}`,
  });
}
