import { OdaError } from '../lib/errors.ts';
import { decodeUtf8 } from '../lib/utf8.ts';
import {
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  endOfString,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  skipJsonSpace,
} from '../providers/wire-json.ts';
import type { BodyShape } from './json-limits.ts';
import type { ParsedLists } from './parsed-lists.ts';

/**
 * From this size on, a body whose shape scan is known is parsed value by value (see `parsePieces`):
 * V8 puts a string longer than about 128 KiB in its large-object space, on pages of its own mapped
 * for it, and a long chat's body decoded whole cost that mapping on every request (measured on a
 * 2-core VM: 1.2-1.4 ms to decode and parse 204 KB, 5.2 ms for 983 KB, against 0.4 and 1.1 ms by
 * pieces). Below it the whole text is one string, the cheaper road there (0.10-0.15 ms against
 * 0.14-0.17 ms at 102 KB).
 */
export const PIECEWISE_FROM = 128 * 1024;

/**
 * Parses the raw body as a JSON object, refusing anything else with a 400 that names the problem.
 * `shape` (the body's shape scan, from the JSON limits check) lets a large body be parsed by pieces;
 * the result is the same object JSON.parse gives, and a body JSON.parse refuses is refused with
 * JSON.parse's own message. With `lists`, a large body's message list reuses the parse of elements
 * an earlier body had the same bytes for (see `ParsedLists`).
 */
export function parseJsonBody(
  raw: unknown,
  shape?: BodyShape,
  lists?: ParsedLists,
): { raw: Buffer; body: Record<string, unknown> } {
  const buf = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
  if (buf.length === 0)
    throw new OdaError('ODA_ERR_BAD_JSON', 400, 'request body is empty; expected a JSON object');
  const pieces = shape && buf.length >= PIECEWISE_FROM ? parsePieces(buf, shape, lists) : undefined;
  if (pieces) return { raw: buf, body: pieces };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decodeUtf8(buf));
  } catch (e) {
    throw new OdaError('ODA_ERR_BAD_JSON', 400, `request body is not valid JSON: ${(e as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'request body must be a JSON object');
  }
  return { raw: buf, body: parsed as Record<string, unknown> };
}

/** Thrown inside `parsePieces` when the text is not what the scan said: the whole parse decides. */
const NOT_PIECES = Symbol('not pieces');

function expect(ok: boolean): void {
  if (!ok) throw NOT_PIECES;
}

/** One value's bytes parsed: a string of its own, short unless the value itself is long. */
function parseValue(buf: Buffer, start: number, end: number): unknown {
  return JSON.parse(buf.toString('utf8', start, end));
}

/**
 * The list whose elements span `ranges` (as the scan found them), each parsed on its own, or copied
 * from `lists`' parse of the same bytes.
 */
function parseList(
  buf: Buffer,
  start: number,
  end: number,
  ranges: readonly number[],
  lists: ParsedLists | undefined,
): unknown[] {
  expect(buf[start] === OPEN_ARRAY && ranges.length % 2 === 0);
  const reader = lists?.reader(buf, ranges);
  const out: unknown[] = new Array<unknown>(ranges.length / 2);
  let at = skipJsonSpace(buf, start + 1);
  for (let k = 0; k < out.length; k++) {
    if (k > 0) {
      expect(buf[at] === COMMA);
      at = skipJsonSpace(buf, at + 1);
    }
    const from = ranges[2 * k]!;
    const to = ranges[2 * k + 1]!;
    expect(at === from);
    out[k] = reader ? reader.value(k) : parseValue(buf, from, to);
    at = skipJsonSpace(buf, to);
  }
  expect(buf[at] === CLOSE_ARRAY && at + 1 === end);
  reader?.remember();
  return out;
}

/**
 * The body as JSON.parse would give it, parsed member by member and the messages (or `input`)
 * element by element, so that no string of the whole text is made. Every byte between the values
 * the scan located is checked here (the braces, keys, colons, commas and white space), and every
 * value by JSON.parse itself, so the text is valid JSON exactly when this returns. Undefined (the
 * whole parse decides, with its own message) when anything is not as expected: a key given twice
 * (JSON.parse keeps the last), a `__proto__` member (an own property in JSON.parse's object), or
 * text the scan read differently.
 */
export function parsePieces(
  buf: Buffer,
  shape: BodyShape,
  lists?: ParsedLists,
): Record<string, unknown> | undefined {
  if (shape.repeatedKeys || shape.members.has('__proto__')) return undefined;
  const body: Record<string, unknown> = {};
  try {
    let at = skipJsonSpace(buf, 0);
    expect(buf[at] === OPEN_OBJECT);
    at = skipJsonSpace(buf, at + 1);
    let first = true;
    for (const [key, [start, end]] of shape.members) {
      if (!first) {
        expect(buf[at] === COMMA);
        at = skipJsonSpace(buf, at + 1);
      }
      first = false;
      expect(buf[at] === QUOTE);
      const close = endOfString(buf, at);
      expect(close < start && JSON.parse(buf.toString('utf8', at, close + 1)) === key);
      at = skipJsonSpace(buf, close + 1);
      expect(buf[at] === COLON);
      expect(skipJsonSpace(buf, at + 1) === start);
      body[key] =
        shape.list?.key === key
          ? parseList(buf, start, end, shape.list.ranges, lists)
          : parseValue(buf, start, end);
      at = skipJsonSpace(buf, end);
    }
    expect(!first && buf[at] === CLOSE_OBJECT && skipJsonSpace(buf, at + 1) === buf.length);
  } catch (e) {
    if (e === NOT_PIECES || e instanceof SyntaxError) return undefined;
    throw e;
  }
  return body;
}
