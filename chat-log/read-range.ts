/**
 * Validation of a log read's offset and length (seed 002, "Reading part of a log"): whole numbers
 * of zero or more, given as numbers or as digit-only strings (query values), refused otherwise with
 * the seed's exact messages.
 */
import { OdaError } from '../lib/errors.ts';

function shown(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return JSON.stringify(v);
  return String(v);
}

/** A non-negative safe integer from a number or a digit-only string; undefined when absent. */
export function parseReadBound(value: unknown, which: 'offset' | 'length'): number | undefined {
  if (value === undefined) return undefined;
  let n = Number.NaN;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^[0-9]+$/.test(value)) n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      `read ${which} must be a non-negative safe integer, got ${shown(value)}`,
      { param: which },
    );
  }
  return n === 0 ? 0 : n; // never -0
}

/** The offset (default 0) and length (default: to the end) of a read. */
export function parseReadRange(
  offset: unknown,
  length: unknown,
): { offset: number; length: number | undefined } {
  return { offset: parseReadBound(offset, 'offset') ?? 0, length: parseReadBound(length, 'length') };
}
