/** Small readers shared by the wire-format accessors and normalizers. */

export type Obj = Record<string, unknown>;

/** True for a plain JSON object (not an array, not null). */
export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value when it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
