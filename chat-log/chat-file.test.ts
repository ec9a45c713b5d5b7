import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FileLogBackend } from './store-file.ts';
import { ManualClock } from '../lib/clock.ts';
import { T0, hdr, say, rejectsWith } from './test-batches.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const tmp = () => tempDir('oda-store-');

function setup() {
  const dataDir = tmp();
  const clock = new ManualClock(T0);
  return { dataDir, clock, store: new FileLogBackend({ dataDir, clock }) };
}

describe('FileLogBackend: crash safety', () => {
  async function logWith(n: number) {
    const s = setup();
    await s.store.create(hdr('t'));
    for (let i = 0; i < n; i++) await s.store.append('t', [say(`event ${i} `.repeat(5))], T0 + i);
    return { ...s, file: path.join(s.dataDir, 'chats', 't.jsonl') };
  }

  test('a torn last line is set aside beside the log and cut off; earlier events intact', async () => {
    const { store, file, dataDir } = await logWith(4);
    const whole = await store.read('t', 0);
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - 20); // mid-way through the last event line
    const tornBytes = fs.readFileSync(file).subarray(fs.readFileSync(file).lastIndexOf(10) + 1);
    const clock = new ManualClock(T0 + 999);
    const logged: Array<[string, string, Record<string, unknown>]> = [];
    const log = (level: 'debug' | 'info' | 'warn', message: string, fields: Record<string, unknown>) =>
      logged.push([level, message, fields]);
    const reopened = new FileLogBackend({ dataDir, clock, log });
    assert.equal(await reopened.count('t'), 3);
    // The operator is told, once, which chat lost its last line and where the bytes went.
    assert.deepEqual(
      logged.filter(([, m]) => m.includes('torn')),
      [
        [
          'warn',
          'chat log: a torn last line was set aside',
          { chatId: 't', setAside: `t.jsonl.torn-${T0 + 999}`, bytes: tornBytes.length, events: 3 },
        ],
      ],
    );
    assert.deepEqual(await reopened.read('t', 0), whole.slice(0, 3));
    const aside = path.join(dataDir, 'chats', `t.jsonl.torn-${T0 + 999}`);
    assert.ok(fs.readFileSync(aside).equals(tornBytes), 'the torn bytes are kept beside the log');
    assert.ok(fs.readFileSync(file).toString().endsWith('\n'));
    const [next] = await reopened.append('t', [say('after the crash')], T0 + 1000);
    assert.equal(next?.seq, 3);
    const quiet: string[] = [];
    assert.deepEqual(
      (await new FileLogBackend({ dataDir, log: (_l, m) => quiet.push(m) }).read('t', 0)).map((e) => e.seq),
      [0, 1, 2, 3],
    );
    assert.deepEqual(
      quiet.filter((m) => m.includes('torn')),
      [],
      'a whole log opens without a warning',
    );
    assert.deepEqual(
      (await reopened.list()).map((c) => c.id),
      ['t'],
      'the torn file is not listed as a chat',
    );
  });

  test('a garbage last line that ends in a newline is set aside too', async () => {
    const { file, dataDir } = await logWith(2);
    fs.appendFileSync(file, '{"seq":2,"at":1,"type":"mess\n');
    const reopened = new FileLogBackend({ dataDir, clock: new ManualClock(5) });
    assert.equal(await reopened.count('t'), 2);
    assert.equal(
      fs.readFileSync(path.join(dataDir, 'chats', 't.jsonl.torn-5'), 'utf8'),
      '{"seq":2,"at":1,"type":"mess\n',
    );
  });

  test('a complete last line of JSON that is not a valid event is left in place and reported on read', async () => {
    const { file, dataDir } = await logWith(2);
    fs.appendFileSync(file, '{"seq":2,"at":7,"type":"unknown-kind"}\n');
    const before = fs.readFileSync(file);
    const reopened = new FileLogBackend({ dataDir, clock: new ManualClock(8) });
    assert.equal(await reopened.count('t'), 3);
    assert.equal((await reopened.read('t', 0, 2)).length, 2, 'the events before it read fine');
    await assert.rejects(reopened.read('t', 2), rejectsWith(500, 'ODA_ERR_LOG_READ', /damaged at event 2/));
    assert.ok(fs.readFileSync(file).equals(before), 'nothing moved');
    assert.deepEqual(
      fs.readdirSync(path.join(dataDir, 'chats')).filter((n) => n.includes('torn')),
      [],
    );
  });

  test('a log with only its header and a torn first event keeps the header', async () => {
    const { file, dataDir } = await logWith(1);
    fs.truncateSync(file, fs.statSync(file).size - 3);
    const reopened = new FileLogBackend({ dataDir, clock: new ManualClock(6) });
    assert.equal(await reopened.count('t'), 0);
    assert.deepEqual(await reopened.header('t'), hdr('t'));
    assert.deepEqual((await reopened.list())[0], {
      id: 't',
      createdAt: T0,
      eventCount: 0,
      lastActivityAt: T0,
    });
  });
});

describe('FileLogBackend: a chat created just before a crash', () => {
  // In `batch` mode a new chat's file is linked before its bytes are synced: a crash of the machine
  // can leave the name with no bytes, or part of the header line.
  for (const [what, bytes] of [
    ['an empty file', ''],
    ['a header line cut short', '{"version":5,"id":"t","creat'],
  ] as const) {
    test(`${what} is set aside and the chat starts anew, with a warning`, async () => {
      const { dataDir } = setup();
      const chats = path.join(dataDir, 'chats');
      fs.mkdirSync(chats, { recursive: true });
      fs.writeFileSync(path.join(chats, 't.jsonl'), bytes);
      const logged: Array<[string, string, Record<string, unknown>]> = [];
      const store = new FileLogBackend({
        dataDir,
        clock: new ManualClock(77),
        log: (level, message, fields) => logged.push([level, message, fields]),
      });
      assert.equal(await store.header('t'), undefined, 'the chat is absent');
      assert.equal(
        fs.readFileSync(path.join(chats, 't.jsonl.torn-77'), 'utf8'),
        bytes,
        'its bytes are kept aside',
      );
      assert.deepEqual(
        logged.filter(([, m]) => m.includes('set aside')),
        [
          [
            'warn',
            'chat log: a chat file without a whole header was set aside; the chat starts anew',
            { chatId: 't', setAside: 't.jsonl.torn-77', bytes: Buffer.byteLength(bytes) },
          ],
        ],
      );
      assert.equal(await store.create(hdr('t')), 'created');
      await store.append('t', [say('hello again')], T0 + 1);
      assert.equal(await store.count('t'), 1);
      await store.close();
    });
  }

  test('a header without events, or a header line without its newline, is not set aside', async () => {
    const { dataDir, store } = setup();
    await store.create(hdr('t'));
    await store.close();
    const chats = path.join(dataDir, 'chats');
    fs.writeFileSync(path.join(chats, 'u.jsonl'), JSON.stringify(hdr('u')));
    const reopened = new FileLogBackend({ dataDir, clock: new ManualClock(78) });
    assert.deepEqual(await reopened.header('t'), hdr('t'));
    await assert.rejects(reopened.header('u'), rejectsWith(500, 'ODA_ERR_LOG_READ', /damaged/));
    assert.deepEqual(
      fs.readdirSync(chats).filter((n) => n.includes('torn')),
      [],
      'a whole header line is never taken for a torn creation',
    );
  });
});

describe('FileLogBackend: older format versions', () => {
  const v3Log = [
    { version: 3, id: 'old', createdAt: T0 },
    { seq: 0, at: T0 + 1, type: 'message', role: 'user', content: [{ kind: 'text', text: 'run ls' }] },
    {
      seq: 1,
      at: T0 + 2,
      type: 'request',
      requestId: 'r1',
      format: 'openai',
      provider: 'p',
      model: 'm',
      settings: {},
      tools: [],
      notes: [{ callId: 'call_1', failed: false, content: [{ kind: 'text', text: 'a.txt' }] }],
    },
  ]
    .map((r) => JSON.stringify(r) + '\n')
    .join('');

  test('a v3 log is converted when opened; the converted generation is saved beside it and used from then on', async () => {
    const { store, dataDir } = setup();
    const chats = path.join(dataDir, 'chats');
    fs.mkdirSync(chats, { recursive: true });
    const original = path.join(chats, 'old.jsonl');
    fs.writeFileSync(original, v3Log);
    const header = await store.header('old');
    assert.equal(header?.version, 5);
    assert.equal(header?.id, 'old');
    const converted = path.join(chats, 'old@v5.jsonl');
    assert.ok(fs.existsSync(converted), 'converted generation beside the original');
    const events = await store.read('old', 0);
    assert.ok(
      events.some((e) => e.type === 'message' && e.role === 'tool'),
      'notes became tool messages',
    );
    assert.deepEqual(
      events.map((e) => e.seq),
      events.map((_, i) => i),
    );
    const [added] = await store.append('old', [say('next')], T0 + 10);
    assert.equal(added?.seq, events.length);
    assert.equal(fs.readFileSync(original, 'utf8'), v3Log, 'the original is never written');
    assert.match(fs.readFileSync(converted, 'utf8'), /"next"/);

    const fresh = new FileLogBackend({ dataDir });
    assert.equal(await fresh.count('old'), events.length + 1, 'a new process keeps using the converted file');
    assert.deepEqual(
      (await fresh.list()).map((c) => [c.id, c.eventCount]),
      [['old', events.length + 1]],
    );
    assert.equal(await fresh.create(hdr('old')), 'exists');
  });

  test('a v4 log opens as v5 with the same events; appends go to its v5 generation', async () => {
    const { store, dataDir } = setup();
    const chats = path.join(dataDir, 'chats');
    fs.mkdirSync(chats, { recursive: true });
    const v4Text = fs.readFileSync(new URL('./__fixtures__/v4.jsonl', import.meta.url), 'utf8');
    const original = path.join(chats, 'fixture-v4.jsonl');
    fs.writeFileSync(original, v4Text);
    const v4Events = v4Text
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l) as unknown);
    assert.deepEqual(await store.header('fixture-v4'), {
      ...(JSON.parse(v4Text.split('\n')[0]!) as object),
      version: 5,
    });
    assert.deepEqual(await store.read('fixture-v4', 0), v4Events, 'v4 events read as they were');
    await store.append('fixture-v4', [say('next')], T0 + 10);
    assert.equal(fs.readFileSync(original, 'utf8'), v4Text, 'the v4 original is never written');
    assert.match(fs.readFileSync(path.join(chats, 'fixture-v4@v5.jsonl'), 'utf8'), /"next"/);
    assert.deepEqual(
      (await new FileLogBackend({ dataDir }).list()).map((c) => [c.id, c.eventCount]),
      [['fixture-v4', v4Events.length + 1]],
    );
  });

  test('a log an earlier build converted to v4 continues from its v4 generation', async () => {
    const { dataDir } = setup();
    const chats = path.join(dataDir, 'chats');
    fs.mkdirSync(chats, { recursive: true });
    fs.writeFileSync(path.join(chats, 'old.jsonl'), v3Log);
    // An earlier build (v4) converted it to old.v4.jsonl and appended there.
    const v4Lines = v3Log
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const v4Header = { ...v4Lines[0], version: 4 };
    const v4Events = [
      { seq: 0, at: T0, type: 'message', role: 'user', content: [{ kind: 'text', text: 'converted by v4' }] },
      {
        seq: 1,
        at: T0 + 1,
        type: 'message',
        role: 'user',
        content: [{ kind: 'text', text: 'appended in v4' }],
      },
    ];
    const v4Generation = [v4Header, ...v4Events].map((r) => JSON.stringify(r) + '\n').join('');
    fs.writeFileSync(path.join(chats, 'old.v4.jsonl'), v4Generation);
    const store = new FileLogBackend({ dataDir });
    assert.deepEqual(await store.read('old', 0), v4Events);
    assert.equal((await store.header('old'))?.version, 5);
    assert.equal(fs.readFileSync(path.join(chats, 'old.v4.jsonl'), 'utf8'), v4Generation);
    assert.deepEqual(
      (await store.list()).map((c) => [c.id, c.eventCount]),
      [['old', 2]],
    );
    assert.deepEqual(
      fs.readdirSync(chats).sort(),
      ['old.jsonl', 'old@v4.jsonl', 'old@v5.jsonl'],
      'listing converts nothing that is not a chat of its own; the v4 generation moved to its own name',
    );
    assert.equal(fs.readFileSync(path.join(chats, 'old@v4.jsonl'), 'utf8'), v4Generation);
  });

  test('an unknown version is refused', async () => {
    const { store, dataDir } = setup();
    fs.mkdirSync(path.join(dataDir, 'chats'), { recursive: true });
    fs.writeFileSync(
      path.join(dataDir, 'chats', 'future.jsonl'),
      JSON.stringify({ version: 9, id: 'future', createdAt: 0 }) + '\n',
    );
    await assert.rejects(
      store.count('future'),
      rejectsWith(500, 'ODA_ERR_LOG_READ', /unsupported format version 9/),
    );
    assert.deepEqual(await store.list(), []);
  });
});
