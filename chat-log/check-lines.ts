/**
 * The checks of a chat log's event lines (`readLogText` reads a whole log with them; the
 * command-line tools check a large one a piece at a time): each line valid JSON, lossless, with its
 * reserved fields empty, an event of its version's schema, and its seq the one after the line
 * before; what is wrong is a problem naming its line.
 */
import type { z } from 'zod';
import { assertLossless } from './lossless.ts';
import { assertReservedEmpty, ReservedFieldError } from './reserved.ts';
import { describeSchemaIssue } from './header.ts';
import { CURRENT_VERSION, formats, type FormatVersion } from './format/index.ts';
import type { Event } from './format/current.ts';

export type LogProblemKind =
  | 'torn-line'
  | 'blank-line'
  | 'invalid-json'
  | 'not-lossless'
  | 'reserved-field'
  | 'invalid-event'
  | 'seq-gap';

/** Something wrong with one line of a log; `line` is 1-based (the header is line 1). */
export interface LogProblem {
  line: number;
  kind: LogProblemKind;
  message: string;
}

/** Problems that make a log unsafe to convert (a torn last line or a seq gap is not one). */
export const BLOCKING_PROBLEMS: ReadonlySet<LogProblemKind> = new Set([
  'invalid-json',
  'not-lossless',
  'reserved-field',
  'invalid-event',
]);

/** A line's JSON value, or the parser's message. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}

/** What checking a piece of a log's event lines found, and the seq the next line should hold. */
export interface CheckedEvents<E> {
  events: E[];
  problems: LogProblem[];
  expectedSeq: number;
}

/**
 * Checks consecutive event lines `texts`, the first being line `firstLine` of the file (the header
 * is line 1), with `readLogText`'s rules (through `schema`, the event schema of `version`);
 * `lastUnterminated`: the last one has no newline after it (the end of the file). For a log read
 * piece by piece, each piece goes on from the `expectedSeq` the one before returned.
 */
export function checkEventLines<S extends z.ZodType>(
  version: FormatVersion,
  schema: S,
  texts: readonly string[],
  firstLine: number,
  lastUnterminated: boolean,
  startSeq: number,
): CheckedEvents<z.infer<S>> {
  const events: z.infer<S>[] = [];
  const problems: LogProblem[] = [];
  let expectedSeq = startSeq;
  for (let i = 0; i < texts.length; i++) {
    const line = firstLine + i;
    const text = texts[i] ?? '';
    const isLast = i === texts.length - 1;
    if (text.trim() === '') {
      problems.push({ line, kind: 'blank-line', message: `line ${line}: blank line` });
      continue;
    }
    const parsed = parseJson(text);
    if (!parsed.ok) {
      if (isLast && lastUnterminated) {
        problems.push({
          line,
          kind: 'torn-line',
          message: `line ${line}: torn last line (no trailing newline, not valid JSON); ignored`,
        });
      } else {
        problems.push({
          line,
          kind: 'invalid-json',
          message: `line ${line}: not valid JSON: ${parsed.error}`,
        });
        expectedSeq++; // the broken line still held one event
      }
      continue;
    }
    const raw = parsed.value;
    const seq = typeof raw === 'object' && raw !== null ? (raw as { seq?: unknown }).seq : undefined;
    if (typeof seq === 'number' && Number.isSafeInteger(seq)) {
      if (seq !== expectedSeq) {
        problems.push({
          line,
          kind: 'seq-gap',
          message: `line ${line}: seq ${seq} where ${expectedSeq} was expected`,
        });
      }
      expectedSeq = seq + 1;
    } else {
      expectedSeq++;
    }
    try {
      assertLossless(raw);
      assertReservedEmpty(raw, version);
    } catch (err) {
      const kind = err instanceof ReservedFieldError ? 'reserved-field' : 'not-lossless';
      problems.push({
        line,
        kind,
        message: `line ${line}: ${err instanceof Error ? err.message : String(err)}`,
      });
      continue;
    }
    const result = schema.safeParse(raw);
    if (!result.success) {
      const type = typeof raw === 'object' && raw !== null ? (raw as { type?: unknown }).type : undefined;
      const what = typeof type === 'string' ? `invalid ${type} event` : 'invalid event';
      problems.push({
        line,
        kind: 'invalid-event',
        message: `line ${line}: ${what} (v${version}): ${describeSchemaIssue(result.error)}`,
      });
      continue;
    }
    // The line's own value, now known valid: zod's copy would drop a "__proto__" member of a raw part.
    events.push(raw as z.infer<S>);
  }
  return { events, problems, expectedSeq };
}

/**
 * {@link checkEventLines} for a log of the current version read piece by piece (`oda-gateway log
 * read` and `log check` of a large chat): the pieces' events and problems are those `readLogText`
 * finds in the whole.
 */
export function checkCurrentEventLines(
  texts: readonly string[],
  firstLine: number,
  lastUnterminated: boolean,
  expectedSeq: number,
): CheckedEvents<Event> {
  return checkEventLines(
    CURRENT_VERSION,
    formats[CURRENT_VERSION].event,
    texts,
    firstLine,
    lastUnterminated,
    expectedSeq,
  );
}
