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

/** The events of a batch as they will be stored, and their JSONL lines (each ending in `\n`). */
export interface PreparedBatch {
  events: Event[];
  /** Byte length of each event's line, newline included. */
  lineBytes: number[];
  text: string;
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
 * Checks one stored event (lossless, then the schema) and gives its JSONL line. An event the
 * gateway built itself (`built`: from parsed input, typed by the schema's own types, its numbers
 * and ids made by the gateway) is not validated against the schema a second time: only what its
 * types cannot promise is checked, that its values survive JSON unchanged (a client's -0 or 1e400).
 * Everything read back (stored lines, imports, conversions) is still validated.
 */
function eventLine(
  stored: Record<string, unknown>,
  where: string,
  built: boolean,
): { event: Event; line: string } {
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
  // The checked object itself is written (not zod's output) so the line holds exactly what was given.
  return { event: stored as Event, line: JSON.stringify(stored) + '\n' };
}

function add(batch: PreparedBatch, { event, line }: { event: Event; line: string }): void {
  batch.events.push(event);
  batch.lineBytes.push(Buffer.byteLength(line));
  batch.text += line;
}

/**
 * Assigns `seq` (contiguous from `firstSeq`) and `at`, then checks the whole batch; throws an
 * OdaError (ODA_ERR_LOG_WRITE) naming the first refused value before anything can be written.
 * `built`: the gateway built these events itself (see `eventLine`).
 */
export function prepareBatch(
  events: readonly NewEvent[],
  firstSeq: number,
  at: number,
  built = false,
): PreparedBatch {
  const out: PreparedBatch = { events: [], lineBytes: [], text: '' };
  events.forEach((e, i) => {
    const { seq: _seq, at: _at, ...body } = e as NewEvent & { seq?: unknown; at?: unknown };
    add(out, eventLine({ seq: firstSeq + i, at, ...body }, `events[${i}]`, built));
  });
  return out;
}

/** Seed events of a branched chat, renumbered from 0 in their order, keeping their `at`. */
export function prepareSeed(seed: readonly Event[]): PreparedBatch {
  const out: PreparedBatch = { events: [], lineBytes: [], text: '' };
  seed.forEach((e, i) => {
    const { seq: _seq, ...body } = e;
    add(out, eventLine({ seq: i, ...body }, `seed[${i}]`, false));
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
