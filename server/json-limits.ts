/**
 * Structural limits on JSON bodies, checked on the raw bytes before anything parses or walks them.
 * The body limit bounds bytes, but not the work a body causes: 100k levels of `[` overflow the
 * recursive steps after JSON.parse (a 500 instead of a clear 400), millions of tiny values keep the
 * event loop busy for seconds while the log checks them (every other request waits), and hundreds
 * of thousands of short messages, or tens of thousands of tiny "images", multiply the per-message
 * and per-image work (SPEC section 14). Real requests nest a few dozen levels and hold well under
 * these counts; the limits leave a wide margin.
 *
 * The scan runs in slices and yields to the event loop between them, so a 50 MB body never holds
 * up `/healthz` or other requests for the whole of its scan.
 */
import type { RequestHandler } from 'express';
import { OdaError } from '../lib/errors.ts';
import { nextTurn, type TurnTaker, type Turns } from '../lib/in-turns.ts';
import type { ScannedBody } from '../providers/request-view.ts';
import type { Caller } from './auth.ts';
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  endOfString,
  isJsonSpace,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from '../providers/wire-json.ts';

export interface JsonLimits {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Most values (containers, members and elements) in one body. */
  maxValues: number;
  /** Most elements of the top-level `messages` (or Responses `input`) array. */
  maxMessages: number;
  /** Most image parts anywhere in the body. */
  maxImages: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = {
  maxDepth: 256,
  maxValues: 1_000_000,
  maxMessages: 10_000,
  maxImages: 500,
};

/** Which limit a body passes first. */
export type JsonLimitExceeded = 'depth' | 'values' | 'messages' | 'images';

/** Keys whose values the scan looks at. */
const KEY_TYPE = 1;
const KEY_MESSAGES = 2;
const KEY_OTHER = 0;

/**
 * The `type` values of image parts in the three wire formats: Anthropic `image`, Chat Completions
 * `image_url`, Responses `input_image` and computer-use `computer_screenshot`.
 */
const IMAGE_TYPES = new Set(['image', 'image_url', 'input_image', 'computer_screenshot']);
const LONGEST_IMAGE_TYPE = Math.max(...[...IMAGE_TYPES].map((t) => t.length));

/** The key of Anthropic's cache markers, noted wherever it appears (see `cacheControlKey`). */
const CACHE_CONTROL = 'cache_control';

/** True when the bytes between quotes `open` and `close` are exactly `ascii` (no escapes). */
function bytesAre(bytes: Uint8Array, open: number, close: number, ascii: string): boolean {
  if (close - open - 1 !== ascii.length) return false;
  for (let k = 0; k < ascii.length; k++) if (bytes[open + 1 + k] !== ascii.charCodeAt(k)) return false;
  return true;
}

/** True when the string between quotes `open` and `close` has an escape. */
function hasEscape(bytes: Uint8Array, open: number, close: number): boolean {
  for (let j = open + 1; j < close; j++) if (bytes[j] === BACKSLASH) return true;
  return false;
}

/** The text of the string between quotes `open` and `close`, decoding escapes only when present. */
function stringText(bytes: Uint8Array, open: number, close: number): string | undefined {
  const inner = Buffer.from(bytes.buffer, bytes.byteOffset + open + 1, Math.max(0, close - open - 1));
  if (!inner.includes(BACKSLASH)) return inner.toString('utf8');
  try {
    return JSON.parse(`"${inner.toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}

/**
 * Where a body's parts are in its bytes, from its shape scan: what a model call keeps of the scan
 * (`res.locals.bodyShape`).
 */
export interface BodyShape extends ScannedBody {
  /**
   * The top-level `messages` or `input` array JSON.parse keeps: element k spans `ranges[2k]` to
   * `ranges[2k + 1]`.
   */
  readonly list: { readonly key: 'messages' | 'input'; readonly ranges: readonly number[] } | undefined;
  /** Each top-level member's value (start, end exclusive), the last one when a key repeats. */
  readonly members: ReadonlyMap<string, readonly [number, number]>;
  /** True when a top-level key appears more than once. */
  readonly repeatedKeys: boolean;
  /** The top-level `tools` value, when it is an array. */
  readonly tools: readonly [number, number] | undefined;
}

/**
 * A resumable scan of JSON text (without parsing it) for the first limit it passes. Values are
 * counted as containers plus separators, which is within one of the true count. Messages are the
 * elements of a top-level `messages` or `input` array; images the parts whose `type` is an image
 * type. Malformed text is left for JSON.parse to refuse with its own message.
 */
export class JsonShapeScan implements BodyShape {
  private at = 0;
  private depth = 0;
  private values = 0;
  /** Per depth: true when the container there is an object. */
  private readonly objects: Uint8Array;
  /** In an object, the next string is a key. */
  private expectKey = false;
  private lastKey = KEY_OTHER;
  /** Depth of the messages array being counted (0: none), and whether an element may start now. */
  private messagesDepth = 0;
  private awaitingElement = false;
  private messagesNow = 0;
  /** Where the last value seen ends (the byte after it). */
  private lastEnd = 0;
  /** The key of the top-level array being counted, and of the last top-level array key seen. */
  private listKey: 'messages' | 'input' | undefined;
  private keyNow: 'messages' | 'input' | undefined;
  /** Most messages seen in one top-level array, and images seen. */
  messages = 0;
  images = 0;
  exceeded: JsonLimitExceeded | undefined;
  /**
   * The byte range of each element of the last top-level `messages` or `input` array (the one
   * JSON.parse keeps): start and end (exclusive) of element k at [2k] and [2k + 1]. Lets a request
   * whose history starts with the bytes of an earlier one be recognised without serialising it.
   */
  list: { key: 'messages' | 'input'; ranges: number[] } | undefined;
  /**
   * The byte range (start, end exclusive) of each top-level member's value, the last one when a
   * key repeats (the one JSON.parse keeps). Lets an edited body be sent as the client's bytes with
   * only the edited values written again, and the same tool definitions as an earlier request's
   * be known by their bytes.
   */
  readonly members = new Map<string, readonly [number, number]>();
  /** True when a top-level key appears more than once (JSON.parse keeps the last value). */
  repeatedKeys = false;
  /**
   * True when a key at any depth reads `cache_control`, escapes decoded: an Anthropic view then
   * walks the parsed body for the markers; without one it need not (a long chat's whole history).
   */
  cacheControlKey = false;
  /** The top-level member whose value is being scanned, and where that value starts (-1: not yet). */
  private memberKey: string | undefined;
  private memberStart = -1;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly limits: JsonLimits,
  ) {
    this.objects = new Uint8Array(limits.maxDepth + 2);
  }

  /** The byte range of the top-level `tools` value, when it is an array. */
  get tools(): readonly [number, number] | undefined {
    const range = this.members.get('tools');
    return range && this.bytes[range[0]] === OPEN_ARRAY ? range : undefined;
  }

  /** True once the whole text is scanned or a limit is passed. */
  get done(): boolean {
    return this.exceeded !== undefined || this.at >= this.bytes.length;
  }

  /** Scans on until about `budget` more bytes are done (a string is never cut). */
  step(budget: number): void {
    const bytes = this.bytes;
    const stop = Math.min(bytes.length, this.at + budget);
    const limits = this.limits;
    let i = this.at;
    for (; i < stop && this.exceeded === undefined; i++) {
      const b = bytes[i]!;
      if (isJsonSpace(b) || b === COLON) continue;
      if (this.memberKey !== undefined && this.depth === 1) {
        if (b === COMMA || b === CLOSE_OBJECT) {
          if (this.memberStart !== -1) {
            if (this.members.has(this.memberKey)) this.repeatedKeys = true;
            this.members.set(this.memberKey, [this.memberStart, this.lastEnd]);
          }
          this.memberKey = undefined;
        } else if (this.memberStart === -1) this.memberStart = i;
      }
      if (this.messagesDepth !== 0 && this.depth === this.messagesDepth) {
        const ranges = this.list!.ranges;
        if (b === COMMA) {
          this.awaitingElement = true;
          if (ranges.length % 2 === 1) ranges.push(this.lastEnd);
        } else if (b === CLOSE_ARRAY) {
          this.messagesDepth = 0;
          if (ranges.length % 2 === 1) ranges.push(this.lastEnd);
        } else if (this.awaitingElement) {
          this.awaitingElement = false;
          ranges.push(i);
          if (++this.messagesNow > this.messages) this.messages = this.messagesNow;
          if (this.messages > limits.maxMessages) this.exceeded = 'messages';
        }
      }
      if (b === QUOTE) {
        const close = endOfString(bytes, i);
        if (this.expectKey) {
          this.expectKey = false;
          this.lastKey = this.classifyKey(i, close);
          if (this.depth === 1) {
            this.memberKey = stringText(bytes, i, close);
            this.memberStart = -1;
          }
        } else if (this.lastKey === KEY_TYPE) {
          this.lastKey = KEY_OTHER;
          if (this.isImageType(i, close) && ++this.images > limits.maxImages) this.exceeded = 'images';
        }
        i = close;
        this.lastEnd = close + 1;
        continue;
      }
      this.lastEnd = i + 1;
      if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
        const startsMessages =
          b === OPEN_ARRAY && this.depth === 1 && this.objects[1] === 1 && this.lastKey === KEY_MESSAGES;
        if (startsMessages) this.listKey = this.keyNow;
        this.lastKey = KEY_OTHER;
        if (++this.depth > limits.maxDepth) this.exceeded = 'depth';
        else if (++this.values > limits.maxValues) this.exceeded = 'values';
        else {
          this.objects[this.depth] = b === OPEN_OBJECT ? 1 : 0;
          this.expectKey = b === OPEN_OBJECT;
          if (startsMessages) {
            this.messagesDepth = this.depth;
            this.awaitingElement = true;
            this.messagesNow = 0;
            // A repeated key: JSON.parse keeps the last one, and so do the ranges.
            this.list = { key: this.listKey!, ranges: [] };
          }
        }
      } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        this.depth--;
        this.lastKey = KEY_OTHER;
        this.expectKey = false;
      } else if (b === COMMA) {
        if (++this.values > limits.maxValues) this.exceeded = 'values';
        this.expectKey = this.depth > 0 && this.objects[this.depth] === 1;
        this.lastKey = KEY_OTHER;
      }
    }
    this.at = i;
  }

  /** True when the string between quotes `open` and `close` is one of IMAGE_TYPES. */
  private isImageType(open: number, close: number): boolean {
    const bytes = this.bytes;
    if (close - open - 1 > LONGEST_IMAGE_TYPE) return false;
    // Compared byte for byte (every `type` value is looked at): text only for escaped strings.
    if (!hasEscape(bytes, open, close)) {
      for (const t of IMAGE_TYPES) if (bytesAre(bytes, open, close, t)) return true;
      return false;
    }
    return IMAGE_TYPES.has(stringText(bytes, open, close) ?? '');
  }

  private classifyKey(open: number, close: number): number {
    const bytes = this.bytes;
    // Cheap first: every key passes here, so the plain ones are compared byte for byte.
    if (!hasEscape(bytes, open, close)) {
      if (bytesAre(bytes, open, close, 'type')) return KEY_TYPE;
      if (bytesAre(bytes, open, close, CACHE_CONTROL)) this.cacheControlKey = true;
      if (this.depth !== 1) return KEY_OTHER;
      if (bytesAre(bytes, open, close, 'messages')) this.keyNow = 'messages';
      else if (bytesAre(bytes, open, close, 'input')) this.keyNow = 'input';
      else return KEY_OTHER;
      return KEY_MESSAGES;
    }
    const key = stringText(bytes, open, close);
    if (key === 'type') return KEY_TYPE;
    // An undecodable key (a lone escape) leaves JSON.parse to refuse the body.
    if (key === CACHE_CONTROL) this.cacheControlKey = true;
    if (this.depth === 1 && (key === 'messages' || key === 'input')) {
      this.keyNow = key;
      return KEY_MESSAGES;
    }
    return KEY_OTHER;
  }
}

/** Scans `bytes` in one go and returns the first limit passed (for tests and small bodies). */
export function exceededJsonLimit(
  bytes: Uint8Array,
  limits: Partial<JsonLimits> & Pick<JsonLimits, 'maxDepth' | 'maxValues'>,
): JsonLimitExceeded | undefined {
  const scan = new JsonShapeScan(bytes, { ...DEFAULT_JSON_LIMITS, ...limits });
  scan.step(bytes.length);
  return scan.exceeded;
}

/** Bytes scanned between two yields to the event loop. */
const SLICE_BYTES = 1 << 20;

/** Scans `bytes` a slice at a time, letting other work run between slices. */
export async function scanJsonShape(
  bytes: Uint8Array,
  limits: JsonLimits,
  turns?: Turns,
): Promise<JsonShapeScan> {
  const scan = new JsonShapeScan(bytes, limits);
  for (;;) {
    scan.step(SLICE_BYTES);
    if (scan.done) return scan;
    await (turns ? turns.take() : nextTurn());
  }
}

/**
 * Express middleware (after the raw body parser): 400 for too deep; 413 for too many values,
 * messages (`server.maxMessages`) or images (`server.maxImagesPerRequest`).
 */
export function jsonLimits(limits: JsonLimits = DEFAULT_JSON_LIMITS, turns?: TurnTaker): RequestHandler {
  return async function checkJsonLimits(req, res, next) {
    const body: unknown = req.body;
    if (!Buffer.isBuffer(body) || body.length === 0) return next();
    const large = body.length > SLICE_BYTES;
    // A large body's slices take turns with other large requests, fairly between teams.
    const party = large ? turns?.for((res.locals.caller as Caller | undefined)?.team) : undefined;
    const scan = await scanJsonShape(body, limits, party);
    // A large body is parsed right after its scan: the parse takes a turn of its own.
    if (party && scan.exceeded === undefined) await party.take();
    // Where the messages, the tools and each member are in the bytes, for the model call.
    res.locals.bodyShape = scan satisfies BodyShape;
    switch (scan.exceeded) {
      case 'depth':
        throw new OdaError(
          'ODA_ERR_BAD_JSON',
          400,
          `request body nests deeper than ${limits.maxDepth} levels`,
        );
      case 'values':
        throw new OdaError(
          'ODA_ERR_BODY_TOO_LARGE',
          413,
          `request body holds more than ${limits.maxValues} JSON values`,
        );
      case 'messages':
        throw new OdaError(
          'ODA_ERR_BODY_TOO_LARGE',
          413,
          `request holds more than ${limits.maxMessages} messages (server.maxMessages)`,
          { param: 'messages' },
        );
      case 'images':
        throw new OdaError(
          'ODA_ERR_BODY_TOO_LARGE',
          413,
          `request holds more than ${limits.maxImages} images (server.maxImagesPerRequest)`,
        );
      default:
        next();
    }
  };
}
