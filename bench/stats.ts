/** Summaries of repeated measurements: the median and the spread of several rounds. */

export interface Summary {
  /** Median of the samples. */
  median: number;
  min: number;
  max: number;
  /** (max - min) / median, as a fraction: how far apart the rounds were. */
  spread: number;
  samples: number[];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}

export function summarize(samples: readonly number[]): Summary {
  const m = median(samples);
  const min = Math.min(...samples);
  const max = Math.max(...samples);
  return { median: m, min, max, spread: m === 0 ? 0 : (max - min) / Math.abs(m), samples: [...samples] };
}

/** Rounds to a number of significant digits, for the report (not for the computations). */
export function sig(x: number, digits = 3): number {
  if (!Number.isFinite(x) || x === 0) return x;
  return Number(x.toPrecision(digits));
}
