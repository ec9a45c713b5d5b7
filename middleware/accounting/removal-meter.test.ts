import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { anthropicChat, openaiChat } from '../image-replay/__fixtures__/chat-builder.ts';
import { IMAGE_REMOVED_TEXT, imageReplayCleanup } from '../image-replay/index.ts';
import { IMAGE_CHARS } from '../cache-ttl-pruning/index.ts';
import { RemovalMeter, positiveRemovals, removedBy } from './removal-meter.ts';

const formats = [
  { name: 'anthropic', chat: anthropicChat, view: createAnthropicRequestView },
  { name: 'openai', chat: openaiChat, view: createOpenaiRequestView },
] as const;

const chat = [
  { user: [{ text: 'look' }, { image: 1 }], loops: [[{ text: 'x'.repeat(500) }, { image: 2 }]], reply: true },
  { user: [{ text: 'a' }], reply: true },
  { user: [{ text: 'b' }], reply: true },
  { user: [{ text: 'c' }], reply: true },
  { user: [{ text: 'now' }] },
];

for (const format of formats) {
  describe(`RemovalMeter (${format.name})`, () => {
    test('edits made while a mechanism runs are its own, weighed like the size estimate', () => {
      const view = format.view(format.chat(chat).body);
      const meter = new RemovalMeter();
      assert.equal(meter.attach(view), true);
      meter.mechanism = 'imageReplay';
      assert.equal(imageReplayCleanup(view, 3).imagesRemoved, 2);
      assert.equal(meter.removed.imageReplay, 2 * (IMAGE_CHARS - IMAGE_REMOVED_TEXT.length));
      assert.equal(meter.removed.imageSetAside, 0);
    });

    test('without a mechanism, a replaced image is set aside and a shortened text trimmed', () => {
      const view = format.view(format.chat(chat).body);
      const meter = new RemovalMeter();
      meter.attach(view);
      view.images()[0]!.replaceWithText('[note]');
      const result = view.toolResults()[0]!;
      result.texts[0]!.set('x'.repeat(100));
      // Setting the same text again is no edit.
      result.texts[0]!.set('x'.repeat(100));
      assert.deepEqual(meter.removed, {
        imageSetAside: IMAGE_CHARS - 6,
        trimming: 400,
        pruning: 0,
        imageReplay: 0,
      });
    });

    test('a view no longer reports once its listener is removed', () => {
      const view = format.view(format.chat(chat).body);
      const meter = new RemovalMeter();
      meter.attach(view);
      view.onEdit?.(undefined);
      view.images()[0]!.replaceWithText('gone');
      assert.equal(meter.removed.imageSetAside, 0);
    });
  });
}

describe('removals', () => {
  test('a longer replacement text counts against the removal; the record is never negative', () => {
    assert.equal(
      removedBy({ kind: 'text', before: 'media://inbound/a.png', after: 'a much longer note here' }),
      -2,
    );
    assert.equal(removedBy({ kind: 'text', before: '漢字', after: '' }), 8);
    assert.deepEqual(positiveRemovals({ trimming: -5, pruning: 10.4, imageSetAside: 0, imageReplay: 3 }), {
      pruning: 10,
      imageReplay: 3,
    });
  });
});
