import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, type CliIo } from './cli.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

function capture(): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) };
}

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
