/**
 * `log read <id>` of an older chat reads the generation a gateway reads: the converted copy an
 * earlier build saved under the old name, or the generation the next conversion starts from, never
 * the original with the events appended since left out. Nothing is moved or converted on disk.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './cli.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { logToText, readLogText, upgradeToCurrent } from '../chat-log/convert.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { capture } from './cli-test-io.ts';

const fixture = (v: number) => new URL(`../chat-log/__fixtures__/v${v}.jsonl`, import.meta.url).pathname;

/** A data directory holding fixture chat `fixture-v<v>` as an earlier build left it. */
function dataDirWith(v: number, generations: Record<string, string>): { dataDir: string; chats: string } {
  const dataDir = tempDir('oda-cli-read-gen-');
  const chats = join(dataDir, 'chats');
  mkdirSync(chats);
  copyFileSync(fixture(v), join(chats, `fixture-v${v}.jsonl`));
  for (const [name, text] of Object.entries(generations)) writeFileSync(join(chats, name), text);
  return { dataDir, chats };
}

/** Fixture `v` converted, written as a version-`as` generation, with one event appended after. */
function generationOf(v: number, as: number, appendedText: string): string {
  const read = readLogText(readFileSync(fixture(v), 'utf8'));
  const converted = upgradeToCurrent(read.version, read.header, read.events);
  const text = logToText(converted).replace(/^\{"version":5,/, `{"version":${as},`);
  const appended = {
    seq: converted.events.at(-1)!.seq + 1,
    at: 1800000000000,
    type: 'message',
    role: 'user',
    content: [{ kind: 'text', text: appendedText }],
  };
  return `${text}${JSON.stringify(appended)}\n`;
}

/** `log read <id>` on `dataDir`: its exit code, output lines and stderr. */
async function logRead(dataDir: string, id: string) {
  const io = capture();
  const code = await runCli(['log', 'read', id, '--data-dir', dataDir], io);
  return { code, lines: io.lines, errors: io.errors };
}

/** What a gateway reads of chat `id` (opening it, which moves or converts as it must). */
async function gatewayRead(dataDir: string, id: string): Promise<string[]> {
  const backend = new FileLogBackend({ dataDir });
  try {
    return (await backend.read(id, 0)).map((e) => JSON.stringify(e));
  } finally {
    await backend.close();
  }
}

/** The text of the last event when it is a message (undefined for another event). */
const lastText = (lines: string[]) =>
  (JSON.parse(lines.at(-1) ?? '{}') as { content?: Array<{ text?: string }> }).content?.[0]?.text;

test('log read of an older chat reads the converted copy an earlier build saved as <chat>.v5.jsonl', async () => {
  const { dataDir, chats } = dataDirWith(4, {
    'fixture-v4.v5.jsonl': generationOf(4, 5, 'appended in the v5 copy'),
  });
  const files = readdirSync(chats).sort();
  const cli = await logRead(dataDir, 'fixture-v4');
  assert.equal(cli.code, 0, cli.errors.join('\n'));
  assert.equal(lastText(cli.lines), 'appended in the v5 copy');
  assert.deepEqual(cli.errors, []);
  // That copy is no chat of its own, as a gateway would say.
  const other = await logRead(dataDir, 'fixture-v4.v5');
  assert.equal(other.code, 1);
  assert.deepEqual(other.lines, []);
  assert.match(other.errors[0] ?? '', /^no chat "fixture-v4\.v5"/);
  assert.deepEqual(readdirSync(chats).sort(), files, 'nothing moved or written');
  assert.deepEqual(await gatewayRead(dataDir, 'fixture-v4'), cli.lines);
});

for (const name of ['fixture-v3@v4.jsonl', 'fixture-v3.v4.jsonl']) {
  test(`log read of an older chat reads the generation an earlier build converted it to (${name}), converted`, async () => {
    const { dataDir, chats } = dataDirWith(3, {
      [name]: generationOf(3, 4, 'appended in the v4 generation'),
    });
    const files = readdirSync(chats).sort();
    const cli = await logRead(dataDir, 'fixture-v3');
    assert.equal(cli.code, 0, cli.errors.join('\n'));
    assert.equal(lastText(cli.lines), 'appended in the v4 generation');
    assert.deepEqual(cli.errors, ['note: version 4 log shown converted to version 5']);
    assert.deepEqual(readdirSync(chats).sort(), files, 'nothing converted on disk');
    assert.deepEqual(await gatewayRead(dataDir, 'fixture-v3'), cli.lines);
  });
}

test('log read of an older chat with a converted generation reads that one, and of a current chat its own file', async () => {
  const { dataDir } = dataDirWith(4, { 'fixture-v4@v5.jsonl': generationOf(4, 5, 'appended in @v5') });
  const cli = await logRead(dataDir, 'fixture-v4');
  assert.equal(cli.code, 0, cli.errors.join('\n'));
  assert.equal(lastText(cli.lines), 'appended in @v5');
  assert.deepEqual(await gatewayRead(dataDir, 'fixture-v4'), cli.lines);
  // A current chat's own file is its log, whatever lies beside it.
  const current = dataDirWith(5, { 'fixture-v5@v5.jsonl': generationOf(5, 5, 'not this one') });
  const own = await logRead(current.dataDir, 'fixture-v5');
  assert.equal(own.code, 0, own.errors.join('\n'));
  assert.deepEqual(
    own.lines,
    readLogText(readFileSync(fixture(5), 'utf8')).events.map((e) => JSON.stringify(e)),
  );
  assert.deepEqual(await gatewayRead(current.dataDir, 'fixture-v5'), own.lines);
});
