/**
 * Reading chat logs of every format version and converting them to the current one (seed 002,
 * "How the format is versioned"): a log is read through the schema of the version that wrote it,
 * converted step by step, and the converted generation is saved beside the original, never over it
 * (`generations.ts` names it). The checks of a log's lines are in `check-lines.ts`.
 */
import { link, open, readFile, unlink } from 'node:fs/promises';
import { basename } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { OdaError, isOdaError } from '../lib/errors.ts';
import { assertReservedEmpty } from './reserved.ts';
import { validateHeader, validateHeaderWith } from './header.ts';
import { BLOCKING_PROBLEMS, checkEventLines, parseJson, type LogProblem } from './check-lines.ts';
import { CURRENT_VERSION, formats, isKnownVersion, type FormatVersion } from './format/index.ts';
import { upgradeV0, upgradeV1, upgradeV2, upgradeV3, upgradeV4, type Log } from './format/upgrade-steps.ts';
import type { Event, Header } from './format/current.ts';
import {
  besidePath,
  headOf,
  isGenerationOf,
  legacyGenerationPath,
  moveGeneration,
  newestEarlierGeneration,
} from './generations.ts';

type HeaderOf<V extends FormatVersion> = z.infer<(typeof formats)[V]['header']>;
type EventOf<V extends FormatVersion> = z.infer<(typeof formats)[V]['event']>;

/** A log as read: its own version's header and valid events, plus what was wrong with the rest. */
export type ReadLog = {
  [V in FormatVersion]: { version: V; header: HeaderOf<V>; events: EventOf<V>[]; problems: LogProblem[] };
}[FormatVersion];

function readError(message: string, cause?: unknown): OdaError {
  return new OdaError('ODA_ERR_LOG_READ', 500, message, cause === undefined ? {} : { cause });
}

function unsupported(v: unknown): OdaError {
  const shown = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return readError(
    `unsupported chat log format version ${shown}; this build reads versions 0 to ${CURRENT_VERSION}`,
  );
}

/** Splits into lines; `complete` is false when the text does not end with a newline. */
function splitLines(text: string): { lines: string[]; complete: boolean } {
  const lines = text.split('\n');
  const complete = text.endsWith('\n');
  if (complete) lines.pop();
  return { lines, complete };
}

function readEvents<S extends z.ZodType>(
  version: FormatVersion,
  schema: S,
  lines: readonly string[],
  complete: boolean,
): { events: z.infer<S>[]; problems: LogProblem[] } {
  const { events, problems } = checkEventLines(version, schema, lines.slice(1), 2, !complete, 0);
  return { events, problems };
}

function readHeader<V extends FormatVersion>(version: V, raw: unknown): HeaderOf<V> {
  try {
    return validateHeaderWith(formats[version].header, raw) as HeaderOf<V>;
  } catch (err) {
    if (isOdaError(err)) throw readError(err.message, err);
    throw err;
  }
}

/**
 * Reads a JSONL chat log (line 1 the header, then one event per line) through the schemas of the
 * version its header names. Throws when the header is missing, invalid or of an unknown version;
 * problems with event lines are returned, and those lines are left out of `events`.
 */
export function readLogText(text: string): ReadLog {
  const { lines, complete } = splitLines(text);
  const first = lines[0];
  if (first === undefined || first.trim() === '') throw readError('chat log has no header line');
  const parsed = parseJson(first);
  if (!parsed.ok) throw readError(`chat log header (line 1) is not valid JSON: ${parsed.error}`);
  const raw = parsed.value;
  const version =
    typeof raw === 'object' && raw !== null ? (raw as { version?: unknown }).version : undefined;
  if (!isKnownVersion(version)) throw unsupported(version);
  switch (version) {
    case 0:
      return { version, header: readHeader(0, raw), ...readEvents(0, formats[0].event, lines, complete) };
    case 1:
      return { version, header: readHeader(1, raw), ...readEvents(1, formats[1].event, lines, complete) };
    case 2:
      return { version, header: readHeader(2, raw), ...readEvents(2, formats[2].event, lines, complete) };
    case 3:
      return { version, header: readHeader(3, raw), ...readEvents(3, formats[3].event, lines, complete) };
    case 4:
      return { version, header: readHeader(4, raw), ...readEvents(4, formats[4].event, lines, complete) };
    case 5:
      return { version, header: readHeader(5, raw), ...readEvents(5, formats[5].event, lines, complete) };
  }
}

function parseLog<V extends FormatVersion>(version: V, header: unknown, events: readonly unknown[]) {
  const schemas = formats[version];
  return {
    header: schemas.header.parse(header) as HeaderOf<V>,
    events: events.map((e) => schemas.event.parse(e) as EventOf<V>),
  };
}

/**
 * Converts a log of `version` to the current format, one version step at a time. The input is
 * parsed through its version's schemas first, and the result through the current ones.
 */
export function upgradeToCurrent(
  version: FormatVersion,
  header: unknown,
  events: readonly unknown[],
): Log<Header, Event> {
  let log: Log<Header, Event>;
  switch (version) {
    case 0:
      log = upgradeV4(upgradeV3(upgradeV2(upgradeV1(upgradeV0(parseLog(0, header, events))))));
      break;
    case 1:
      log = upgradeV4(upgradeV3(upgradeV2(upgradeV1(parseLog(1, header, events)))));
      break;
    case 2:
      log = upgradeV4(upgradeV3(upgradeV2(parseLog(2, header, events))));
      break;
    case 3:
      log = upgradeV4(upgradeV3(parseLog(3, header, events)));
      break;
    case 4:
      log = upgradeV4(parseLog(4, header, events));
      break;
    case 5:
      log = parseLog(5, header, events);
      break;
    default:
      throw unsupported(version);
  }
  const checked = log.events.map((e, i) => {
    assertReservedEmpty(e);
    const parsed = formats[CURRENT_VERSION].event.parse(e);
    // A current log's events are kept as stored once they are valid, as the store reads them
    // (`parseEventLine`): zod's copy would drop a "__proto__" member of a raw part or wire field.
    return version === CURRENT_VERSION ? (events[i] as Event) : parsed;
  });
  return { header: validateHeader(log.header), events: checked };
}

/**
 * Versions whose events are valid current events as they are: a log of one of them reads as a
 * current log once its header names the current version (v4 -> v5 changes only the number).
 */
export const EVENTS_AS_CURRENT: ReadonlySet<FormatVersion> = new Set([4, CURRENT_VERSION]);

/**
 * A stored header of the current version, or of a version in {@link EVENTS_AS_CURRENT} read as the
 * current one (for a store that keeps a chat's events in place, such as Redis); undefined when it
 * is neither.
 */
export function headerAsCurrent(raw: unknown): Header | undefined {
  const version =
    typeof raw === 'object' && raw !== null ? (raw as { version?: unknown }).version : undefined;
  if (!isKnownVersion(version) || !EVENTS_AS_CURRENT.has(version)) return undefined;
  const parsed = formats[version].header.safeParse(raw);
  if (!parsed.success) return undefined;
  return { ...parsed.data, version: CURRENT_VERSION };
}

export { besidePath, generationPath } from './generations.ts';

/** The JSONL text of a log: one line per record, each ending with a newline. */
export function logToText(log: Log<Header, Event>): string {
  return [log.header, ...log.events].map((r) => `${JSON.stringify(r)}\n`).join('');
}

async function existingGeneration(target: string, id: string): Promise<boolean> {
  const head = await headOf(target);
  if (head === undefined) return false;
  if (head.version !== CURRENT_VERSION || head.id !== id) {
    throw readError(`${basename(target)} exists but is not the v${CURRENT_VERSION} generation of chat ${id}`);
  }
  return true;
}

/**
 * Moves the current generation of chat `id` that an earlier build saved under the old name
 * (`<name>.v5.jsonl`, also the name of chat `<name>.v5`'s file) to `target`; true once it is there.
 */
async function adoptLegacyGeneration(path: string, target: string, id: string): Promise<boolean> {
  const legacy = legacyGenerationPath(path, CURRENT_VERSION);
  if (!(await isGenerationOf(legacy, CURRENT_VERSION, id))) return false;
  return (await moveGeneration(legacy, target)) && existingGeneration(target, id);
}

/**
 * Converts an older log file and writes the converted generation beside it as `<name>@v5.jsonl`
 * (never over the original; when that file is already there it is kept, and one an earlier build
 * saved as `<name>.v5.jsonl` is moved there). When an earlier build already converted the log to
 * a generation between the two (`<name>@v4.jsonl` or `<name>.v4.jsonl`), that generation, which
 * holds what was appended since, is the one converted. Returns the path of the current-version
 * file: `path` itself when the log is already current.
 */
export async function convertFileBeside(path: string): Promise<string> {
  const original = readLogText(await readFile(path, 'utf8'));
  if (original.version === CURRENT_VERSION) return path;
  const target = besidePath(path);
  if (await existingGeneration(target, original.header.id)) return target;
  if (await adoptLegacyGeneration(path, target, original.header.id)) return target;
  const earlier = await newestEarlierGeneration(path, original.version, original.header.id);
  const source = earlier ?? path;
  const read = earlier === undefined ? original : readLogText(await readFile(earlier, 'utf8'));
  const blocking = read.problems.filter((p) => BLOCKING_PROBLEMS.has(p.kind));
  if (blocking.length > 0) {
    const detail = blocking.map((p) => p.message).join('; ');
    throw readError(`cannot convert chat log ${basename(source)} from v${read.version}: ${detail}`);
  }
  const text = logToText(upgradeToCurrent(read.version, read.header, read.events));
  // write a private temp file, then link it into place: link never replaces an existing file
  const tmp = `${target}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  const fh = await open(tmp, 'wx');
  try {
    await fh.writeFile(text, 'utf8');
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    await existingGeneration(target, read.header.id);
  } finally {
    await unlink(tmp);
  }
  return target;
}
