/**
 * The strings a template's resources compute from literals, parameters and pseudo parameters alone:
 * where a template names something it does not create (an imported queue's ARN in an event source
 * mapping, a policy statement, a function's variable). A value built from one of the template's own
 * resources is local by construction and is not one of them, though its literal parts are looked at.
 */
import type { CfnTemplate } from "./cloudAssembly.ts";
import { type ResolveContext, referencedIds, resolveValue } from "./intrinsics.ts";

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const isIntrinsic = (v: Record<string, unknown>): boolean => {
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === "Ref" || keys[0] === "Condition" || keys[0]!.startsWith("Fn::"));
};

/**
 * Every such string of the resources' `Properties` (resources whose condition is false are
 * skipped). An intrinsic that names none of the template's resources is resolved whole (a `Fn::Join`
 * of `https://sqs.`, the region, `AWS::URLSuffix`, the account and the name is one URL); one that
 * does is looked into; one that cannot resolve locally (`Fn::ImportValue`) is left out.
 */
export function constantStrings(template: CfnTemplate, ctx: ResolveContext): Set<string> {
  const resources = template.Resources ?? {};
  const out = new Set<string>();
  const collect = (v: unknown): void => {
    if (typeof v === "string") out.add(v);
    else if (Array.isArray(v)) for (const x of v) collect(x);
    else if (isObject(v)) for (const x of Object.values(v)) collect(x);
  };
  const walk = (v: unknown): void => {
    if (typeof v === "string") out.add(v);
    else if (Array.isArray(v)) for (const x of v) walk(x);
    else if (isObject(v)) {
      if (!isIntrinsic(v)) for (const x of Object.values(v)) walk(x);
      else if ([...referencedIds(v)].some((id) => id in resources)) for (const x of Object.values(v)) walk(x);
      else {
        try {
          collect(resolveValue(v, ctx));
        } catch {
          // Not resolvable locally (an export of another stack, a parameter without a default):
          // nothing this runtime could stand in for.
        }
      }
    }
  };
  for (const r of Object.values(resources)) {
    if (r.Condition && !conditionHolds(r.Condition, ctx)) continue;
    walk(r.Properties ?? {});
  }
  return out;
}

/** A condition that cannot be evaluated counts as true: its resource is looked at rather than missed. */
function conditionHolds(name: string, ctx: ResolveContext): boolean {
  try {
    return ctx.condition(name);
  } catch {
    return true;
  }
}
