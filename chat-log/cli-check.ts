/**
 * `oda-gateway log check <file>`: validates a chat log file and prints its version, header, event
 * count and problems (torn last line, invalid events with their line numbers, reserved fields
 * filled, non-contiguous sequence numbers, and for an older log whether it converts). Exit 1 when
 * there are problems.
 */
import { readFile } from 'node:fs/promises';
import { readLogText, upgradeToCurrent } from './convert.ts';
import { CURRENT_VERSION } from './format/index.ts';

interface Io {
  out(line: string): void;
  err(line: string): void;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs `log check`; returns the exit code (0 clean, 1 problems or unreadable, 2 usage). */
export async function logCheck(args: readonly string[], io: Io): Promise<number> {
  const [file, ...rest] = args;
  if (file === undefined || rest.length > 0) {
    io.err('usage: oda-gateway log check <file>');
    return 2;
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    io.err(`${file}: cannot read: ${message(err)}`);
    return 1;
  }
  let read: ReturnType<typeof readLogText>;
  try {
    read = readLogText(text);
  } catch (err) {
    io.out(`file: ${file}`);
    io.err(`${file}: ${message(err)}`);
    return 1;
  }
  const problems = read.problems.map((p) => p.message);
  const current = read.version === CURRENT_VERSION;
  if (!current) {
    try {
      upgradeToCurrent(read.version, read.header, read.events);
    } catch (err) {
      problems.push(`does not convert to v${CURRENT_VERSION}: ${message(err)}`);
    }
  }
  io.out(`file: ${file}`);
  io.out(
    `version: ${read.version}${current ? ' (current)' : ` (older; converted to v${CURRENT_VERSION} when opened)`}`,
  );
  io.out(`header: ${JSON.stringify(read.header)}`);
  io.out(`events: ${read.events.length}`);
  if (problems.length === 0) {
    io.out('problems: none');
    return 0;
  }
  io.out(`problems: ${problems.length}`);
  for (const p of problems) io.out(`  ${p}`);
  return 1;
}
