import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from './cli.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { appendFileSync, copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { capture } from './cli-test-io.ts';

test('log read prints a range of a chat by id, and of an older-version file converted', async () => {
  const dataDir = tempDir('oda-cli-read-');
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id: 'chat-1', createdAt: 1 });
  await backend.append(
    'chat-1',
    ['a', 'b', 'c', 'd'].map((text) => ({
      type: 'message' as const,
      role: 'user' as const,
      content: [{ kind: 'text' as const, text }],
    })),
    5,
  );
  await backend.close();
  const io = capture();
  assert.equal(
    await runCli(['log', 'read', 'chat-1', '--offset', '1', '--length', '2', '--data-dir', dataDir], io),
    0,
  );
  assert.deepEqual(
    io.lines.map(
      (l) => (JSON.parse(l) as { seq: number; content: Array<{ text: string }> }).content[0]!.text,
    ),
    ['b', 'c'],
  );

  const bad = capture();
  assert.equal(await runCli(['log', 'read', 'chat-1', '--offset', '-1', '--data-dir', dataDir], bad), 2);
  assert.match(bad.errors[0]!, /read offset must be a non-negative safe integer, got -1/);

  const missing = capture();
  assert.equal(await runCli(['log', 'read', 'no-such-chat', '--data-dir', dataDir], missing), 1);

  const v0 = capture();
  const fixture = new URL('../chat-log/__fixtures__/v0.jsonl', import.meta.url).pathname;
  assert.equal(await runCli(['log', 'read', fixture], v0), 0);
  assert.ok(v0.lines.length > 0);
  assert.match(v0.errors.join('\n'), /version 0 log shown converted to version 5/);
});

test('log read: options as --name=value anywhere; unknown or empty options and files that are no chat log say so, without a stack', async () => {
  const dataDir = tempDir('oda-cli-read-args-');
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id: 'chat-2', createdAt: 1 });
  await backend.append(
    'chat-2',
    ['a', 'b', 'c'].map((text) => ({
      type: 'message' as const,
      role: 'user' as const,
      content: [{ kind: 'text' as const, text }],
    })),
    5,
  );
  await backend.close();

  const eq = capture();
  assert.equal(await runCli(['log', 'read', '--offset=1', `--data-dir=${dataDir}`, 'chat-2'], eq), 0);
  assert.deepEqual(
    eq.lines.map((l) => (JSON.parse(l) as { content: Array<{ text: string }> }).content[0]!.text),
    ['b', 'c'],
  );

  for (const [args, message] of [
    [['chat-2', '--bogus', '3'], /^unknown option --bogus$/],
    [['chat-2', '--offset'], /^--offset needs a value$/],
    [['chat-2', '--offset', '--length', '1'], /^--offset needs a value$/],
    [[], /^no chat id or file given$/],
  ] as const) {
    const io = capture();
    assert.equal(await runCli(['log', 'read', ...args, '--data-dir', dataDir], io), 2, args.join(' '));
    assert.match(io.errors[0]!, message);
    assert.match(io.errors[1]!, /^usage: oda-gateway log read/);
  }

  // A file that is no chat log: its problem in one line, exit 1.
  const notLog = capture();
  const packageJson = new URL('../package.json', import.meta.url).pathname;
  assert.equal(await runCli(['log', 'read', packageJson], notLog), 1);
  assert.equal(notLog.errors.length, 1);
  assert.match(notLog.errors[0]!, /package\.json: chat log header \(line 1\) is not valid JSON/);
  // A folder is no file: the name is looked up as a chat id.
  const folder = capture();
  assert.equal(await runCli(['log', 'read', dataDir, '--data-dir', dataDir], folder), 1);
  assert.match(folder.errors[0]!, /^no chat ".*" in .* \(and no such file\)$/);
});

test('log read by chat id never writes: a torn last line (a write in progress) is reported, not cut; an older log is not converted beside it', async () => {
  const dataDir = tempDir('oda-cli-read-only-');
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id: 'live', createdAt: 1 });
  await backend.append(
    'live',
    ['a', 'b'].map((text) => ({
      type: 'message' as const,
      role: 'user' as const,
      content: [{ kind: 'text' as const, text }],
    })),
    1,
  );
  await backend.close();
  const chats = join(dataDir, 'chats');
  // A gateway is half-way through writing the next event.
  appendFileSync(join(chats, 'live.jsonl'), '{"seq":2,"at":3,"type":"message","role":"us');
  const before = readFileSync(join(chats, 'live.jsonl'));
  const io = capture();
  assert.equal(await runCli(['log', 'read', 'live', '--data-dir', dataDir], io), 0);
  assert.deepEqual(
    io.lines.map((l) => (JSON.parse(l) as { seq: number }).seq),
    [0, 1],
  );
  assert.match(io.errors.join('\n'), /warning: .*torn/i);
  assert.deepEqual(readFileSync(join(chats, 'live.jsonl')), before, 'the file is unchanged');
  assert.deepEqual(readdirSync(chats).sort(), ['live.jsonl'], 'nothing set aside or written beside it');

  // An older-version log under a chat id: shown converted, no converted copy written.
  const fixture = new URL('../chat-log/__fixtures__/v0.jsonl', import.meta.url).pathname;
  const id = (JSON.parse(readFileSync(fixture, 'utf8').split('\n')[0]!) as { id: string }).id;
  copyFileSync(fixture, join(chats, `${id}.jsonl`));
  const old = capture();
  assert.equal(await runCli(['log', 'read', id, '--data-dir', dataDir], old), 0);
  assert.ok(old.lines.length > 0);
  assert.match(old.errors.join('\n'), /version 0 log shown converted to version 5/);
  assert.deepEqual(readdirSync(chats).sort(), [`${id}.jsonl`, 'live.jsonl'].sort());
});
