import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ChatLog } from '../chat-log/chat-log.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { AttachmentStore } from '../chat-log/attachments.ts';
import { ManualClock } from '../lib/clock.ts';
import { T0, request, say } from '../chat-log/test-batches.ts';
import type { NewEvent } from '../chat-log/format/current.ts';
import { appendInTurns, approxChars } from './append-in-turns.ts';
import { TurnTaker } from '../lib/in-turns.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

function setup() {
  const dataDir = tempDir('oda-turns-');
  const clock = new ManualClock(T0);
  const backend = new FileLogBackend({ dataDir, clock });
  const log = new ChatLog({
    backend,
    attachments: new AttachmentStore({ dir: path.join(dataDir, 'attachments') }),
    clock,
    build: 'test',
  });
  return { log };
}

describe('appendInTurns', () => {
  test('a long batch lands whole and in order, read models included, over several turns', async () => {
    const { log } = setup();
    await log.createChat({ id: 'long' });
    const events: NewEvent[] = Array.from({ length: 1203 }, (_, i) => say(`m${i}`, i % 2 ? 'model' : 'user'));
    events.push(request({ stream: false }));
    let turns = 0;
    let counting = true;
    const tick = () => {
      if (!counting) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    await appendInTurns(log, 'long', events, 0, new TurnTaker(), { events: 100, chars: 1 << 20 });
    counting = false;
    const stored = await log.read('long');
    assert.equal(stored.length, 1204);
    assert.deepEqual(
      stored.map((e) => e.seq),
      stored.map((_, i) => i),
    );
    assert.equal(stored.at(-1)!.type, 'request');
    const state = await log.open('long');
    assert.equal(state!.messages.messages.length, 1203, 'the read models followed every slice');
    assert.ok(turns >= 13, `the event loop turned between slices (${turns} turns)`);
  });

  test('a value the log refuses, even in the last slice, stores nothing', async () => {
    const { log } = setup();
    await log.createChat({ id: 'refused' });
    const events: NewEvent[] = Array.from({ length: 350 }, (_, i) => say(`m${i}`));
    events.push(request({ temperature: -0 }));
    await assert.rejects(
      appendInTurns(log, 'refused', events, 0, undefined, { events: 100, chars: 1 << 20 }),
      /negative zero/,
    );
    assert.equal((await log.read('refused')).length, 0);
  });

  test('large events are sliced by their text, not only by their count', async () => {
    const { log } = setup();
    await log.createChat({ id: 'big' });
    const events: NewEvent[] = Array.from({ length: 12 }, (_, i) => say(`${i}:${'x'.repeat(100_000)}`));
    await appendInTurns(log, 'big', events, 0, undefined, { events: 500, chars: 250_000 });
    const stored = await log.read('big');
    assert.equal(stored.length, 12);
    assert.equal(approxChars('abc'), 3);
    assert.ok(approxChars(events[0]) > 100_000);
  });

  test('a short batch is one append', async () => {
    const { log } = setup();
    await log.createChat({ id: 'short' });
    await appendInTurns(log, 'short', [say('hi'), request({})], 0);
    assert.equal((await log.read('short')).length, 2);
  });
});

describe('TurnTaker', () => {
  test('one taker resumes per turn of the event loop, in order', async () => {
    const turns = new TurnTaker();
    const order: string[] = [];
    let tick = 0;
    let ticking = true;
    const count = () => {
      tick++;
      if (ticking) setImmediate(count);
    };
    setImmediate(count);
    await Promise.all(
      ['a', 'b', 'c'].map(async (name) => {
        await turns.take();
        order.push(`${name}@${tick}`);
      }),
    );
    ticking = false;
    const ticks = order.map((o) => Number(o.split('@')[1]));
    assert.deepEqual(
      order.map((o) => o[0]),
      ['a', 'b', 'c'],
    );
    assert.ok(ticks[0]! < ticks[1]! && ticks[1]! < ticks[2]!, `each on its own turn: ${order.join(' ')}`);
  });

  test('turns go round robin between parties, first come first served within one', async () => {
    const turns = new TurnTaker();
    const order: string[] = [];
    const take = (party: string | undefined, name: string) => turns.take(party).then(() => order.push(name));
    // Team a queues six heavy stages, then team b two and an admin one.
    const all = [
      ...['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((n) => take('a', n)),
      take('b', 'b1'),
      take('b', 'b2'),
      take(undefined, 'admin1'),
    ];
    await Promise.all(all);
    assert.deepEqual(order, ['a1', 'b1', 'admin1', 'a2', 'b2', 'a3', 'a4', 'a5', 'a6']);
  });

  test('a party arriving later waits one turn per party ahead, not one per waiting request', async () => {
    const turns = new TurnTaker();
    const order: string[] = [];
    const a = Array.from({ length: 32 }, (_, i) =>
      turns
        .for('a')
        .take()
        .then(() => order.push(`a${i}`)),
    );
    // Team b asks once a has had a few turns, with 29 of a's requests still waiting.
    await Promise.all(a.slice(0, 3));
    const b = turns
      .for('b')
      .take()
      .then(() => order.push('b'));
    await Promise.all([...a, b]);
    assert.equal(order.indexOf('b'), 4, order.join(' '));
  });
});
