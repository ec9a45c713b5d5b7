import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ChatLog } from './chat-log.ts';
import { FileLogBackend } from './store-file.ts';
import { AttachmentStore } from './attachments.ts';
import { ManualClock } from '../lib/clock.ts';
import { isOdaError } from '../lib/errors.ts';
import { T0, say } from './test-batches.ts';
import { savingsModel } from './read-models/savings.ts';
import { messagesModel } from './read-models/messages.ts';
import { saveCheckpoint } from './checkpoints.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

function setup(opts: { checkpointEvery?: number } = {}) {
  const dataDir = tempDir('oda-chatlog-');
  const clock = new ManualClock(T0);
  const backend = new FileLogBackend({ dataDir, clock });
  const attachments = new AttachmentStore({ dir: path.join(dataDir, 'attachments') });
  const log = new ChatLog({ backend, attachments, clock, build: 'test', ...opts });
  return { dataDir, clock, backend, attachments, log };
}

const refusal = (status: number, message: string) => (err: unknown) => {
  assert.ok(isOdaError(err), `expected an OdaError, got ${String(err)}`);
  assert.equal(err.status, status);
  assert.equal(err.message, message);
  return true;
};

describe('ChatLog.createChat', () => {
  test('fills version and createdAt, keeps the given metadata, answers exists the second time', async () => {
    const { log } = setup();
    const created = await log.createChat({
      id: 'c1',
      cwd: '/work',
      origin: 'agent',
      depth: 1,
      preset: undefined,
    });
    assert.deepEqual(created, {
      status: 'created',
      header: { version: 5, id: 'c1', createdAt: T0, cwd: '/work', origin: 'agent', depth: 1 },
    });
    const again = await log.createChat({ id: 'c1', cwd: '/elsewhere' });
    assert.equal(again.status, 'exists');
    assert.equal(again.header.cwd, '/work', 'the existing header is returned untouched');
  });

  test("refuses bad headers with the seed's exact messages", async () => {
    const { log } = setup();
    await assert.rejects(log.createChat({ id: 7 }), refusal(400, 'id must be a string'));
    await assert.rejects(
      log.createChat({ id: 'c', createdAt: -1 }),
      refusal(400, 'session metadata createdAt must be a non-negative safe integer'),
    );
    await assert.rejects(
      log.createChat({ id: 'c', cwd: 'relative/dir' }),
      refusal(400, 'cwd must be absolute'),
    );
    await assert.rejects(
      log.createChat({ id: 'c', origin: { nested: new Map() } }),
      refusal(400, 'session metadata must be losslessly JSON-serializable'),
    );
    await assert.rejects(
      log.createChat({ id: '../x' }),
      (err: unknown) => isOdaError(err) && err.status === 400,
    );
    assert.deepEqual(await log.list(), []);
  });

  test('a branched chat is seeded with the shared events and says so in its header', async () => {
    const { log } = setup();
    await log.createChat({ id: 'parent' });
    await log.append('parent', [say('a'), say('b', 'model'), say('c')]);
    const shared = await log.read('parent', 0, 2);
    const { header } = await log.createChat({ id: 'child', parent: 'parent' }, shared);
    assert.equal(header.seeded, true);
    assert.equal(header.inheritedEvents, 2);
    const child = await log.open('child');
    assert.equal(child?.position, 1);
    assert.deepEqual(
      child?.messages.messages.map((m) => m.digest),
      (await log.open('parent'))?.messages.messages.slice(0, 2).map((m) => m.digest),
    );
  });
});

describe('ChatLog.open, append and snapshot', () => {
  test('read models follow appends; the snapshot holds public models only', async () => {
    const { log, clock } = setup();
    await log.createChat({ id: 'c' });
    assert.deepEqual(await log.snapshot('c'), {
      position: -1,
      values: {
        'cache-clock': { lastCacheTouchAt: null, lastPruning: null },
        totals: {
          messageCount: 0,
          requestCount: 0,
          responseCount: 0,
          failedResponseCount: 0,
          inputTokens: 0,
          outputTokens: 0,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          lastActivityAt: null,
        },
        savings: savingsModel.view!(savingsModel.initial()),
      },
    });
    const before = await log.open('c');
    clock.advance(1000);
    await log.append('c', [
      say('hi'),
      {
        type: 'request',
        requestId: 'r1',
        format: 'openai',
        provider: 'p',
        model: 'm',
        settings: {},
        tools: [],
      },
      {
        type: 'response',
        requestId: 'r1',
        startedAt: T0 + 900,
        status: 200,
        ok: true,
        attempts: 1,
        latencyMs: 100,
        usage: { inputTokens: 12, outputTokens: 3 },
      },
      say('hello', 'model'),
    ]);
    const after = await log.open('c');
    assert.equal(before?.position, -1, 'a state handed out earlier never changes');
    assert.equal(after?.position, 3);
    assert.equal(after?.count, 4);
    assert.equal(after?.cacheClock.lastCacheTouchAt, T0 + 900);
    assert.equal(after?.totals.inputTokens, 12);
    // A 2xx answer's usage, by kind (an OpenAI-format request: no cached tokens here).
    assert.deepEqual(after?.savings.tokens, {
      input: 12,
      cacheWrite: 0,
      cacheWrite1h: 0,
      cacheRead: 0,
      output: 3,
    });
    assert.deepEqual(
      after?.messages.messages.map((m) => [m.seq, m.role]),
      [
        [0, 'user'],
        [3, 'model'],
      ],
    );
    const snap = await log.snapshot('c');
    assert.equal(snap.position, 3);
    assert.deepEqual(Object.keys(snap.values).sort(), ['cache-clock', 'savings', 'totals']);
  });

  test('missing chats: open is undefined, snapshot and withChat are 404', async () => {
    const { log } = setup();
    assert.equal(await log.open('nope'), undefined);
    await assert.rejects(log.snapshot('nope'), refusal(404, 'no chat with id "nope"'));
    await assert.rejects(
      log.withChat('nope', async () => 1),
      refusal(404, 'no chat with id "nope"'),
    );
  });

  test('a second ChatLog over the same backend (another replica) catches up with events it did not append', async () => {
    const { log, backend, attachments, clock } = setup();
    const other = new ChatLog({ backend, attachments, clock, build: 'test' });
    await log.createChat({ id: 'c' });
    await log.append('c', [say('one')]);
    assert.equal((await other.open('c'))?.totals.messageCount, 1);
    await log.append('c', [say('two'), say('three')]);
    const seen = await other.open('c');
    assert.equal(seen?.totals.messageCount, 3);
    assert.equal(seen?.position, 2);
    await other.append('c', [say('four')]);
    assert.equal((await log.open('c'))?.messages.messages.length, 4);
  });

  test('chats dropped from memory (least recently used) come back from their checkpoint and log, correct', async () => {
    const { backend, attachments, clock, dataDir } = setup();
    const log = new ChatLog({ backend, attachments, clock, build: 'test', maxCachedChats: 1 });
    await log.createChat({ id: 'a' });
    await log.createChat({ id: 'b' });
    await log.open('a');
    await log.append('a', [say('a1'), say('a2')]);
    await log.open('b'); // drops a, checkpointing it
    await log.checkpointsSaved();
    assert.ok(fs.existsSync(path.join(dataDir, 'checkpoints', 'a', 'totals.v2.json')));
    await log.append('a', [say('a3')]); // a is not in memory: appended to the log only
    await log.append('b', [say('b1')]);
    assert.equal((await log.open('a'))?.totals.messageCount, 3);
    assert.equal((await log.open('b'))?.totals.messageCount, 1);
  });

  test('a chat checkpointed by an older messages model loses that checkpoint once the current one is saved', async () => {
    const { dataDir, clock, attachments, log } = setup();
    await log.createChat({ id: 'old' });
    await log.append('old', [say('o1'), say('o2')]);
    await log.close();
    // What a build whose messages model was one version older left beside the log (in place of
    // what this one saved on close).
    fs.rmSync(path.join(dataDir, 'checkpoints'), { recursive: true });
    const earlier = new FileLogBackend({ dataDir, clock });
    const [, last] = await earlier.read('old', 0);
    const previousModel = { ...messagesModel, version: messagesModel.version - 1 };
    const state = messagesModel.initial((await earlier.header('old'))!);
    await saveCheckpoint(earlier, 'old', previousModel, 'test', state, last);
    await earlier.close();
    const dir = path.join(dataDir, 'checkpoints', 'old');
    const older = `messages.v${messagesModel.version - 1}.json`;
    assert.ok(fs.existsSync(path.join(dir, older)));

    // Opened by this build: rebuilt from the log, checkpointed on close, the older file gone.
    const reopened = new ChatLog({
      backend: new FileLogBackend({ dataDir, clock }),
      attachments,
      clock,
      build: 'test',
    });
    assert.equal((await reopened.open('old'))?.messages.messages.length, 2);
    await reopened.close();
    const files = fs.readdirSync(dir);
    assert.ok(files.includes(`messages.v${messagesModel.version}.json`), files.join());
    assert.ok(!files.includes(older), files.join());
  });

  test('withChat serialises read-compare-append of one chat', async () => {
    const { log } = setup();
    await log.createChat({ id: 'c' });
    // Each task appends only if the log does not already hold its message: with the lock, never twice.
    const task = (text: string) =>
      log.withChat('c', async (state) => {
        const digest = log.messageDigest({ role: 'user', content: [{ kind: 'text', text }] });
        if (state.messages.messages.some((m) => m.digest === digest)) return false;
        await log.append('c', [say(text)]);
        return true;
      });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => task(`m${i % 4}`)));
    assert.equal(results.filter(Boolean).length, 4);
    assert.equal((await log.open('c'))?.totals.messageCount, 4);
  });
});

describe('ChatLog.read', () => {
  async function tenEvents() {
    const s = setup();
    await s.log.createChat({ id: 'r' });
    await s.log.append(
      'r',
      Array.from({ length: 10 }, (_, i) => say(`m${i}`)),
    );
    return s.log;
  }
  const seqs = (events: { seq: number }[]) => events.map((e) => e.seq);

  test('defaults: from 0 to the end; windows; at or past the end is empty', async () => {
    const log = await tenEvents();
    assert.deepEqual(seqs(await log.read('r')), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(seqs(await log.read('r', 7)), [7, 8, 9]);
    assert.deepEqual(seqs(await log.read('r', 2, 3)), [2, 3, 4]);
    assert.deepEqual(seqs(await log.read('r', undefined, 2)), [0, 1]);
    assert.deepEqual(seqs(await log.read('r', '5', '2')), [5, 6], 'digit-only strings (query values)');
    assert.deepEqual(seqs(await log.read('r', '007', '1')), [7]);
    assert.deepEqual(await log.read('r', 10), []);
    assert.deepEqual(await log.read('r', '99999', 5), []);
    assert.deepEqual(await log.read('r', 3, 0), []);
    assert.deepEqual(await log.read('r', Number.MAX_SAFE_INTEGER), []);
  });

  const badOffsets: Array<[unknown, string]> = [
    [-1, '-1'],
    ['-1', '-1'],
    ['abc', 'abc'],
    [1.5, '1.5'],
    ['1.5', '1.5'],
    ['', ''],
    [' 1', ' 1'],
    ['1e3', '1e3'],
    ['0x10', '0x10'],
    [Number.NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [2 ** 53, '9007199254740992'],
    ['9007199254740993', '9007199254740993'],
    [null, 'null'],
    [true, 'true'],
  ];
  for (const [value, shown] of badOffsets) {
    test(`offset ${JSON.stringify(shown)} is refused with the exact message`, async () => {
      const log = await tenEvents();
      await assert.rejects(
        log.read('r', value),
        refusal(400, `read offset must be a non-negative safe integer, got ${shown}`),
      );
      await assert.rejects(
        log.read('r', 0, value),
        refusal(400, `read length must be a non-negative safe integer, got ${shown}`),
      );
    });
  }

  test('the offset is checked before the length, and both before the chat is looked up', async () => {
    const { log } = setup();
    await assert.rejects(
      log.read('nope', 'x', 'y'),
      refusal(400, 'read offset must be a non-negative safe integer, got x'),
    );
    await assert.rejects(
      log.read('nope', 0, -2),
      refusal(400, 'read length must be a non-negative safe integer, got -2'),
    );
    await assert.rejects(log.read('nope'), refusal(404, 'no chat with id "nope"'));
  });

  test('a later read never shows an older state while appends run concurrently', async () => {
    const { log } = setup();
    await log.createChat({ id: 'm' });
    let lastCount = 0;
    let lastPosition = -1;
    const reader = async () => {
      for (let i = 0; i < 60; i++) {
        const events = await log.read('m');
        assert.ok(events.length >= lastCount, `read went back from ${lastCount} to ${events.length}`);
        assert.deepEqual(
          seqs(events),
          events.map((_, k) => k),
          'always a gap-free prefix',
        );
        lastCount = events.length;
        const snap = await log.snapshot('m');
        assert.ok(
          snap.position >= lastPosition,
          `snapshot went back from ${lastPosition} to ${snap.position}`,
        );
        const totals = snap.values.totals as { messageCount: number };
        assert.equal(totals.messageCount, snap.position + 1, 'values match their position');
        lastPosition = snap.position;
      }
    };
    const writers = Array.from({ length: 30 }, (_, i) => log.append('m', [say(`w${i}`), say(`w${i}b`)]));
    await Promise.all([reader(), reader(), ...writers]);
    assert.equal((await log.read('m')).length, 60);
    assert.equal((await log.snapshot('m')).position, 59);
  });
});
