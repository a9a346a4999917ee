/**
 * CloudFormation intrinsic functions, resolved against the local materialisation: `Ref`,
 * `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::Select`, `Fn::Split`, `Fn::If`, `Fn::Equals`, `Fn::And`,
 * `Fn::Or`, `Fn::Not`, `Condition`, `Fn::Base64`, `Fn::GetAZs` and the pseudo parameters. Anything
 * else (`Fn::ImportValue`, `Fn::FindInMap` without a mapping, macros) throws `UnresolvableError`
 * naming the function and the path, so the materialiser can list it instead of guessing.
 */

export class UnresolvableError extends Error {
  override readonly name = "UnresolvableError";
}

export interface ResolveContext {
  /** `Ref` of a resource or parameter (after the pseudo parameters). */
  ref(logicalId: string): string;
  /** `Fn::GetAtt` of a resource. */
  getAtt(logicalId: string, attribute: string): string;
  /** Condition name → value. */
  condition(name: string): boolean;
  readonly region: string;
  readonly accountId: string;
  readonly stackName: string;
  readonly partition?: string;
  readonly urlSuffix?: string;
  readonly mappings?: Record<string, Record<string, Record<string, unknown>>>;
  /**
   * The local value a computed string stands for, if any: an imported resource's ARN or URL → its
   * local stand-in's (`MaterialiseState.alias`). Applied to each literal and to each intrinsic's
   * result, never inside an intrinsic's arguments, so `Fn::Split` of an imported ARN still sees the
   * ARN the template names.
   */
  alias?(value: string): string | undefined;
}

/** `AWS::NoValue` removes the property (or list element) that holds it. */
export const NO_VALUE: unique symbol = Symbol("AWS::NoValue");

export function pseudoParameter(name: string, ctx: ResolveContext): string | typeof NO_VALUE | undefined {
  switch (name) {
    case "AWS::Region":
      return ctx.region;
    case "AWS::AccountId":
      return ctx.accountId;
    case "AWS::StackName":
      return ctx.stackName;
    case "AWS::StackId":
      return `arn:${ctx.partition ?? "aws"}:cloudformation:${ctx.region}:${ctx.accountId}:stack/${ctx.stackName}/00000000-0000-0000-0000-000000000000`;
    case "AWS::Partition":
      return ctx.partition ?? "aws";
    case "AWS::URLSuffix":
      return ctx.urlSuffix ?? "amazonaws.com";
    case "AWS::NoValue":
      return NO_VALUE;
    case "AWS::NotificationARNs":
      return "";
    default:
      return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function intrinsicOf(v: unknown): [string, unknown] | undefined {
  if (!isObject(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1) return undefined;
  const k = keys[0]!;
  return k === "Ref" || k === "Condition" || k.startsWith("Fn::") ? [k, v[k]] : undefined;
}

const str = (v: unknown, what: string, path: string): string => {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new UnresolvableError(`${path}: ${what} expects a string, got ${JSON.stringify(v)}`);
};

/** A computed value, or the local value it stands for (`ResolveContext.alias`). */
const aliased = (v: unknown, ctx: ResolveContext): unknown =>
  typeof v === "string" ? (ctx.alias?.(v) ?? v) : v;

/** Resolves every intrinsic inside `value` (deeply). `path` names the property in errors. */
export function resolveValue(value: unknown, ctx: ResolveContext, path = "$"): unknown {
  return resolveIn(value, ctx, path, true);
}

/** `outer`: not inside an intrinsic's arguments, where a computed string is replaced by its alias. */
function resolveIn(value: unknown, ctx: ResolveContext, path: string, outer: boolean): unknown {
  const intrinsic = intrinsicOf(value);
  if (intrinsic) {
    const v = resolveIntrinsic(intrinsic[0], intrinsic[1], ctx, path);
    return outer ? aliased(v, ctx) : v;
  }
  if (typeof value === "string") return outer ? aliased(value, ctx) : value;
  if (Array.isArray(value)) {
    return value.map((v, i) => resolveIn(v, ctx, `${path}[${i}]`, outer)).filter((v) => v !== NO_VALUE);
  }
  if (isObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = resolveIn(v, ctx, `${path}.${k}`, outer);
      if (r !== NO_VALUE) out[k] = r;
    }
    return out;
  }
  return value;
}

/** Resolves to a string (for names, ARNs, environment values). */
export function resolveString(value: unknown, ctx: ResolveContext, path = "$"): string {
  return str(resolveValue(value, ctx, path), "the value", path);
}

type Resolve = (v: unknown, sub?: string) => unknown;

/** `Fn::GetAtt`: `[id, attribute]` or `"id.attribute"`. */
function getAtt(arg: unknown, r: Resolve, ctx: ResolveContext, path: string): unknown {
  const [id, attr] = Array.isArray(arg)
    ? [str(arg[0], "Fn::GetAtt", path), str(r(arg[1]), "Fn::GetAtt", path)]
    : (() => {
        const s = str(arg, "Fn::GetAtt", path);
        const dot = s.indexOf(".");
        return [s.slice(0, dot), s.slice(dot + 1)];
      })();
  return ctx.getAtt(id, attr);
}

/** `Fn::Sub`: `${Var}` from its variables, pseudo parameters, `${Id.Attr}`, `${Id}`; `${!Literal}` stays. */
function substitute(arg: unknown, r: Resolve, ctx: ResolveContext, path: string): string {
  const [template, vars] = Array.isArray(arg) ? [arg[0], arg[1] ?? {}] : [arg, {}];
  const t = str(template, "Fn::Sub", path);
  const resolvedVars = isObject(vars) ? (r(vars) as Record<string, unknown>) : {};
  return t.replace(/\$\{(!?)([^}]*)\}/g, (_m, bang: string, expr: string) => {
    if (bang) return `\${${expr}}`; // ${!Literal}
    if (expr in resolvedVars) return str(resolvedVars[expr], "Fn::Sub variable", path);
    const pseudo = pseudoParameter(expr, ctx);
    if (typeof pseudo === "string") return pseudo;
    const dot = expr.indexOf(".");
    return dot > 0 ? ctx.getAtt(expr.slice(0, dot), expr.slice(dot + 1)) : ctx.ref(expr);
  });
}

function resolveIntrinsic(fn: string, arg: unknown, ctx: ResolveContext, path: string): unknown {
  const r: Resolve = (v, sub = fn) => resolveIn(v, ctx, `${path}.${sub}`, false);
  switch (fn) {
    case "Ref": {
      const name = str(arg, "Ref", path);
      const pseudo = pseudoParameter(name, ctx);
      return pseudo !== undefined ? pseudo : ctx.ref(name);
    }
    case "Fn::GetAtt":
      return getAtt(arg, r, ctx, path);
    case "Fn::Join": {
      if (!Array.isArray(arg) || arg.length !== 2) throw new UnresolvableError(`${path}: malformed Fn::Join`);
      const delimiter = str(arg[0], "Fn::Join delimiter", path);
      const list = r(arg[1]);
      if (!Array.isArray(list)) throw new UnresolvableError(`${path}: Fn::Join needs a list`);
      return list.map((v) => str(v, "Fn::Join element", path)).join(delimiter);
    }
    case "Fn::Sub":
      return substitute(arg, r, ctx, path);
    case "Fn::Select": {
      if (!Array.isArray(arg) || arg.length !== 2)
        throw new UnresolvableError(`${path}: malformed Fn::Select`);
      const index = Number(r(arg[0]));
      const list = r(arg[1]);
      if (!Array.isArray(list) || !(index >= 0 && index < list.length))
        throw new UnresolvableError(`${path}: Fn::Select index ${index} out of range`);
      return list[index];
    }
    case "Fn::Split": {
      if (!Array.isArray(arg) || arg.length !== 2)
        throw new UnresolvableError(`${path}: malformed Fn::Split`);
      return str(r(arg[1]), "Fn::Split source", path).split(str(arg[0], "Fn::Split delimiter", path));
    }
    case "Fn::If": {
      if (!Array.isArray(arg) || arg.length !== 3) throw new UnresolvableError(`${path}: malformed Fn::If`);
      return ctx.condition(str(arg[0], "Fn::If condition", path))
        ? r(arg[1], "Fn::If[1]")
        : r(arg[2], "Fn::If[2]");
    }
    case "Fn::Equals": {
      if (!Array.isArray(arg) || arg.length !== 2)
        throw new UnresolvableError(`${path}: malformed Fn::Equals`);
      return JSON.stringify(r(arg[0])) === JSON.stringify(r(arg[1]));
    }
    case "Fn::And":
      return (arg as unknown[]).every((c) => r(c) === true);
    case "Fn::Or":
      return (arg as unknown[]).some((c) => r(c) === true);
    case "Fn::Not":
      return r((arg as unknown[])[0]) !== true;
    case "Condition":
      return ctx.condition(str(arg, "Condition", path));
    case "Fn::Base64":
      return Buffer.from(str(r(arg), "Fn::Base64", path)).toString("base64");
    case "Fn::GetAZs":
      return [`${ctx.region}a`, `${ctx.region}b`, `${ctx.region}c`];
    case "Fn::FindInMap": {
      const [map, top, second] = (arg as unknown[]).map((v) => str(r(v), "Fn::FindInMap", path));
      const found = ctx.mappings?.[map!]?.[top!]?.[second!];
      if (found === undefined)
        throw new UnresolvableError(`${path}: Fn::FindInMap ${map}.${top}.${second} not found`);
      return found;
    }
    default:
      throw new UnresolvableError(`${path}: ${fn} is not supported locally`);
  }
}

/** Logical ids a value refers to (Ref, GetAtt, Sub), for ordering creation. */
export function referencedIds(value: unknown, out = new Set<string>()): Set<string> {
  const intrinsic = intrinsicOf(value);
  if (intrinsic) {
    const [fn, arg] = intrinsic;
    if (fn === "Ref" && typeof arg === "string" && !arg.startsWith("AWS::")) out.add(arg);
    else if (fn === "Fn::GetAtt") {
      const id = Array.isArray(arg) ? arg[0] : typeof arg === "string" ? arg.split(".")[0] : undefined;
      if (typeof id === "string") out.add(id);
    } else if (fn === "Fn::Sub") {
      const t = Array.isArray(arg) ? arg[0] : arg;
      if (typeof t === "string") {
        for (const m of t.matchAll(/\$\{([^!}][^}]*)\}/g)) {
          const expr = m[1]!;
          const vars = Array.isArray(arg) && isObject(arg[1]) ? arg[1] : {};
          if (!expr.startsWith("AWS::") && !(expr in vars)) out.add(expr.split(".")[0]!);
        }
      }
      if (Array.isArray(arg)) referencedIds(arg[1], out);
    } else referencedIds(arg, out);
    return out;
  }
  if (Array.isArray(value)) for (const v of value) referencedIds(v, out);
  else if (isObject(value)) for (const v of Object.values(value)) referencedIds(v, out);
  return out;
}
