/**
 * The `oda-gateway` command router (`bin/oda-gateway.mjs` runs it). A command is a name of one or
 * two words mapped to a function; add one by adding a line to `COMMANDS`.
 */
import { fileURLToPath } from 'node:url';
import { keysNew } from '../server/cli-keys.ts';
import { logCheck } from '../chat-log/cli-check.ts';
import { logRead } from '../chat-log/cli-read.ts';
import { LOG_LIST_USAGE, logList } from '../chat-log/cli-list.ts';
import type { CliIo } from '../chat-log/cli-io.ts';

export type { CliIo };

/** A command: gets the arguments after its name, returns the exit code. */
export type CommandFn = (args: readonly string[], io: CliIo) => Promise<number>;

export interface CommandEntry {
  usage: string;
  summary: string;
  run: CommandFn;
}

export const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  'log check': {
    usage: 'log check <file> [--json]',
    summary: 'validate a chat log file and list its problems (streamed; an older log is read whole)',
    run: logCheck,
  },
  'log read': {
    usage: 'log read <chat id or file> [--offset N] [--length N] [--config FILE] [--data-dir DIR]',
    summary: 'print part of a chat log as JSON lines',
    run: logRead,
  },
  'log list': {
    usage: LOG_LIST_USAGE,
    summary:
      'list a page of chats, newest activity first, as JSON lines (next cursor on stderr; --json: one object)',
    run: logList,
  },
  'keys new': {
    usage: 'keys new [--json]',
    summary: 'make a random team or admin key and print it with its sha256 for the config',
    run: keysNew,
  },
};

/** Commands announced in the usage that this build does not have yet. */
export const PLANNED: Readonly<Record<string, string>> = {};

let pipeWatched = false;

/**
 * Output whose reader went away (`oda-gateway log list | head -1`) ends the command quietly, as
 * other command-line tools do, instead of an EPIPE stack trace and exit code 1.
 */
function endQuietlyWhenPipeCloses(): void {
  if (pipeWatched) return;
  pipeWatched = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  });
}

export const consoleIo: CliIo = {
  out: (line) => {
    endQuietlyWhenPipeCloses();
    process.stdout.write(`${line}\n`);
  },
  err: (line) => process.stderr.write(`${line}\n`),
};

function usage(table: Readonly<Record<string, CommandEntry>>): string[] {
  const lines = ['usage: oda-gateway <command> [args]', '', 'commands:'];
  for (const entry of Object.values(table)) lines.push(`  ${entry.usage.padEnd(36)} ${entry.summary}`);
  for (const [name, use] of Object.entries(PLANNED)) {
    if (table[name] === undefined) lines.push(`  ${use.padEnd(36)} (not available yet)`);
  }
  return lines;
}

/** Runs the command named by the first one or two words of `argv`; returns the exit code. */
export async function runCli(
  argv: readonly string[],
  io: CliIo = consoleIo,
  table: Readonly<Record<string, CommandEntry>> = COMMANDS,
): Promise<number> {
  const [first, second] = argv;
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    for (const line of usage(table)) (first === undefined ? io.err : io.out)(line);
    return first === undefined ? 2 : 0;
  }
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const entry = Object.hasOwn(table, name) ? table[name] : undefined;
    if (entry !== undefined && argv.length >= words) {
      const rest = argv.slice(words);
      // `<command> --help` is a question, not a file or chat named --help.
      if (rest.includes('--help')) {
        io.out(`usage: oda-gateway ${entry.usage}`);
        io.out(`  ${entry.summary}`);
        return 0;
      }
      return entry.run(rest, io);
    }
  }
  const name = second === undefined || second.startsWith('-') ? first : `${first} ${second}`;
  io.err(Object.hasOwn(PLANNED, name) ? `${name}: not available yet` : `${name}: unknown command`);
  io.err('');
  for (const line of usage(table)) io.err(line);
  return 2;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await runCli(process.argv.slice(2));
}
