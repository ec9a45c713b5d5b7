/**
 * Structural limits on JSON bodies, checked on the raw bytes before anything parses or walks them.
 * The body limit bounds bytes, but not the work a body causes: 100k levels of `[` overflow the
 * recursive steps after JSON.parse (a 500 instead of a clear 400), and millions of tiny values keep
 * the event loop busy for seconds while the log checks them (every other request waits). Real
 * requests nest a few dozen levels and hold well under 100k values; these limits leave a wide margin.
 */
import type { RequestHandler } from 'express';
import { OdaError } from '../lib/errors.ts';

export interface JsonLimits {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Most values (containers, members and elements) in one body. */
  maxValues: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 256, maxValues: 1_000_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** Index of the quote that closes the string opened at `open` (the end of the text when none). */
function endOfString(bytes: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at === -1) return bytes.length;
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * Scans JSON text (without parsing it) for the first limit it passes: `depth` or `values`.
 * Values are counted as containers plus separators, which is within one of the true count.
 * Malformed text is left for JSON.parse to refuse with its own message.
 */
export function exceededJsonLimit(bytes: Uint8Array, limits: JsonLimits): 'depth' | 'values' | undefined {
  let depth = 0;
  let values = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === QUOTE) {
      i = endOfString(bytes, i);
      continue;
    }
    if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > limits.maxDepth) return 'depth';
      if (++values > limits.maxValues) return 'values';
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) depth--;
    else if (b === COMMA && ++values > limits.maxValues) return 'values';
  }
  return undefined;
}

/** Express middleware (after the raw body parser): 400 for too deep, 413 for too many values. */
export function jsonLimits(limits: JsonLimits = DEFAULT_JSON_LIMITS): RequestHandler {
  return function checkJsonLimits(req, _res, next) {
    const body: unknown = req.body;
    if (!Buffer.isBuffer(body) || body.length === 0) return next();
    const exceeded = exceededJsonLimit(body, limits);
    if (exceeded === 'depth') {
      throw new OdaError('ODA_ERR_BAD_JSON', 400, `request body nests deeper than ${limits.maxDepth} levels`);
    }
    if (exceeded === 'values') {
      throw new OdaError(
        'ODA_ERR_BODY_TOO_LARGE',
        413,
        `request body holds more than ${limits.maxValues} JSON values`,
      );
    }
    next();
  };
}
