/**
 * `oda-gateway log check <file> [--json]`: validates a chat log file and prints its version, header,
 * event count and problems (torn last line, invalid events with their line numbers, reserved fields
 * filled, non-contiguous sequence numbers, and for an older log whether it converts), as text or,
 * with `--json`, as one JSON object (also when nothing could be checked: `error`, naming why, the
 * message on stderr as well). Exit 1 when there are problems. A log of the current version is streamed, its lines checked a piece at a time
 * with `readLogText`'s rules, so a chat of any size can be checked; an older one is read whole, as
 * converting it needs all its events.
 */
import { readFile } from 'node:fs/promises';
import { readLogText, upgradeToCurrent } from './convert.ts';
import { checkCurrentEventLines, type LogProblem } from './check-lines.ts';
import { CURRENT_VERSION } from './format/index.ts';
import { linePieces } from './line-pieces.ts';
import type { CliIo } from './cli-io.ts';

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What checking a log found: its version and header, how many valid events, its problems. */
interface Findings {
  version: number;
  header: unknown;
  events: number;
  problems: Problem[];
}

/** A problem of a line (`LogProblem`), or the log's own (it does not convert). */
type Problem = LogProblem | { kind: 'does-not-convert'; message: string };

/** The file is no chat log (its header cannot be read); `message` says why. */
class NotALog {
  constructor(readonly message: string) {}
}

/** `readLogText(text)`, or why the text is no chat log. */
function tryRead(text: string): ReturnType<typeof readLogText> | NotALog {
  try {
    return readLogText(text);
  } catch (err) {
    return new NotALog(message(err));
  }
}

/**
 * The findings of a current log, read a piece at a time; `older` when the header names an older
 * version (nothing more is read). Throws when the file cannot be read.
 */
async function streamCurrent(file: string): Promise<Findings | NotALog | 'older'> {
  let found: Findings | undefined;
  let lineNo = 0;
  let expectedSeq = 0;
  for await (const { lines, unterminated } of linePieces(file)) {
    let events = lines;
    if (found === undefined) {
      const head = tryRead(unterminated ? lines[0]! : `${lines[0]!}\n`);
      if (head instanceof NotALog) return head;
      if (head.version !== CURRENT_VERSION) return 'older';
      found = { version: head.version, header: head.header, events: 0, problems: [] };
      lineNo = 1;
      events = lines.slice(1);
    }
    if (events.length === 0) continue;
    const checked = checkCurrentEventLines(events, lineNo + 1, unterminated, expectedSeq);
    lineNo += events.length;
    expectedSeq = checked.expectedSeq;
    found.events += checked.events.length;
    found.problems.push(...checked.problems);
  }
  // An empty file, with readLogText's words.
  return found ?? new NotALog('chat log has no header line');
}

/** The findings of an older log, read whole, with whether it converts to the current version. */
async function readOlder(file: string): Promise<Findings | NotALog> {
  const read = tryRead(await readFile(file, 'utf8'));
  if (read instanceof NotALog) return read;
  const problems: Problem[] = [...read.problems];
  try {
    upgradeToCurrent(read.version, read.header, read.events);
  } catch (err) {
    const why = `does not convert to v${CURRENT_VERSION}: ${message(err)}`;
    problems.push({ kind: 'does-not-convert', message: why });
  }
  return { version: read.version, header: read.header, events: read.events.length, problems };
}

/** What kept `log check` from checking a file: its arguments, the file unreadable, or no chat log. */
type Failure = 'usage' | 'unreadable' | 'not-a-log';

/**
 * Says why nothing was checked on stderr and, with `--json`, as one JSON object on stdout too
 * (`error`: its `kind` and `message`, with the `file` when one was named), so a script reading
 * stdout learns it; returns `code`.
 */
function failed(
  io: CliIo,
  json: boolean,
  code: number,
  failure: { kind: Failure; message: string; file?: string },
): number {
  const { kind, message: text, file } = failure;
  io.err(file === undefined ? text : `${file}: ${text}`);
  if (json)
    io.out(JSON.stringify({ ...(file !== undefined ? { file } : {}), error: { kind, message: text } }));
  return code;
}

/** Runs `log check`; returns the exit code (0 clean, 1 problems or unreadable, 2 usage). */
export async function logCheck(args: readonly string[], io: CliIo): Promise<number> {
  const json = args.includes('--json');
  const [file, ...rest] = args.filter((a) => a !== '--json');
  if (file === undefined || rest.length > 0 || args.filter((a) => a === '--json').length > 1) {
    return failed(io, json, 2, { kind: 'usage', message: 'usage: oda-gateway log check <file> [--json]' });
  }
  let found: Findings | NotALog;
  try {
    const streamed = await streamCurrent(file);
    found = streamed === 'older' ? await readOlder(file) : streamed;
  } catch (err) {
    return failed(io, json, 1, { kind: 'unreadable', message: `cannot read: ${message(err)}`, file });
  }
  if (!json) io.out(`file: ${file}`);
  if (found instanceof NotALog) {
    return failed(io, json, 1, { kind: 'not-a-log', message: found.message, file });
  }
  const { version, header, events, problems } = found;
  const current = version === CURRENT_VERSION;
  if (json) {
    io.out(JSON.stringify({ file, version, current, header, events, problems }));
    return problems.length === 0 ? 0 : 1;
  }
  io.out(
    `version: ${version}${current ? ' (current)' : ` (older; converted to v${CURRENT_VERSION} when opened)`}`,
  );
  io.out(`header: ${JSON.stringify(header)}`);
  io.out(`events: ${events}`);
  if (problems.length === 0) {
    io.out('problems: none');
    return 0;
  }
  io.out(`problems: ${problems.length}`);
  for (const p of problems) io.out(`  ${p.message}`);
  return 1;
}
