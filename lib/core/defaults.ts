/**
 * `{ ...defaults, ...options }`, except that an option set to `undefined` keeps the default (a
 * spread would let it through). Resolved once, when a consumer is created.
 */
export function withDefaults<D extends object>(defaults: D, options: Partial<D> | object): D {
  const out: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const name of Object.keys(defaults)) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined) out[name] = value;
  }
  return out as D;
}
