import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FileLogBackend } from './store-file.ts';
import { checkpointName, loadCheckpoint, olderCheckpointNames, saveCheckpoint } from './checkpoints.ts';
import { ChatLog } from './chat-log.ts';
import { AttachmentStore } from './attachments.ts';
import { totalsModel, type TotalsState } from './read-models/totals.ts';
import { chatModelKeys, chatReadModels } from './read-models/chat-read-models.ts';
import { ManualClock } from '../lib/clock.ts';
import type { Event, NewEvent } from './format/current.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const T0 = Date.UTC(2026, 0, 1);
const say = (text: string): NewEvent => ({
  type: 'message',
  role: 'user',
  content: [{ kind: 'text', text }],
});

async function chatWith(n: number) {
  const dataDir = tempDir('oda-cp-');
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id: 'c', createdAt: T0 });
  const events: Event[] = [];
  for (let i = 0; i < n; i++) events.push(...(await backend.append('c', [say(`m${i}`)], T0 + i)));
  return { dataDir, backend, events };
}

/** A state that differs from what the log gives, so a test can tell a served checkpoint apart. */
const marked = (messageCount: number): TotalsState => ({
  ...totalsModel.initial(),
  messageCount,
  lastActivityAt: 1,
});

describe('loadCheckpoint', () => {
  test('a checkpoint that fits is served', async () => {
    const { backend, events } = await chatWith(5);
    await saveCheckpoint(backend, 'c', totalsModel, 'b1', marked(777), events[3]);
    assert.deepEqual(await loadCheckpoint(backend, 'c', totalsModel, 'b1', 5), {
      ok: true,
      position: 3,
      state: marked(777),
    });
  });

  test('an empty-log checkpoint (position -1) fits', async () => {
    const { backend } = await chatWith(0);
    await saveCheckpoint(backend, 'c', totalsModel, 'b1', totalsModel.initial(), undefined);
    const loaded = await loadCheckpoint(backend, 'c', totalsModel, 'b1', 0);
    assert.deepEqual(loaded, { ok: true, position: -1, state: totalsModel.initial() });
  });

  const misses: Array<[string, string, (b: FileLogBackend, e: Event[]) => Promise<unknown>, number]> = [
    ['missing', 'no checkpoint saved', async () => undefined, 5],
    ['build', 'another build', (b, e) => saveCheckpoint(b, 'c', totalsModel, 'b0', marked(1), e[2]), 5],
    [
      'format',
      'another format version',
      (b) =>
        b.putCheckpoint('c', {
          model: checkpointName(totalsModel),
          formatVersion: 3,
          build: 'b1',
          position: 2,
          state: { anchor: null, value: marked(1) },
        }),
      5,
    ],
    [
      'ahead',
      'a log shorter than its position',
      (b, e) => saveCheckpoint(b, 'c', totalsModel, 'b1', marked(1), e[4]),
      4,
    ],
    [
      'replaced',
      'a log whose event at the position is another one',
      (b, e) => saveCheckpoint(b, 'c', totalsModel, 'b1', marked(1), { ...(e[2] as Event), at: 1 }),
      5,
    ],
    [
      'invalid',
      'a state of the wrong shape',
      (b, e) =>
        saveCheckpoint(b, 'c', totalsModel, 'b1', { messageCount: 'x' } as unknown as TotalsState, e[2]),
      5,
    ],
    [
      'missing',
      'a checkpoint of an older read model version',
      (b, e) => saveCheckpoint(b, 'c', { ...totalsModel, version: 0 }, 'b1', marked(1), e[2]),
      5,
    ],
  ];
  for (const [reason, what, prepare, count] of misses) {
    test(`ignored (${reason}): ${what}`, async () => {
      const { backend, events } = await chatWith(5);
      await prepare(backend, events);
      assert.deepEqual(await loadCheckpoint(backend, 'c', totalsModel, 'b1', count), { ok: false, reason });
    });
  }
});

describe('ChatLog cold start', () => {
  const open = (dataDir: string, build = 'b1') =>
    new ChatLog({
      backend: new FileLogBackend({ dataDir }),
      attachments: new AttachmentStore({ dir: path.join(dataDir, 'attachments') }),
      clock: new ManualClock(T0 + 100),
      build,
    });

  test('uses a fitting checkpoint and catches up only the events after it', async () => {
    const { dataDir, backend, events } = await chatWith(6);
    await saveCheckpoint(backend, 'c', totalsModel, 'b1', marked(100), events[3]);
    const state = await open(dataDir).open('c');
    // 100 from the checkpoint + the 2 events after position 3: proof the checkpoint was served.
    assert.equal(state?.totals.messageCount, 102);
    assert.equal(state?.position, 5);
    assert.equal(state?.messages.messages.length, 6, 'models without a checkpoint are rebuilt from the log');
  });

  test('rebuilds from the log when the checkpoint is of another build', async () => {
    const { dataDir, backend, events } = await chatWith(6);
    await saveCheckpoint(backend, 'c', totalsModel, 'b0', marked(100), events[3]);
    assert.equal((await open(dataDir).open('c'))?.totals.messageCount, 6);
  });

  test('rebuilds from the log when the log became shorter than the checkpoint', async () => {
    const { dataDir, backend, events } = await chatWith(6);
    await saveCheckpoint(backend, 'c', totalsModel, 'b1', marked(100), events[5]);
    // Cut the log back to 4 events (as a restore from an older copy would).
    const file = path.join(dataDir, 'chats', 'c.jsonl');
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    fs.writeFileSync(file, lines.slice(0, 5).join('\n') + '\n');
    const state = await open(dataDir).open('c');
    assert.equal(state?.totals.messageCount, 4);
    assert.equal(state?.position, 3);
  });

  test('rebuilds from the log when the chat was replaced by another of the same length', async () => {
    const { dataDir, backend, events } = await chatWith(3);
    await saveCheckpoint(backend, 'c', totalsModel, 'b1', marked(100), events[2]);
    fs.rmSync(path.join(dataDir, 'chats', 'c.jsonl'));
    const fresh = new FileLogBackend({ dataDir });
    await fresh.create({ version: 5, id: 'c', createdAt: T0 + 50 });
    for (let i = 0; i < 3; i++) await fresh.append('c', [say(`other ${i}`)], T0 + 60 + i);
    assert.equal((await open(dataDir).open('c'))?.totals.messageCount, 3);
  });

  test('checkpoints are saved every N events and on close, and reused by the next process', async () => {
    const { dataDir } = await chatWith(0);
    const log = new ChatLog({
      backend: new FileLogBackend({ dataDir }),
      attachments: new AttachmentStore({ dir: path.join(dataDir, 'attachments') }),
      clock: new ManualClock(T0),
      build: 'b1',
      checkpointEvery: 5,
    });
    await log.open('c');
    for (let i = 0; i < 7; i++) await log.append('c', [say(`m${i}`)]);
    const cpFile = path.join(dataDir, 'checkpoints', 'c', 'totals.v2.json');
    await log.checkpointsSaved();
    const saved = JSON.parse(fs.readFileSync(cpFile, 'utf8')) as { position: number };
    assert.equal(saved.position, 4, 'saved once 5 events were folded');
    await log.close();
    assert.equal((JSON.parse(fs.readFileSync(cpFile, 'utf8')) as { position: number }).position, 6);
    assert.deepEqual(
      fs.readdirSync(path.join(dataDir, 'checkpoints', 'c')).sort(),
      chatModelKeys.map((k) => `${checkpointName(chatReadModels[k])}.json`).sort(),
      'one checkpoint per read model',
    );
    // Mark the saved totals: the next process serves them (it fits), so it did not re-read the log.
    const cp = JSON.parse(fs.readFileSync(cpFile, 'utf8')) as { state: { value: TotalsState } };
    cp.state.value.messageCount = 500;
    fs.writeFileSync(cpFile, JSON.stringify(cp));
    assert.equal((await open(dataDir).open('c'))?.totals.messageCount, 500);
  });
});

test('olderCheckpointNames: the same model before this version; nothing for a name without one', () => {
  assert.deepEqual(olderCheckpointNames('messages.v3'), ['messages.v0', 'messages.v1', 'messages.v2']);
  assert.deepEqual(olderCheckpointNames('a.b.v1'), ['a.b.v0']);
  assert.deepEqual(olderCheckpointNames('totals.v0'), []);
  assert.deepEqual(olderCheckpointNames('plain'), []);
});
