/**
 * A file's lines read in chunks, for the commands that check or print a chat log of any size
 * (`log read`, `log check`): whole-file reads stop at Node's string and buffer limits (512 MB, 2 GB).
 */
import { createReadStream } from 'node:fs';

/** Bytes read from the file at once. */
const READ_CHUNK = 1024 * 1024;

/**
 * The file's lines in pieces, without their newlines, as `readLogText` splits a whole text;
 * `unterminated`: the piece is the file's last line, which has no newline after it (it always comes
 * alone).
 */
export async function* linePieces(path: string): AsyncGenerator<{ lines: string[]; unterminated: boolean }> {
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: READ_CHUNK });
  // The start of a line longer than a chunk, in parts (joined once, not once per chunk).
  let pending: string[] = [];
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      const lines: string[] = [];
      let start = 0;
      for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
        pending.push(chunk.slice(start, nl));
        lines.push(pending.join(''));
        pending = [];
        start = nl + 1;
      }
      if (start < chunk.length) pending.push(chunk.slice(start));
      if (lines.length > 0) yield { lines, unterminated: false };
    }
    if (pending.length > 0) yield { lines: [pending.join('')], unterminated: true };
  } finally {
    stream.destroy();
  }
}
