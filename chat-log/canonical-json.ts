/**
 * Canonical JSON: object keys sorted, no whitespace. Used where a digest must not depend on the
 * order fields were written in (tool definition digests, schema fingerprints).
 */

/** JSON text of `value` with every object's keys sorted (code-unit order). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const rec = v as Record<string, unknown>;
    // null prototype: a "__proto__" key stays an ordinary member
    const sorted = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(rec).sort()) sorted[k] = rec[k];
    return sorted;
  });
}
