/**
 * `oda-gateway log read <chat id or file> [--offset N] [--length N] [--data-dir DIR]`: prints part
 * of a chat log as JSON lines, for people who support chats. A file is read through the definition
 * of the version that wrote it (older logs are shown converted to the current version); a chat id
 * is looked up in the data directory (`--data-dir`, else ODA_DATA_DIR, else ./data).
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CliIo } from './cli-io.ts';
import { readLogText, upgradeToCurrent } from './convert.ts';
import { parseReadRange } from './read-range.ts';
import { FileLogBackend } from './store-file.ts';
import type { Event } from './format/current.ts';
import { CURRENT_VERSION } from './format/index.ts';

function option(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i !== -1) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

export async function logRead(args: readonly string[], io: CliIo): Promise<number> {
  const target = args.find((a, i) => !a.startsWith('--') && (i === 0 || !args[i - 1]!.startsWith('--')));
  if (!target) {
    io.err('usage: oda-gateway log read <chat id or file> [--offset N] [--length N] [--data-dir DIR]');
    return 2;
  }
  let range: { offset: number; length: number | undefined };
  try {
    range = parseReadRange(option(args, '--offset'), option(args, '--length'));
  } catch (e) {
    io.err((e as Error).message);
    return 2;
  }
  let events: Event[];
  if (existsSync(target)) {
    const read = readLogText(readFileSync(target, 'utf8'));
    for (const p of read.problems) io.err(`warning: ${JSON.stringify(p)}`);
    const current = upgradeToCurrent(read.version, read.header, read.events);
    if (read.version !== CURRENT_VERSION) {
      io.err(`note: version ${read.version} log shown converted to version ${CURRENT_VERSION}`);
    }
    const end = range.length === undefined ? undefined : range.offset + range.length;
    events = current.events.filter((e) => e.seq >= range.offset && (end === undefined || e.seq < end));
  } else {
    const dataDir = resolve(option(args, '--data-dir') ?? process.env.ODA_DATA_DIR ?? './data');
    const backend = new FileLogBackend({ dataDir });
    try {
      if (!(await backend.header(target))) {
        io.err(`no chat "${target}" in ${dataDir} (and no such file)`);
        return 1;
      }
      events = await backend.read(target, range.offset, range.length);
    } catch (e) {
      io.err((e as Error).message);
      return 1;
    } finally {
      await backend.close();
    }
  }
  for (const e of events) io.out(JSON.stringify(e));
  return 0;
}
