import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { runCli } from './cli.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { RedisLogBackend } from '../chat-log/store-redis.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { freePort } from '../test/helpers/free-port.ts';
import { dropPrefix, keysUnder, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';
import { capture } from './cli-test-io.ts';
import { say } from '../chat-log/test-batches.ts';

const texts = (lines: string[]) =>
  lines.map((l) => (JSON.parse(l) as { content: Array<{ text: string }> }).content[0]!.text);
const ids = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { id: string }).id);

// The commands read the environment as the gateway does; each test sets what it needs.
const ENV = ['ODA_CONFIG', 'ODA_DATA_DIR', 'ODA_STORE'] as const;
const saved = new Map<string, string | undefined>();
before(() => {
  for (const k of ENV) {
    saved.set(k, process.env[k]);
    delete process.env[k];
  }
});
after(() => {
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

async function fileChats(dataDir: string, id: string, said: string[]): Promise<void> {
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id, createdAt: 1 });
  await backend.append(
    id,
    said.map((t) => say(t)),
    5,
  );
  await backend.close();
}

test('log list and log read use the dataDir of the gateway config (--config or ODA_CONFIG); --data-dir overrides it', async () => {
  const dir = tempDir('oda-cli-config-');
  const dataDir = join(dir, 'gateway-data');
  await fileChats(dataDir, 'chat-cfg', ['a', 'b', 'c']);
  const cfg = join(dir, 'oda.yaml');
  // The provider key's variable is not set in this shell: the commands need only dataDir and store.
  writeFileSync(
    cfg,
    `dataDir: ${dataDir}\nproviders:\n  - { name: p, format: openai, baseUrl: https://example.test/v1, apiKey: '\${ODA_TEST_UNSET_KEY}' }\n`,
  );

  const list = capture();
  assert.equal(await runCli(['log', 'list', '--config', cfg], list), 0, list.errors.join('\n'));
  assert.deepEqual(ids(list.lines), ['chat-cfg']);

  // A half-written last line: reported, and the file is left exactly as it was.
  const file = join(dataDir, 'chats', 'chat-cfg.jsonl');
  appendFileSync(file, '{"seq":3,"at":6,"type":"mess');
  const bytes = readFileSync(file);
  const read = capture();
  assert.equal(await runCli(['log', 'read', 'chat-cfg', '--offset', '1', `--config=${cfg}`], read), 0);
  assert.deepEqual(texts(read.lines), ['b', 'c']);
  assert.match(read.errors.join('\n'), /warning: .*torn/i);
  assert.deepEqual(readFileSync(file), bytes);
  assert.deepEqual(readdirSync(join(dataDir, 'chats')), ['chat-cfg.jsonl'], 'nothing set aside');

  process.env.ODA_CONFIG = cfg;
  try {
    const viaEnv = capture();
    assert.equal(await runCli(['log', 'read', 'chat-cfg', '--length', '1'], viaEnv), 0);
    assert.deepEqual(texts(viaEnv.lines), ['a']);
    const listEnv = capture();
    assert.equal(await runCli(['log', 'list'], listEnv), 0);
    assert.deepEqual(ids(listEnv.lines), ['chat-cfg']);

    // --data-dir names another data directory: it wins over the config.
    const otherDir = join(dir, 'other-data');
    await fileChats(otherDir, 'chat-other', ['x']);
    const other = capture();
    assert.equal(await runCli(['log', 'list', '--data-dir', otherDir], other), 0);
    assert.deepEqual(ids(other.lines), ['chat-other']);
    const otherRead = capture();
    assert.equal(await runCli(['log', 'read', 'chat-other', '--data-dir', otherDir], otherRead), 0);
    assert.deepEqual(texts(otherRead.lines), ['x']);
  } finally {
    delete process.env.ODA_CONFIG;
  }

  for (const cmd of ['list', 'read']) {
    const missing = capture();
    const args = cmd === 'read' ? ['chat-cfg'] : [];
    assert.equal(
      await runCli(['log', cmd, ...args, '--config', join(dir, 'nope.yaml')], missing),
      1,
      missing.errors.join('\n'),
    );
    assert.match(missing.errors.join('\n'), /cannot read config file .*nope\.yaml/);
  }
});

test(
  'on a Redis store (from the config) log list and log read go through Redis, read-only: no key written, no lock taken',
  { skip: redisSkip },
  async () => {
    const prefix = uniquePrefix('cli-config');
    const writer = new RedisLogBackend({ url: redisUrl!, prefix });
    try {
      await writer.create({ version: 5, id: 'chat-r1', createdAt: 1, team: 'red' });
      await writer.append(
        'chat-r1',
        ['one', 'two', 'three'].map((t) => say(t)),
        10,
      );
      await writer.create({ version: 5, id: 'chat-old', createdAt: 2 });
      await writer.append('chat-old', [say('old')], 20);
      await writer.close();
      // A chat from before paged listing: in the chat set, not yet in the activity set.
      const raw = new Redis(redisUrl!);
      await raw.zremrangebylex(`${prefix}activity`, '-', '+');
      await raw.zadd(`${prefix}activity`, 0, `${String(10).padStart(16, '0')} chat-r1`);
      const before = await keysUnder(prefix);
      const dir = tempDir('oda-cli-redis-');
      const cfg = join(dir, 'oda.json');
      // dataDir points at nothing: the chats are in Redis.
      writeFileSync(
        cfg,
        JSON.stringify({ dataDir: join(dir, 'scratch'), store: { kind: 'redis', url: redisUrl, prefix } }),
      );

      const list = capture();
      assert.equal(await runCli(['log', 'list', '--config', cfg], list), 0, list.errors.join('\n'));
      assert.deepEqual(ids(list.lines), ['chat-r1']);
      assert.deepEqual(JSON.parse(list.lines[0]!), {
        id: 'chat-r1',
        createdAt: 1,
        team: 'red',
        eventCount: 3,
        lastActivityAt: 10,
      });
      assert.match(list.errors.join('\n'), /1 chat\(s\) are not in the activity index yet/);

      const read = capture();
      assert.equal(
        await runCli(['log', 'read', 'chat-r1', '--offset', '1', '--config', cfg], read),
        0,
        read.errors.join('\n'),
      );
      assert.deepEqual(texts(read.lines), ['two', 'three']);
      const missing = capture();
      assert.equal(await runCli(['log', 'read', 'no-such', '--config', cfg], missing), 1);
      assert.match(missing.errors[0]!, /^no chat "no-such" in the Redis store at redis:\/\//);

      assert.deepEqual(await keysUnder(prefix), before, 'no key added or removed');
      assert.equal(await raw.zcard(`${prefix}activity`), 1, 'the activity set was left for a gateway to fix');
      raw.disconnect();
    } finally {
      await dropPrefix(prefix);
    }
  },
);

test('a config naming a Redis store that cannot be reached: a clear error without the password, exit 1', async () => {
  const dir = tempDir('oda-cli-redis-down-');
  const cfg = join(dir, 'oda.yaml');
  const port = await freePort();
  writeFileSync(cfg, `store: { kind: redis, url: 'redis://:hunter2@127.0.0.1:${port}/0' }\n`);
  for (const args of [['list'], ['read', 'chat-1']]) {
    const io = capture();
    assert.equal(await runCli(['log', ...args, '--config', cfg], io), 1, args.join(' '));
    assert.match(
      io.errors.join('\n'),
      new RegExp(`cannot reach the Redis store at redis://127\\.0\\.0\\.1:${port}/0`),
    );
    assert.doesNotMatch(io.errors.join('\n'), /hunter2/);
    assert.doesNotMatch(io.errors.join('\n'), /no chat log in|no chats folder/);
  }
});
