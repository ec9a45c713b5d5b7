import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { ChatIndex } from '../chat-log/chat-index.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { startGateway } from '../test/helpers/start-gateway.ts';
import { capture } from './cli-test-io.ts';
import { say } from '../chat-log/test-batches.ts';

test('log list pages the chats of a data dir newest first, the next cursor on stderr', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oda-cli-list-'));
  const backend = new FileLogBackend({ dataDir });
  for (let i = 0; i < 5; i++) {
    await backend.create({ version: 5, id: `chat-${i}`, createdAt: 1, ...(i % 2 ? { team: 'red' } : {}) });
    await backend.append(`chat-${i}`, [say(`turn ${i}`)], 100 + i);
  }
  await backend.close();

  const first = capture();
  assert.equal(await runCli(['log', 'list', '--limit', '2', '--data-dir', dataDir], first), 0);
  assert.deepEqual(
    first.lines.map((l) => JSON.parse(l) as unknown),
    [
      { id: 'chat-4', createdAt: 1, eventCount: 1, lastActivityAt: 104 },
      { id: 'chat-3', createdAt: 1, team: 'red', eventCount: 1, lastActivityAt: 103 },
    ],
  );
  const cursor = /^more chats: --cursor (\S+)$/.exec(first.errors.at(-1) ?? '')?.[1];
  assert.ok(cursor, first.errors.join('\n'));

  const rest = capture();
  assert.equal(
    await runCli(['log', 'list', `--cursor=${cursor}`, '--limit=10', '--data-dir', dataDir], rest),
    0,
  );
  assert.deepEqual(
    rest.lines.map((l) => (JSON.parse(l) as { id: string }).id),
    ['chat-2', 'chat-1', 'chat-0'],
  );
  assert.deepEqual(rest.errors, [], 'no cursor after the last page');

  const red = capture();
  assert.equal(await runCli(['log', 'list', '--team', 'red', '--data-dir', dataDir], red), 0);
  assert.deepEqual(
    red.lines.map((l) => (JSON.parse(l) as { id: string }).id),
    ['chat-3', 'chat-1'],
  );

  // Without its index (removed, or written by an older gateway) the list is built from the files.
  for (const suffix of ['', '-wal', '-shm'])
    rmSync(join(dataDir, `chat-index.sqlite${suffix}`), { force: true });
  const rebuilt = capture();
  assert.equal(await runCli(['log', 'list', '--prefix', 'chat-0', '--data-dir', dataDir], rebuilt), 0);
  assert.deepEqual(
    rebuilt.lines.map((l) => (JSON.parse(l) as { id: string }).id),
    ['chat-0'],
  );

  for (const [argv, why] of [
    [['--limit', '0'], /--limit must be a whole number from 1 to 500/],
    [['--cursor', 'zzz'], /--cursor: cursor is not a cursor this gateway gave out/],
    [['--color'], /usage: oda-gateway log list/],
  ] as const) {
    const bad = capture();
    assert.equal(await runCli(['log', 'list', ...argv, '--data-dir', dataDir], bad), 2);
    assert.match(bad.errors.join('\n'), why);
  }
  const nowhere = capture();
  assert.equal(await runCli(['log', 'list', '--data-dir', join(dataDir, 'nope')], nowhere), 1);
  assert.match(nowhere.errors[0]!, /no chat log in/);
  rmSync(dataDir, { recursive: true, force: true });
});

test('log list reads its options as GET /v1/sessions reads its parameters, and says what is wrong with one', async () => {
  const dataDir = tempDir('oda-cli-list-args-');
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id: 'chat-a', createdAt: 1 });
  await backend.close();
  for (const [argv, why] of [
    // The API takes digits only: 1e2, 0x10 and " 5" are no page sizes there.
    [['--limit', '1e2'], /^--limit must be a whole number from 1 to 500, got "1e2"$/],
    [['--limit', '0x10'], /^--limit must be a whole number from 1 to 500, got "0x10"$/],
    [['--limit', ' 5'], /^--limit must be a whole number from 1 to 500, got " 5"$/],
    [['--prefix='], /^--prefix must be 1-128 characters$/],
    [['--color'], /^unknown option --color$/],
    [['chat-a'], /^unexpected argument "chat-a"$/],
    [['--limit'], /^--limit needs a value$/],
    [['--limit', '--team', 'red'], /^--limit needs a value$/],
    [['--limit', '2', '--limit=3'], /^--limit given twice$/],
  ] as const) {
    const bad = capture();
    assert.equal(await runCli(['log', 'list', ...argv, '--data-dir', dataDir], bad), 2, argv.join(' '));
    assert.match(bad.errors[0] ?? '', why, argv.join(' '));
    assert.deepEqual(bad.lines, [], argv.join(' '));
  }
});

test('log list beside a gateway that runs where its pid cannot be seen (another host, a container) leaves its chats and index alone', async () => {
  const dataDir = tempDir('oda-cli-list-beside-');
  const chats = join(dataDir, 'chats');
  // An older-version chat that the gateway converted: it appends to the converted generation.
  const fixture = new URL('../chat-log/__fixtures__/v0.jsonl', import.meta.url).pathname;
  const id = (JSON.parse(readFileSync(fixture, 'utf8').split('\n')[0]!) as { id: string }).id;
  mkdirSync(chats, { recursive: true });
  copyFileSync(fixture, join(chats, `${id}.jsonl`));
  const gateway = new FileLogBackend({ dataDir });
  await gateway.indexReady();
  assert.ok((await gateway.read(id, 0)).length > 0);
  await gateway.close();
  // The gateway runs on another host: its claim is fresh, its index open, its pid not one of ours.
  const pid = spawnSync(process.execPath, ['-e', '0']).pid!;
  const index = new ChatIndex(join(dataDir, 'chat-index.sqlite'));
  index.setState('open', pid);
  index.close();
  writeFileSync(
    join(dataDir, 'gateway.lock'),
    `${JSON.stringify({ pid, hostname: 'gateway-elsewhere', startedAt: Date.now(), token: 'live' })}\n`,
  );
  // It is half-way through writing the chat's next event.
  const generation = join(chats, `${id}@v5.jsonl`);
  appendFileSync(generation, '{"seq":8,"at":1700000003000,"type":"message","role":"us');
  const before = readFileSync(generation);

  const io = capture();
  assert.equal(await runCli(['log', 'list', '--data-dir', dataDir], io), 0, io.errors.join('\n'));
  assert.deepEqual(
    io.lines.map((l) => (JSON.parse(l) as { id: string }).id),
    [id],
  );
  assert.deepEqual(readFileSync(generation), before, 'the write in progress is not cut off');
  assert.deepEqual(
    readdirSync(chats).filter((n) => n.includes('.torn-')),
    [],
    'nothing set aside',
  );
});

test('log list rebuilding the index when a gateway starts (after the list looked for one) leaves the write that gateway began alone', async () => {
  const dataDir = tempDir('oda-cli-list-race-');
  const chats = join(dataDir, 'chats');
  // An older-version chat a gateway converted: a full rebuild opens it to index it.
  const fixture = new URL('../chat-log/__fixtures__/v4.jsonl', import.meta.url).pathname;
  const id = (JSON.parse(readFileSync(fixture, 'utf8').split('\n')[0]!) as { id: string }).id;
  mkdirSync(chats, { recursive: true });
  copyFileSync(fixture, join(chats, `${id}.jsonl`));
  const earlier = new FileLogBackend({ dataDir });
  const events = (await earlier.read(id, 0)).length;
  await earlier.close();
  // No index: the list rebuilds it in full, no gateway holding the data directory when it starts.
  for (const suffix of ['', '-wal', '-shm'])
    rmSync(join(dataDir, `chat-index.sqlite${suffix}`), { force: true });
  const generation = join(chats, `${id}@v5.jsonl`);
  const before = readFileSync(generation, 'utf8');
  const next = `{"seq":${events},"at":1700000003000,"type":"message","role":"user","content":[{"kind":"text","text":"and now?"}]}\n`;

  const io = capture();
  // The list looks for a gateway's claim as it starts, before its first wait.
  const listing = runCli(['log', 'list', '--json', '--data-dir', dataDir], io);
  // Then a gateway starts (on another host) and begins appending to the chat: half its line is in.
  writeFileSync(
    join(dataDir, 'gateway.lock'),
    `${JSON.stringify({ pid: 1, hostname: 'gateway-elsewhere', startedAt: Date.now(), token: 'live' })}\n`,
  );
  appendFileSync(generation, next.slice(0, 40));
  assert.equal(await listing, 0, io.errors.join('\n'));
  // The gateway's write ends.
  appendFileSync(generation, next.slice(40));

  assert.equal(readFileSync(generation, 'utf8'), before + next, "the gateway's event is whole, nothing cut");
  assert.deepEqual(
    readdirSync(chats).filter((n) => n.includes('.torn-')),
    [],
    'nothing set aside',
  );
  const listed = JSON.parse(io.lines[0]!) as { data: Array<{ id: string; eventCount: number }> };
  assert.deepEqual(
    listed.data.map((c) => [c.id, c.eventCount]),
    [[id, events]],
    'listed with its whole lines',
  );
});

test('log list filters as GET /v1/sessions does (--contains, --from, --to), and --json holds the chats and the next cursor', async () => {
  const dataDir = tempDir('oda-cli-list-filters-');
  const backend = new FileLogBackend({ dataDir });
  for (const [id, at] of [
    ['alpha-1', 1000],
    ['beta-2', 2000],
    ['alpha-3', 3000],
  ] as const) {
    await backend.create({ version: 5, id, createdAt: 1 });
    await backend.append(id, [say(id)], at);
  }
  await backend.close();
  const ids = async (...args: string[]) => {
    const io = capture();
    assert.equal(await runCli(['log', 'list', ...args, '--data-dir', dataDir], io), 0, io.errors.join('\n'));
    return io.lines.map((l) => (JSON.parse(l) as { id: string }).id);
  };
  assert.deepEqual(await ids('--contains', 'pha'), ['alpha-3', 'alpha-1']);
  assert.deepEqual(await ids('--from', '2000'), ['alpha-3', 'beta-2']);
  assert.deepEqual(await ids('--to=2000'), ['alpha-1']);
  assert.deepEqual(await ids('--from', '1970-01-01T00:00:02Z', '--to', '1970-01-01T00:00:03Z'), ['beta-2']);
  assert.deepEqual(await ids('--contains', 'a-', '--from', '1970-01-01', '--to', '3000'), [
    'beta-2',
    'alpha-1',
  ]);

  // Refused with the route's words, naming the option.
  for (const [args, message] of [
    [
      ['--from', 'yesterday'],
      '--from must be milliseconds since the epoch or an ISO 8601 date, got "yesterday"',
    ],
    [['--to', '-5'], '--to must be milliseconds since the epoch or an ISO 8601 date, got "-5"'],
    [['--contains='], '--contains must be 1-128 characters'],
    [['--json=yes'], '--json takes no value'],
    [['--json', '--json'], '--json given twice'],
  ] as const) {
    const io = capture();
    assert.equal(await runCli(['log', 'list', ...args, '--data-dir', dataDir], io), 2, args.join(' '));
    assert.equal(io.errors[0], message);
    // Asked for JSON (--json given, even twice): the refusal is one JSON object on stdout too.
    const json = (args as readonly string[]).includes('--json');
    assert.deepEqual(
      io.lines.map((l) => JSON.parse(l) as unknown),
      json ? [{ error: { kind: 'usage', message: io.errors.join('\n') } }] : [],
    );
  }

  const first = capture();
  assert.equal(await runCli(['log', 'list', '--json', '--limit', '2', '--data-dir', dataDir], first), 0);
  assert.deepEqual(first.errors, [], 'the cursor is in the JSON, not on stderr');
  assert.equal(first.lines.length, 1);
  const page = JSON.parse(first.lines[0]!) as {
    data: Array<{ id: string }>;
    has_more: boolean;
    next_cursor: string;
  };
  assert.deepEqual(
    page.data.map((c) => c.id),
    ['alpha-3', 'beta-2'],
  );
  assert.equal(page.has_more, true);
  assert.equal(typeof page.next_cursor, 'string');
  const rest = capture();
  assert.equal(
    await runCli(['log', 'list', '--json', '--cursor', page.next_cursor, '--data-dir', dataDir], rest),
    0,
  );
  assert.deepEqual(JSON.parse(rest.lines[0]!), {
    data: [{ id: 'alpha-1', createdAt: 1, eventCount: 1, lastActivityAt: 1000 }],
    has_more: false,
    next_cursor: null,
  });
  assert.deepEqual(rest.errors, []);
});

test('log list reads --team as GET /v1/sessions reads team: any text, an empty one a filter like another', async () => {
  const dataDir = tempDir('oda-cli-list-team-');
  const long = 'x'.repeat(129);
  const backend = new FileLogBackend({ dataDir });
  for (const [id, team] of [
    ['chat-none', undefined],
    ['chat-empty', ''],
    ['chat-red', 'red'],
    ['chat-long', long],
  ] as const) {
    await backend.create({ version: 5, id, createdAt: 1, ...(team !== undefined ? { team } : {}) });
    await backend.append(id, [say(id)], 100);
  }
  await backend.close();
  const cliIds = async (team: string) => {
    const io = capture();
    const code = await runCli(['log', 'list', '--json', '--team', team, '--data-dir', dataDir], io);
    assert.equal(code, 0, `--team ${JSON.stringify(team)}: ${io.errors.join('\n')}`);
    return (JSON.parse(io.lines[0]!) as { data: Array<{ id: string }> }).data.map((c) => c.id);
  };
  const teams = ['', 'red', long, 'blue'];
  const fromCli = [];
  for (const team of teams) fromCli.push(await cliIds(team));
  assert.deepEqual(fromCli, [['chat-empty'], ['chat-red'], ['chat-long'], []]);

  // The gateway on the same data dir answers each team the same.
  const gw = await startGateway({ dataDir });
  try {
    const fromApi = [];
    for (const team of teams) {
      const res = await fetch(`${gw.url}/v1/sessions?team=${encodeURIComponent(team)}`);
      assert.equal(res.status, 200, `team=${JSON.stringify(team)}`);
      fromApi.push(((await res.json()) as { data: Array<{ id: string }> }).data.map((c) => c.id));
    }
    assert.deepEqual(fromApi, fromCli);
  } finally {
    await gw.close();
  }
});

test('log list --json says why it listed nothing as one JSON object on stdout too', async () => {
  const dataDir = tempDir('oda-cli-list-json-errors-');
  const usage = capture();
  assert.equal(await runCli(['log', 'list', '--json', '--limit', '0', '--data-dir', dataDir], usage), 2);
  assert.deepEqual(
    usage.lines.map((l) => JSON.parse(l) as unknown),
    [{ error: { kind: 'usage', message: usage.errors.join('\n') } }],
  );
  assert.match(usage.errors[0] ?? '', /^--limit must be a whole number from 1 to 500, got "0"$/);
  // No chats folder: nothing to list.
  const empty = capture();
  assert.equal(await runCli(['log', 'list', '--json', '--data-dir', dataDir], empty), 1);
  assert.deepEqual(
    empty.lines.map((l) => JSON.parse(l) as unknown),
    [{ error: { kind: 'unreadable', message: `no chat log in ${dataDir} (no chats folder)` } }],
  );
  // Without --json, stdout stays empty as before.
  const plain = capture();
  assert.equal(await runCli(['log', 'list', '--data-dir', dataDir], plain), 1);
  assert.deepEqual(plain.lines, []);
});
