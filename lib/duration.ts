const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration such as `500ms`, `30s`, `5m`, `1h`, `1d`; a bare number means minutes.
 * Returns milliseconds, or undefined when the text is not a duration.
 */
export function parseDuration(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) && input >= 0 ? input * UNITS.m! : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(input);
  if (!m) return undefined;
  const value = Number(m[1]);
  const unit = UNITS[m[2] ?? 'm']!;
  return Math.round(value * unit);
}

/** Parses a byte size such as `50mb`, `512kb`, `1gb` or a plain number of bytes. */
export function parseByteSize(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isSafeInteger(input) && input > 0 ? input : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(input);
  if (!m) return undefined;
  const mult = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(m[2] ?? 'b').toLowerCase() as 'b'];
  const bytes = Math.round(Number(m[1]) * mult);
  // A size is at least one byte, as a plain number must be.
  return bytes > 0 ? bytes : undefined;
}
