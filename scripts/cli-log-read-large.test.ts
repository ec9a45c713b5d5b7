import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  closeSync,
  ftruncateSync,
  openSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { runCli } from './cli.ts';
import { readLogText } from '../chat-log/convert.ts';
import { Redis } from 'ioredis';
import { RedisLogBackend } from '../chat-log/store-redis.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { capture } from './cli-test-io.ts';
import { chatFileOf, say } from '../chat-log/test-batches.ts';

const seqs = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { seq: number }).seq);

test('log read of a chat larger than Node can read whole prints its range (the file is read only as far as the range)', async () => {
  const dataDir = tempDir('oda-cli-read-large-');
  const path = await chatFileOf(dataDir, 'big', 5);
  // A chat of over 2 GiB: a sparse tail stands in for the events a long-running agent logged.
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, statSync(path).size + 2 ** 31 + 1);
  } finally {
    closeSync(fd);
  }
  const io = capture();
  assert.equal(
    await runCli(['log', 'read', 'big', '--offset', '1', '--length', '3', '--data-dir', dataDir], io),
    0,
    io.errors.join('\n'),
  );
  assert.deepEqual(seqs(io.lines), [1, 2, 3]);
  assert.deepEqual(io.errors, []);
});

test('log read reads a long chat in pieces with the same events and problems as a whole read', async () => {
  const dataDir = tempDir('oda-cli-read-pieces-');
  const path = await chatFileOf(dataDir, 'long', 2600);
  // A damaged line in the middle, a blank line, and a last line a crash cut short.
  const lines = readFileSync(path, 'utf8').split('\n');
  lines[1500] =
    '{"seq":1499,"at":10,"type":"message","role":"user","content":[{"kind":"text","text":"m1499"}';
  lines.splice(2000, 0, '');
  writeFileSync(path, lines.join('\n'));
  appendFileSync(path, '{"seq":2600,"at":11,"type":"mess');
  const whole = readLogText(readFileSync(path, 'utf8'));
  const kinds = (errors: string[]) =>
    errors.map((e) => (JSON.parse(e.replace(/^warning: /, '')) as { kind: string }).kind);
  assert.deepEqual(kinds(whole.problems.map((p) => `warning: ${JSON.stringify(p)}`)), [
    'invalid-json',
    'blank-line',
    'torn-line',
  ]);
  // Each range: the problems of the lines it reads (a torn last line whenever it runs to the end),
  // and of lines on the way that do not begin as a stored event does (the blank one).
  for (const [offset, length, problems] of [
    [undefined, undefined, ['invalid-json', 'blank-line', 'torn-line']],
    [0, 1001, []],
    [999, 2, []],
    [1400, 200, ['invalid-json']],
    [2500, undefined, ['blank-line', 'torn-line']],
    [2599, 5, ['blank-line', 'torn-line']],
    [2700, undefined, ['blank-line', 'torn-line']],
  ] as const) {
    const args = ['log', 'read', 'long', '--data-dir', dataDir];
    if (offset !== undefined) args.push('--offset', String(offset));
    if (length !== undefined) args.push('--length', String(length));
    const io = capture();
    assert.equal(await runCli(args, io), 0, io.errors.join('\n'));
    const from = offset ?? 0;
    const to = length === undefined ? Infinity : from + length;
    assert.deepEqual(
      io.lines,
      whole.events.filter((e) => e.seq >= from && e.seq < to).map((e) => JSON.stringify(e)),
      args.join(' '),
    );
    assert.deepEqual(kinds(io.errors), problems, args.join(' '));
    for (const e of io.errors) {
      assert.ok(
        whole.problems.some((p) => e === `warning: ${JSON.stringify(p)}`),
        `${e} as a whole read reports it`,
      );
    }
  }
});

test(
  'log read of a long chat on Redis reads it a page of 1,000 events at a time, never whole',
  { skip: redisSkip },
  async () => {
    const prefix = uniquePrefix('cli-read-pages');
    const writer = new RedisLogBackend({ url: redisUrl!, prefix });
    const client = new Redis(redisUrl!);
    // A connection of its own in MONITOR mode, beside `client`.
    const monitor = await client.monitor();
    try {
      await writer.create({ version: 5, id: 'long', createdAt: 1 });
      for (let at = 0; at < 2500; at += 500)
        await writer.append(
          'long',
          Array.from({ length: 500 }, (_, i) => say(`m${at + i}`)),
          10,
        );
      await writer.close();
      const cfg = join(tempDir('oda-cli-read-pages-'), 'oda.json');
      writeFileSync(cfg, JSON.stringify({ store: { kind: 'redis', url: redisUrl, prefix } }));
      const ranges: Array<[number, number]> = [];
      let seen: ((marker: string) => void) | undefined;
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toLowerCase() === 'lrange' && args[1] === `${prefix}chat:long:events`)
          ranges.push([Number(args[2]), Number(args[3])]);
        if (args[0]?.toLowerCase() === 'echo') seen?.(args[1]!);
      });
      // MONITOR reports a command after it ran: an ECHO sent after the command ends shows when
      // every command it sent has been reported.
      const reported = (marker: string) =>
        new Promise<void>((resolve) => {
          seen = (m) => m === marker && resolve();
          void client.echo(marker);
        });
      for (const [args, first, count] of [
        [[], 0, 2500],
        [['--offset', '10'], 10, 2490],
        [['--offset', '100', '--length', '1500'], 100, 1500],
      ] as const) {
        ranges.length = 0;
        const io = capture();
        assert.equal(
          await runCli(['log', 'read', 'long', ...args, '--config', cfg], io),
          0,
          io.errors.join('\n'),
        );
        assert.deepEqual(
          seqs(io.lines),
          Array.from({ length: count }, (_, i) => first + i),
        );
        await reported(`done ${first} ${count}`);
        assert.ok(ranges.length >= 2, JSON.stringify(ranges));
        for (const [from, to] of ranges) assert.ok(to >= from && to - from < 1000, JSON.stringify(ranges));
      }
    } finally {
      monitor.disconnect();
      client.disconnect();
      await dropPrefix(prefix);
    }
  },
);
