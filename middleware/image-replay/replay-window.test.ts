import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { anthropicChat, openaiChat, type Turn } from './__fixtures__/chat-builder.ts';
import { replayWindow, type ReplayWindowInput } from './replay-window.ts';
import { cleanBefore, imageReplayCleanup } from './image-replay-cleanup.ts';
import { chatTurns, cutoffOfTurn, keptFromTurn, replayCutoff } from './replay-cutoff.ts';
import { cacheIsCold } from './cache-cold.ts';

/** Turn t has `images[t]` screenshots in its tool loop, and an answer. */
function turns(images: number[]): Turn[] {
  let n = 0;
  return images.map((count) => ({
    user: [{ text: `task ${n}` }],
    loops: Array.from({ length: count }, () => [{ text: 'shot' }, { image: n++ }]),
    reply: true,
  }));
}

const formats = [
  { name: 'anthropic', chat: anthropicChat, view: createAnthropicRequestView },
  { name: 'openai', chat: openaiChat, view: createOpenaiRequestView },
] as const;

for (const format of formats) {
  describe(`replayWindow (${format.name})`, () => {
    /** The window input for a chat of `images` per turn plus a current turn. */
    function input(images: number[], rest: Partial<ReplayWindowInput>) {
      const built = format.chat([...turns(images), { user: [{ text: 'now' }] }]);
      const view = format.view(built.body);
      const base: ReplayWindowInput = {
        messages: view.messages(),
        imageMessageIndexes: view.images().map((i) => i.messageIndex),
        keepTurns: 3,
        chunkImages: 10,
        recordedFrom: undefined,
        cold: false,
        ...rest,
      };
      return { base, built };
    }

    test('nothing recorded: the current window (turns from the 3rd newest completed one)', () => {
      const { base, built } = input([1, 1, 1, 1, 1], {});
      const w = replayWindow(base);
      assert.deepEqual(w, { from: 2, cutoff: built.turnStarts[2], imagesBehind: 0, reason: 'current' });
      assert.equal(w.cutoff, replayCutoff(base.messages, 3));
    });

    test('warm cache, few images behind: the recorded window stays', () => {
      const { base, built } = input([1, 2, 3, 1, 1], { recordedFrom: 0 });
      const w = replayWindow(base);
      assert.deepEqual(w, { from: 0, cutoff: 0, imagesBehind: 3, reason: 'kept' });
      const kept = replayWindow({ ...base, recordedFrom: 1 });
      assert.deepEqual(kept, { from: 1, cutoff: built.turnStarts[1], imagesBehind: 2, reason: 'kept' });
    });

    test('cold cache: the window moves to the current one', () => {
      const { base, built } = input([1, 2, 3, 1, 1], { recordedFrom: 0, cold: true });
      assert.deepEqual(replayWindow(base), {
        from: 2,
        cutoff: built.turnStarts[2],
        imagesBehind: 0,
        reason: 'cold',
      });
    });

    test('warm cache, more than chunkImages behind: the window moves', () => {
      const { base } = input([6, 5, 1, 1, 1], { recordedFrom: 0 });
      // 11 images behind the recorded window: over a chunk of 10, under one of 11.
      assert.equal(replayWindow(base).reason, 'chunk');
      assert.equal(replayWindow(base).from, 2);
      assert.equal(replayWindow({ ...base, chunkImages: 11 }).reason, 'kept');
      assert.equal(replayWindow({ ...base, chunkImages: 11 }).imagesBehind, 11);
      assert.equal(replayWindow({ ...base, chunkImages: 0 }).reason, 'chunk');
    });

    test('a recorded window past the current one (a shorter history) comes back to it', () => {
      const { base } = input([1, 1, 1, 1, 1], { recordedFrom: 9 });
      assert.deepEqual(replayWindow(base).from, 2);
      assert.equal(replayWindow(base).reason, 'current');
    });

    test('cleaning before the kept window leaves it and everything after byte for byte', () => {
      const { base, built } = input([1, 2, 3, 1, 1], { recordedFrom: 1 });
      const w = replayWindow(base);
      const before = JSON.stringify((built.body.messages as unknown[]).slice(w.cutoff));
      const r = cleanBefore(format.view(built.body), w.cutoff);
      assert.deepEqual(r, { imagesRemoved: 1, referencesRemoved: 0 });
      assert.equal(JSON.stringify((built.body.messages as unknown[]).slice(w.cutoff)), before);
    });
  });
}

describe('turn ordinals', () => {
  test('the current window named by ordinal gives the same cutoff as before', () => {
    for (const keep of [0, 1, 2, 3, 7]) {
      const built = anthropicChat([...turns([1, 0, 2, 1]), { user: [{ text: 'now' }] }]);
      const messages = createAnthropicRequestView(built.body).messages();
      const t = chatTurns(messages);
      assert.equal(cutoffOfTurn(t, keptFromTurn(t, keep)), replayCutoff(messages, keep));
    }
  });

  test('imageReplayCleanup is cleanBefore at the current window', () => {
    const a = anthropicChat([...turns([2, 1, 1, 1, 1]), { user: [{ text: 'now' }] }]);
    const b = structuredClone(a.body);
    imageReplayCleanup(createAnthropicRequestView(a.body), 3);
    cleanBefore(createAnthropicRequestView(b), a.turnStarts[2]!);
    assert.deepEqual(a.body, b);
  });
});

describe('cacheIsCold', () => {
  const t0 = 1_000_000;
  test('the pruning gate rule: strictly older than the TTL, or no clock', () => {
    assert.equal(cacheIsCold({ ttl: undefined }, undefined, undefined, t0), true);
    assert.equal(cacheIsCold({ ttl: undefined }, undefined, t0, t0 + 5 * 60_000), false);
    assert.equal(cacheIsCold({ ttl: undefined }, undefined, t0, t0 + 5 * 60_000 + 1), true);
    assert.equal(cacheIsCold({ ttl: undefined }, '1h', t0, t0 + 30 * 60_000), false);
    assert.equal(cacheIsCold({ ttl: 60_000 }, '1h', t0, t0 + 60_001), true);
  });
  test('a ttl of 0 (pruning off) still uses the markers TTL, never "always cold"', () => {
    assert.equal(cacheIsCold({ ttl: 0 }, undefined, t0, t0 + 60_000), false);
    assert.equal(cacheIsCold({ ttl: 0 }, undefined, t0, t0 + 6 * 60_000), true);
  });
});
