import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { anthropicImageChat, imagePaths, openaiImageChat } from './__fixtures__/image-chats.ts';
import { imageOrdinals, ordinalOf } from './ordinals.ts';

for (const [name, build, makeView] of [
  ['openai', openaiImageChat, createOpenaiRequestView],
  ['anthropic', anthropicImageChat, createAnthropicRequestView],
] as const) {
  describe(`imageOrdinals (${name})`, () => {
    test('numbers images 1.. in the order sent, tool-result images included', () => {
      const ordinals = imageOrdinals(makeView(build()));
      assert.deepEqual(
        imagePaths[name].map((path) => ordinalOf(ordinals, { path })),
        [1, 2, 3, 4],
      );
      assert.equal(ordinalOf(ordinals, { path: ['messages', 0] }), undefined);
    });

    test('ordinals taken before a replacement still name the later images by their sent position', () => {
      const body = build();
      const view = makeView(body);
      const ordinals = imageOrdinals(view);
      view.images()[0]!.replaceWithText('[note]');
      const left = makeView(body).images();
      assert.equal(left.length, 3);
      assert.deepEqual(
        left.map((image) => ordinalOf(ordinals, image)),
        [2, 3, 4],
      );
      // Counting again after the replacement would renumber them: that is why ordinals come first.
      assert.deepEqual(
        left.map((image) => ordinalOf(imageOrdinals(makeView(body)), image)),
        [1, 2, 3],
      );
    });
  });
}
