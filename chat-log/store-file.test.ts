import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FileLogBackend } from './store-file.ts';
import { ManualClock } from '../lib/clock.ts';
import type { Event, NewEvent } from './format/current.ts';
import { T0, hdr, say, request, rejectsWith } from './test-batches.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const tmp = () => tempDir('oda-store-');

function setup() {
  const dataDir = tmp();
  const clock = new ManualClock(T0);
  return { dataDir, clock, store: new FileLogBackend({ dataDir, clock }) };
}

describe('FileLogBackend: create and header', () => {
  test('creates once, then answers exists; the file is header + nothing else', async () => {
    const { store, dataDir } = setup();
    assert.equal(await store.create(hdr('c1', { cwd: '/w' })), 'created');
    assert.equal(await store.create(hdr('c1', { cwd: '/other' })), 'exists');
    assert.deepEqual(await store.header('c1'), hdr('c1', { cwd: '/w' }));
    assert.equal(await store.count('c1'), 0);
    const file = fs.readFileSync(path.join(dataDir, 'chats', 'c1.jsonl'), 'utf8');
    assert.deepEqual(JSON.parse(file.split('\n')[0] ?? ''), hdr('c1', { cwd: '/w' }));
    assert.equal(file.split('\n').length, 2);
  });

  test('concurrent creates of one id: exactly one wins', async () => {
    const { store } = setup();
    const results = await Promise.all(Array.from({ length: 10 }, () => store.create(hdr('same'))));
    assert.equal(results.filter((r) => r === 'created').length, 1);
  });

  test('seed events are copied in order, renumbered from 0, keeping their time', async () => {
    const { store } = setup();
    const seed = [
      { seq: 7, at: T0 + 1, ...say('a') },
      { seq: 9, at: T0 + 2, ...say('b', 'model') },
    ] as Event[];
    await store.create(hdr('branch', { parent: 'p', seeded: true, inheritedEvents: 2 }), seed);
    const events = await store.read('branch', 0);
    assert.deepEqual(
      events.map((e) => [e.seq, e.at]),
      [
        [0, T0 + 1],
        [1, T0 + 2],
      ],
    );
    assert.equal(await store.count('branch'), 2);
  });

  test('an invalid header or seed creates nothing', async () => {
    const { store, dataDir } = setup();
    await assert.rejects(
      store.create({ ...hdr('h1'), createdAt: -0 }),
      rejectsWith(400, 'ODA_ERR_LOG_WRITE'),
    );
    await assert.rejects(
      store.create(hdr('h2'), [
        { seq: 0, at: T0, type: 'message', role: 'user', content: 'x' } as unknown as Event,
      ]),
      rejectsWith(500, 'ODA_ERR_LOG_WRITE'),
    );
    const chats = path.join(dataDir, 'chats');
    assert.deepEqual(
      fs.existsSync(chats) ? fs.readdirSync(chats) : [],
      [],
      'no file, not even a temporary one',
    );
    assert.equal(await store.header('h1'), undefined);
  });

  test('missing chats: header undefined, the rest 404', async () => {
    const { store } = setup();
    assert.equal(await store.header('nope'), undefined);
    await assert.rejects(store.count('nope'), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    await assert.rejects(store.read('nope', 0), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    await assert.rejects(store.append('nope', [say('x')], T0), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
  });
});

describe('FileLogBackend: appends', () => {
  test('50 concurrent appends of one chat get contiguous seq and contiguous lines', async () => {
    const { store, dataDir } = setup();
    await store.create(hdr('busy'));
    const batches = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.append('busy', i % 3 === 0 ? [say(`${i}a`), say(`${i}b`)] : [say(`${i}`)], T0 + i),
      ),
    );
    for (const b of batches) {
      for (let k = 1; k < b.length; k++)
        assert.equal(b[k]?.seq, (b[0]?.seq ?? 0) + k, 'one batch is contiguous');
    }
    const seqs = batches
      .flat()
      .map((e) => e.seq)
      .sort((a, b) => a - b);
    assert.deepEqual(
      seqs,
      Array.from({ length: seqs.length }, (_, i) => i),
    );
    const lines = fs
      .readFileSync(path.join(dataDir, 'chats', 'busy.jsonl'), 'utf8')
      .trimEnd()
      .split('\n')
      .slice(1);
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as Event).seq),
      seqs,
    );
    const fresh = new FileLogBackend({ dataDir });
    assert.deepEqual(await fresh.read('busy', 0), await store.read('busy', 0));
  });

  test('appends stamp at = now and keep the given body exactly', async () => {
    const { store } = setup();
    await store.create(hdr('c'));
    const [stored] = await store.append('c', [say('héllo 🌍')], T0 + 42);
    assert.deepEqual(stored, { seq: 0, at: T0 + 42, ...say('héllo 🌍') });
    assert.deepEqual(await store.read('c', 0), [stored]);
  });

  test('a batch refused in its 3rd event (lossless) stores nothing', async () => {
    const { store, dataDir } = setup();
    await store.create(hdr('c'));
    await store.append('c', [say('kept')], T0);
    const file = path.join(dataDir, 'chats', 'c.jsonl');
    const before = fs.readFileSync(file);
    await assert.rejects(
      store.append('c', [say('one'), say('two'), request({ temperature: -0 }), say('four')], T0 + 1),
      rejectsWith(400, 'ODA_ERR_LOG_WRITE', /events\[2\]\.settings\.temperature is negative zero/),
    );
    for (const bad of [
      request({ nested: { gone: undefined } }),
      request({ list: [1, , 3] }), // eslint-disable-line no-sparse-arrays
      request({ when: new Date(0) }),
      request({ big: NaN }),
    ]) {
      await assert.rejects(
        store.append('c', [say('one'), say('two'), bad], T0 + 2),
        rejectsWith(400, 'ODA_ERR_LOG_WRITE'),
      );
    }
    assert.ok(fs.readFileSync(file).equals(before), 'file bytes unchanged');
    assert.equal(await store.count('c'), 1);
    const [next] = await store.append('c', [say('after')], T0 + 3);
    assert.equal(next?.seq, 1, 'the refused batch took no sequence numbers');
  });

  test('a schema-invalid or reserved-field event refuses the batch', async () => {
    const { store } = setup();
    await store.create(hdr('c'));
    const inlineTool = {
      type: 'request',
      requestId: 'r',
      format: 'openai',
      provider: 'p',
      model: 'm',
      settings: {},
      tools: [{ name: 't', digest: 'a'.repeat(64), parameters: {} }],
    };
    const reserved = { ...(request({}) as object), notes: [{ text: 'x' }] };
    for (const bad of [inlineTool, reserved, { type: 'nope' }]) {
      await assert.rejects(
        store.append('c', [say('x'), bad as NewEvent], T0),
        rejectsWith(500, 'ODA_ERR_LOG_WRITE'),
      );
    }
    assert.equal(await store.count('c'), 0);
  });
});

describe('FileLogBackend: reads', () => {
  test('offset and length pick a window; past the end is empty', async () => {
    const { store } = setup();
    await store.create(hdr('r'));
    for (let i = 0; i < 10; i++) await store.append('r', [say(`m${i}`)], T0 + i);
    const seqs = async (o: number, l?: number) => (await store.read('r', o, l)).map((e) => e.seq);
    assert.deepEqual(await seqs(0), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(await seqs(3, 2), [3, 4]);
    assert.deepEqual(await seqs(8, 100), [8, 9]);
    assert.deepEqual(await seqs(9, 1), [9]);
    assert.deepEqual(await seqs(4, 0), []);
    assert.deepEqual(await seqs(10), []);
    assert.deepEqual(await seqs(1000, 5), []);
  });

  test('a chat file cut short behind the store is a 500 ODA_ERR_LOG_READ, for reads and streamed reads', async () => {
    const { store, dataDir } = setup();
    await store.create(hdr('cut'));
    for (let i = 0; i < 3; i++) await store.append('cut', [say(`m${i}`)], T0 + i);
    const file = path.join(dataDir, 'chats', 'cut.jsonl');
    fs.truncateSync(file, fs.statSync(file).size - 5);
    await assert.rejects(store.read('cut', 0), rejectsWith(500, 'ODA_ERR_LOG_READ'));
    await assert.rejects(store.read('cut', 2, 1), /chat log cut is shorter than its index/);
    // Lines before the cut are still served by a read that ends before it.
    assert.deepEqual(
      (await store.read('cut', 0, 2)).map((e) => e.seq),
      [0, 1],
    );
    const { lines } = await store.readLines('cut', 0, 10, 1_000_000);
    await assert.rejects(
      (async () => {
        for await (const _line of lines);
      })(),
      rejectsWith(500, 'ODA_ERR_LOG_READ'),
    );
  });

  test('list summarises every chat with its last activity', async () => {
    const { store } = setup();
    await store.create(hdr('a', { team: 'research', cwd: '/src/a' }));
    await store.create(hdr('b', { parent: 'a' }));
    await store.append('a', [say('x')], T0 + 500);
    assert.deepEqual(await store.list(), [
      { id: 'a', createdAt: T0, team: 'research', cwd: '/src/a', eventCount: 1, lastActivityAt: T0 + 500 },
      { id: 'b', createdAt: T0, parent: 'a', eventCount: 0, lastActivityAt: T0 },
    ]);
  });
});

describe('FileLogBackend: ids with path tricks are refused', () => {
  const bad = ['../x', 'a/b', '%2e%2e', 'a\0b', 'x'.repeat(129), '.', '..', '', 'a\\b', '/etc/passwd', 'a b'];
  for (const id of bad) {
    test(JSON.stringify(id.length > 20 ? `${id.slice(0, 10)}...(${id.length})` : id), async () => {
      const { store, dataDir } = setup();
      await assert.rejects(store.create(hdr(id)), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(store.append(id, [say('x')], T0), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(store.read(id, 0), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(store.getCheckpoint(id, 'm'), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(
        store.withLock(id, async () => 1),
        rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'),
      );
      assert.equal(await store.header(id), undefined);
      assert.deepEqual(fs.readdirSync(dataDir), [], 'nothing written anywhere');
    });
  }

  test('the longest and oddest valid ids work', async () => {
    const { store } = setup();
    for (const id of ['x'.repeat(128), 'claude-code:3f1a.b_c-9', '...', 'a..b']) {
      assert.equal(await store.create(hdr(id)), 'created');
      assert.equal(await store.count(id), 0);
    }
  });

  test('checkpoint model names are checked too', async () => {
    const { store } = setup();
    const cp = { model: '../../x', formatVersion: 4, build: 'b', position: -1, state: {} };
    await assert.rejects(store.putCheckpoint('c', cp), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
  });
});

describe('FileLogBackend: checkpoints, locks, ping', () => {
  test('checkpoints round-trip atomically; a damaged one reads as absent', async () => {
    const { store, dataDir } = setup();
    const cp = { model: 'totals.v1', formatVersion: 4, build: 'b1', position: 12, state: { n: 3 } };
    assert.equal(await store.getCheckpoint('c', 'totals.v1'), undefined);
    await store.putCheckpoint('c', cp);
    await store.putCheckpoint('c', { ...cp, position: 13 });
    assert.deepEqual(await store.getCheckpoint('c', 'totals.v1'), { ...cp, position: 13 });
    const dir = path.join(dataDir, 'checkpoints', 'c');
    assert.deepEqual(fs.readdirSync(dir), ['totals.v1.json']);
    fs.writeFileSync(path.join(dir, 'totals.v1.json'), '{"model":"totals.v1","formatVer');
    assert.equal(await store.getCheckpoint('c', 'totals.v1'), undefined);
    fs.writeFileSync(path.join(dir, 'totals.v1.json'), JSON.stringify({ ...cp, position: 'x' }));
    assert.equal(await store.getCheckpoint('c', 'totals.v1'), undefined);
  });

  test("a checkpoint of a newer version removes the chat's files of that model's older versions", async () => {
    const logged: Array<[string, string, Record<string, unknown>]> = [];
    const dataDir = tmp();
    const store = new FileLogBackend({
      dataDir,
      log: (level, message, fields) => logged.push([level, message, fields]),
    });
    const cp = (model: string) => ({ model, formatVersion: 5, build: 'b1', position: 3, state: {} });
    // What earlier builds left: two older versions of `messages`, a newer one, another model, and
    // the same model's old version in another chat.
    for (const model of ['messages.v6', 'messages.v7', 'messages.v9', 'decisions.v3']) {
      await store.putCheckpoint('c', cp(model));
    }
    await store.putCheckpoint('other', cp('messages.v7'));
    const dir = path.join(dataDir, 'checkpoints', 'c');
    fs.writeFileSync(path.join(dir, 'messages.json'), '{}'); // not a versioned name: not ours to judge

    await store.putCheckpoint('c', cp('messages.v8'));
    assert.deepEqual(fs.readdirSync(dir).sort(), [
      'decisions.v3.json',
      'messages.json',
      'messages.v8.json',
      'messages.v9.json',
    ]);
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'checkpoints', 'other')), ['messages.v7.json']);
    assert.deepEqual(await store.getCheckpoint('c', 'messages.v8'), cp('messages.v8'));
    assert.equal(logged.length, 0, JSON.stringify(logged));

    // A file that cannot be removed (here a folder in its place) stays, is logged at debug, and the
    // write still succeeds.
    fs.mkdirSync(path.join(dir, 'decisions.v1.json'));
    fs.writeFileSync(path.join(dir, 'decisions.v1.json', 'x'), '');
    await store.putCheckpoint('c', { ...cp('decisions.v3'), position: 4 });
    assert.deepEqual(await store.getCheckpoint('c', 'decisions.v3'), { ...cp('decisions.v3'), position: 4 });
    assert.ok(fs.existsSync(path.join(dir, 'decisions.v1.json')));
    assert.equal(logged.length, 1);
    const [level, message, fields] = logged[0]!;
    assert.equal(level, 'debug');
    assert.equal(message, 'chat log: an older checkpoint could not be removed');
    assert.equal(fields.chatId, 'c');
    assert.equal(fields.model, 'decisions.v3');
    assert.equal(fields.file, 'decisions.v1.json');
    assert.ok(fields.err instanceof Error);
  });

  test('withLock is exclusive per chat, independent across chats, and append works inside it', async () => {
    const { store } = setup();
    await store.create(hdr('l'));
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = store.withLock('l', async () => {
      order.push('first:start');
      await gate;
      await store.append('l', [say('inside')], T0);
      order.push('first:end');
    });
    const second = store.withLock('l', async () => {
      order.push('second');
    });
    await store.withLock('other', async () => order.push('other'));
    release();
    await Promise.all([first, second]);
    assert.deepEqual(order, ['first:start', 'other', 'first:end', 'second']);
    assert.equal(await store.count('l'), 1);
    await assert.rejects(
      store.withLock('l', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await store.withLock('l', async () => 'still usable'), 'still usable');
  });

  test('ping is true for a writable dir and false when dataDir cannot be a directory', async () => {
    const { store, dataDir } = setup();
    assert.equal(await store.ping(), true);
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'chats')), []);
    const file = path.join(dataDir, 'a-file');
    fs.writeFileSync(file, 'x');
    assert.equal(await new FileLogBackend({ dataDir: file }).ping(), false);
  });
});
