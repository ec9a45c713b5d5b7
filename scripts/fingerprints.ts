/**
 * Chat log format fingerprints: checks today's schemas against `chat-log/fingerprints.json`
 * (exit 1 on drift), or with `--write` records new versions and allowed in-version changes.
 *
 *   npx tsx scripts/fingerprints.ts                      check
 *   npx tsx scripts/fingerprints.ts --write [--note "…"]  record (a note is needed for an allowed change)
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import {
  checkRecord,
  currentStructures,
  parseRecord,
  recordToText,
  updateRecord,
  type FingerprintRecord,
} from '../chat-log/fingerprint-record.ts';

const RECORD_PATH = fileURLToPath(new URL('../chat-log/fingerprints.json', import.meta.url));

async function load(): Promise<FingerprintRecord | undefined> {
  try {
    return parseRecord(JSON.parse(await readFile(RECORD_PATH, 'utf8')) as unknown);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Runs the fingerprint check or update; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const write = argv.includes('--write');
  const noteAt = argv.indexOf('--note');
  const note = noteAt >= 0 ? argv[noteAt + 1] : undefined;
  const previous = await load();
  const current = currentStructures();
  if (!write) {
    if (previous === undefined) {
      console.error('chat-log/fingerprints.json is missing (run with --write)');
      return 1;
    }
    const result = checkRecord(previous, current);
    for (const line of result.lines) (result.ok ? console.log : console.error)(line);
    return result.ok ? 0 : 1;
  }
  const result = updateRecord(previous, current, note);
  for (const line of result.lines) (result.ok ? console.log : console.error)(line);
  if (!result.ok) return 1;
  const options = (await prettier.resolveConfig(RECORD_PATH)) ?? {};
  const text = await prettier.format(recordToText(result.record), { ...options, parser: 'json' });
  await writeFile(RECORD_PATH, text);
  console.log('chat-log/fingerprints.json written');
  return 0;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await main(process.argv.slice(2));
}
