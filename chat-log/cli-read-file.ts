/**
 * `log read` of a chat log file of the current version, streamed: the file is read in chunks from
 * its start only as far as the range asked for reaches, and only the lines of that range are parsed
 * and checked (with `readLogText`'s rules). A chat of any size reads in bounded memory, and a range
 * near its start without reading the rest; whole-file reads stopped at Node's string and buffer
 * limits (512 MB, 2 GB). Lines before the range are skipped by the `{"seq":N,` every stored line
 * begins with; one that does not begin so is parsed like the lines of the range.
 */
import type { CliIo } from './cli-io.ts';
import { readLogText } from './convert.ts';
import { checkCurrentEventLines, type LogProblem } from './check-lines.ts';
import { CURRENT_VERSION } from './format/index.ts';
import { linePieces } from './line-pieces.ts';

/** Lines checked (and printed) at once. */
const CHECK_LINES = 1000;
/** A stored event line begins with its seq (event-batch.ts writes it first). */
const SEQ_START = /^\{"seq":(\d{1,15}),/;

/**
 * Prints events `offset` to `offset + length` (or to the end) of the chat log file `path` as JSON
 * lines, and its problems met on the way as warnings. Returns `older` without printing anything
 * when the file is of an older version (read whole and converted by the caller); throws when it is
 * no chat log.
 */
export async function printFileRange(
  path: string,
  range: { offset: number; length: number | undefined },
  io: CliIo,
): Promise<'printed' | 'older'> {
  const end = range.length === undefined ? undefined : range.offset + range.length;
  let lineNo = 0;
  let expectedSeq = 0;
  const batch: string[] = [];
  let batchFirst = 0;
  const warn = (problems: readonly LogProblem[]) => {
    for (const p of problems) io.err(`warning: ${JSON.stringify(p)}`);
  };
  const check = (unterminated: boolean) => {
    if (batch.length === 0) return;
    const checked = checkCurrentEventLines(batch, batchFirst, unterminated, expectedSeq);
    expectedSeq = checked.expectedSeq;
    batch.length = 0;
    warn(checked.problems);
    for (const e of checked.events) {
      if (e.seq >= range.offset && (end === undefined || e.seq < end)) io.out(JSON.stringify(e));
    }
  };
  for await (const { lines, unterminated } of linePieces(path)) {
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!;
      const last = unterminated && i === lines.length - 1;
      lineNo++;
      if (lineNo === 1) {
        // The header, checked as a whole log's would be (a file that is no chat log throws).
        const head = readLogText(last ? text : `${text}\n`);
        warn(head.problems);
        if (head.version !== CURRENT_VERSION) return 'older';
        continue;
      }
      const seq = SEQ_START.exec(text);
      if (seq !== null && !last) {
        const n = Number(seq[1]);
        if (n < range.offset) {
          check(false);
          expectedSeq = n + 1;
          continue;
        }
        if (end !== undefined && n >= end) {
          check(false);
          return 'printed';
        }
      }
      if (batch.length === 0) batchFirst = lineNo;
      batch.push(text);
      if (last || batch.length >= CHECK_LINES) check(last);
    }
  }
  if (lineNo === 0) readLogText('');
  check(false);
  return 'printed';
}
