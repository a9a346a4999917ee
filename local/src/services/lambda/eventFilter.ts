/**
 * Lambda event filtering (FilterCriteria), evaluated the way the event source mapping does before
 * it batches: a record passes if ANY filter pattern matches. In a pattern, object keys are ANDed
 * and a leaf array is an OR of rules: literals (string, number, boolean, null), `prefix`, `suffix`,
 * `equals-ignore-case`, `anything-but` (values, or `{ prefix }`), `numeric` (comparisons),
 * `exists`. A data value that is an array matches if any element does.
 *
 * The data a pattern sees: for SQS the record with `body` parsed when it is JSON; for Kafka the
 * record with `value` decoded and parsed when it is JSON; for DynamoDB Streams the record as is.
 */

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export function matchesAnyFilter(patterns: readonly unknown[], data: unknown): boolean {
  return patterns.length === 0 || patterns.some((p) => matchesPattern(p, data));
}

export function matchesPattern(pattern: unknown, data: unknown): boolean {
  if (!isObject(pattern)) return false;
  const obj = isObject(data) ? data : {};
  return Object.entries(pattern).every(([key, sub]) => {
    const value = obj[key];
    if (Array.isArray(sub)) return matchLeaf(sub, value);
    if (isObject(sub)) return isObject(value) && matchesPattern(sub, value);
    return false;
  });
}

function matchLeaf(rules: unknown[], value: unknown): boolean {
  return rules.some((rule) => {
    if (isObject(rule) && "exists" in rule) return (value !== undefined) === (rule.exists === true);
    if (value === undefined) return false;
    const values = Array.isArray(value) ? value : [value];
    return values.some((v) => matchRule(rule, v));
  });
}

function matchRule(rule: unknown, v: unknown): boolean {
  if (!isObject(rule)) return rule === v;
  if (typeof rule.prefix === "string") return typeof v === "string" && v.startsWith(rule.prefix);
  if (typeof rule.suffix === "string") return typeof v === "string" && v.endsWith(rule.suffix);
  if (typeof rule["equals-ignore-case"] === "string")
    return typeof v === "string" && v.toLowerCase() === (rule["equals-ignore-case"] as string).toLowerCase();
  if ("anything-but" in rule) {
    const ab = rule["anything-but"];
    if (isObject(ab) && typeof ab.prefix === "string")
      return typeof v === "string" && !v.startsWith(ab.prefix);
    const list = Array.isArray(ab) ? ab : [ab];
    return !list.includes(v);
  }
  if (Array.isArray(rule.numeric)) {
    const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
    if (Number.isNaN(n)) return false;
    const ops = rule.numeric as unknown[];
    for (let i = 0; i + 1 < ops.length; i += 2) {
      const target = Number(ops[i + 1]);
      const ok =
        ops[i] === "="
          ? n === target
          : ops[i] === ">"
            ? n > target
            : ops[i] === ">="
              ? n >= target
              : ops[i] === "<"
                ? n < target
                : ops[i] === "<="
                  ? n <= target
                  : false;
      if (!ok) return false;
    }
    return true;
  }
  return false;
}

/** The JSON view of a text payload for filtering: parsed if it is a JSON object, else the text. */
export function filterView(text: string): unknown {
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : text;
  } catch {
    return text;
  }
}
