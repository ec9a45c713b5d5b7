import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { anthropicImageChat, at, imagePaths, openaiImageChat } from './__fixtures__/image-chats.ts';
import { chooseImagesToSetAside } from './choose-images.ts';
import { imageKey } from '../../lib/image-key.ts';
import { imageOrdinals } from './ordinals.ts';
import { replaySetAside } from './replay-set-aside.ts';
import { setAsideImages } from './set-aside-images.ts';

const formats = [
  ['openai', openaiImageChat, createOpenaiRequestView],
  ['anthropic', anthropicImageChat, createAnthropicRequestView],
] as const;

for (const [name, build, makeView] of formats) {
  const paths = imagePaths[name];

  describe(`replaySetAside (${name})`, () => {
    test('a resent history carries the recorded notes byte for byte', () => {
      const first = build();
      const view = makeView(first);
      const chosen = chooseImagesToSetAside(view, { kind: 'image-limit', count: { sent: 4, max: 1 } });
      const decisions = setAsideImages(view, chosen, imageOrdinals(view), () => ({
        path: 'data/attachments/x.png',
      }));
      assert.equal(decisions.length, 3);
      const resent = build();
      assert.equal(replaySetAside(makeView(resent), decisions), 3);
      assert.equal(JSON.stringify(resent), JSON.stringify(first));
    });

    test('the note goes where the image was, whatever the decision order, and only there', () => {
      const body = build();
      const key3 = imageKey(makeView(body).images()[2]!.source);
      assert.equal(replaySetAside(makeView(body), [{ key: key3, note: '[three]' }]), 1);
      const part = at(body, paths[2]) as Record<string, unknown>;
      assert.deepEqual(part, { type: 'text', text: '[three]' });
      const untouched = build();
      for (const i of [0, 1, 3]) assert.deepEqual(at(body, paths[i]!), at(untouched, paths[i]!));
    });

    test('keeps the cache_control marker of a replaced image', () => {
      const body = build();
      const view = makeView(body);
      const key1 = imageKey(view.images()[0]!.source);
      replaySetAside(view, [{ key: key1, note: '[one]' }]);
      const before = at(build(), paths[0]) as Record<string, unknown>;
      const after = at(body, paths[0]) as Record<string, unknown>;
      assert.equal(after.text, '[one]');
      assert.deepEqual(after.cache_control, before.cache_control);
    });

    test('the first decision for a key wins', () => {
      const body = build();
      const key1 = imageKey(makeView(body).images()[0]!.source);
      replaySetAside(makeView(body), [
        { key: key1, note: '[first]' },
        { key: key1, note: '[second]' },
      ]);
      assert.equal((at(body, paths[0]) as Record<string, unknown>).text, '[first]');
    });

    test('unknown keys and no decisions change nothing', () => {
      const body = build();
      const view = makeView(body);
      assert.equal(replaySetAside(view, []), 0);
      assert.equal(replaySetAside(view, [{ key: 'f'.repeat(64), note: '[x]' }]), 0);
      assert.equal(JSON.stringify(body), JSON.stringify(build()));
      assert.equal(view.changed, false);
    });

    test('replaying twice replaces nothing more', () => {
      const body = build();
      const view = makeView(body);
      const decisions = view.images().map((image) => ({ key: imageKey(image.source), note: '[gone]' }));
      assert.equal(replaySetAside(view, decisions), 4);
      const once = JSON.stringify(body);
      assert.equal(replaySetAside(makeView(body), decisions), 0);
      assert.equal(JSON.stringify(body), once);
    });
  });
}
