/**
 * The checks every backend runs before a byte of a batch is stored, and the parsing of stored lines.
 * Shared by the file and Redis stores so both refuse exactly the same batches with the same errors.
 */
import { z } from 'zod';
import { OdaError } from '../lib/errors.ts';
import { assertLossless, isPlainJson, LosslessError } from './lossless.ts';
import {
  event as eventSchema,
  header as headerSchema,
  type Event,
  type Header,
  type NewEvent,
} from './format/current.ts';

/** The events of a batch as they will be stored, and their JSONL lines. */
export interface PreparedBatch {
  events: Event[];
  /** Each event's JSON text, without its newline. */
  lines: string[];
  /** Byte length of each event's line, newline included. */
  lineBytes: number[];
}

/**
 * The lines of a batch (after `first`, a line of its own such as a header) as the UTF-8 bytes of a
 * JSONL file, each ending in a newline: one buffer of the size the byte counts give, each line
 * encoded into its place, with no joined copy of the text made first.
 */
export function batchBytes(batch: PreparedBatch, first = ''): Buffer {
  const firstBytes = Buffer.byteLength(first);
  let total = firstBytes;
  for (const n of batch.lineBytes) total += n;
  const out = Buffer.allocUnsafe(total);
  let at = out.write(first, 0);
  for (const line of batch.lines) {
    at += out.write(line, at);
    out[at++] = 0x0a;
  }
  if (at !== total) throw new Error(`batch bytes: wrote ${at} of ${total}`);
  return out;
}

function refuse(err: unknown, where: string): never {
  if (err instanceof LosslessError) {
    throw new OdaError('ODA_ERR_LOG_WRITE', 400, `chat log refused ${where}: ${err.message}`, { cause: err });
  }
  if (err instanceof z.ZodError) {
    const issue = err.issues[0];
    const at = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new OdaError(
      'ODA_ERR_LOG_WRITE',
      500,
      `chat log refused ${where}: invalid event${at}: ${issue?.message ?? ''}`,
      {
        cause: err,
      },
    );
  }
  throw err;
}

/**
 * Checks one stored event (lossless, then the schema). An event the gateway built itself (`built`:
 * from parsed input, typed by the schema's own types, its numbers and ids made by the gateway) is
 * not validated against the schema a second time: only what its types cannot promise is checked,
 * that its values survive JSON unchanged (a client's -0 or 1e400). Everything read back (stored
 * lines, imports, conversions) is still validated.
 */
function checkEvent(stored: Record<string, unknown>, where: string, built: boolean): void {
  try {
    if (!built) {
      assertLossless(stored, where);
      eventSchema.parse(stored);
    } else if (!isPlainJson(stored)) {
      assertLossless(stored, where);
    }
  } catch (err) {
    refuse(err, 'the batch');
  }
}

function add(batch: PreparedBatch, stored: Record<string, unknown>, where: string, built: boolean): void {
  checkEvent(stored, where, built);
  // The checked object itself is written (not zod's output) so the line holds exactly what was given.
  const line = JSON.stringify(stored);
  batch.events.push(stored as Event);
  batch.lines.push(line);
  batch.lineBytes.push(Buffer.byteLength(line) + 1);
}

/** The stored form of a new event: `seq` and `at` assigned, any given ones dropped. */
function stamped(e: NewEvent, seq: number, at: number): Record<string, unknown> {
  const { seq: _seq, at: _at, ...body } = e as NewEvent & { seq?: unknown; at?: unknown };
  return { seq, at, ...body };
}

/**
 * Assigns `seq` (contiguous from `firstSeq`) and `at`, then checks the whole batch; throws an
 * OdaError (ODA_ERR_LOG_WRITE) naming the first refused value before anything can be written.
 * `built`: the gateway built these events itself (see `checkEvent`).
 */
export function prepareBatch(
  events: readonly NewEvent[],
  firstSeq: number,
  at: number,
  built = false,
): PreparedBatch {
  const out: PreparedBatch = { events: [], lines: [], lineBytes: [] };
  events.forEach((e, i) => add(out, stamped(e, firstSeq + i, at), `events[${i}]`, built));
  return out;
}

/**
 * The checks of `prepareBatch` alone, with the same errors, and no line written: for a caller that
 * appends a long batch in slices and must know first that the log takes all of it.
 */
export function checkBatch(events: readonly NewEvent[], firstSeq: number, at: number, built = false): void {
  events.forEach((e, i) => checkEvent(stamped(e, firstSeq + i, at), `events[${i}]`, built));
}

/** Seed events of a branched chat, renumbered from 0 in their order, keeping their `at`. */
export function prepareSeed(seed: readonly Event[]): PreparedBatch {
  const out: PreparedBatch = { events: [], lines: [], lineBytes: [] };
  seed.forEach((e, i) => {
    const { seq: _seq, ...body } = e;
    add(out, { seq: i, ...body }, `seed[${i}]`, false);
  });
  return out;
}

/** Checks a v4 header (schema and lossless) and gives its JSONL line. */
export function headerLine(header: Header): string {
  try {
    assertLossless(header, 'header');
    headerSchema.parse(header);
  } catch (err) {
    refuse(err, 'the header');
  }
  return JSON.stringify(header) + '\n';
}

/** Parses one stored event line; a damaged line is an ODA_ERR_LOG_READ naming the chat and seq. */
export function parseEventLine(line: string, id: string, expectedSeq: number): Event {
  let parsed: Event;
  try {
    const raw: unknown = JSON.parse(line);
    eventSchema.parse(raw);
    // The stored value itself, as on write: zod's copy would drop a "__proto__" member (raw parts).
    parsed = raw as Event;
  } catch (err) {
    throw new OdaError('ODA_ERR_LOG_READ', 500, `chat log ${id} is damaged at event ${expectedSeq}`, {
      cause: err,
    });
  }
  if (parsed.seq !== expectedSeq) {
    throw new OdaError(
      'ODA_ERR_LOG_READ',
      500,
      `chat log ${id} is damaged: expected event ${expectedSeq}, found seq ${parsed.seq}`,
    );
  }
  return parsed;
}
