import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { imageSetAsideEvent } from '../../chat-log/format/current.ts';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import type { ImageRef } from '../../providers/request-view.ts';
import {
  anthropicImageChat,
  at,
  bytesA,
  imagePaths,
  openaiImageChat,
  urlB,
  type Body,
} from './__fixtures__/image-chats.ts';
import { chooseImagesToSetAside } from './choose-images.ts';
import { imageKey } from '../../lib/image-key.ts';
import { imageOrdinals } from './ordinals.ts';
import { replaySetAside } from './replay-set-aside.ts';
import { setAsideImages, type ImageFacts } from './set-aside-images.ts';

const formats = [
  ['openai', openaiImageChat, createOpenaiRequestView],
  ['anthropic', anthropicImageChat, createAnthropicRequestView],
] as const;

/** Attachment facts as the store would give them: only image #1 has a stored copy with dimensions. */
function describe1(image: ImageRef, key: string): ImageFacts {
  return key === imageKey({ kind: 'base64', mediaType: 'image/png', data: bytesA.toString('base64') })
    ? {
        mediaType: 'image/png',
        width: 1024,
        height: 768,
        bytes: 524_288,
        path: `data/attachments/${key}.png`,
      }
    : {};
}

/** `body` with the part at `path` replaced as the view replaces an image: a text part, cache_control kept. */
function withNote(body: Body, path: ReadonlyArray<string | number>, text: string): Body {
  const parent = at(body, path.slice(0, -1)) as unknown[];
  const index = path[path.length - 1] as number;
  const old = parent[index] as Record<string, unknown>;
  parent[index] =
    'cache_control' in old
      ? { type: 'text', text, cache_control: old.cache_control }
      : { type: 'text', text };
  return body;
}

for (const [name, build, makeView] of formats) {
  const paths = imagePaths[name];

  describe(`setAsideImages (${name})`, () => {
    test('replaces the chosen images by their notes in place; nothing else changes', () => {
      const body = build();
      const view = makeView(body);
      const ordinals = imageOrdinals(view);
      const chosen = chooseImagesToSetAside(view, { kind: 'image-limit', count: { sent: 4, max: 2 } });
      const decisions = setAsideImages(view, chosen, ordinals, describe1);
      const key1 = imageKey(chosen[0]!.source);
      const note1 = `[Image #1 set aside (image/png, 1024x768, 512 KB) to fit the model's image limits. Read-only copy: data/attachments/${key1}.png]`;
      const note2 = `[Image #2 set aside to fit the model's image limits. Source: ${urlB}]`;
      assert.deepEqual(decisions, [
        { key: key1, ordinal: 1, note: note1 },
        { key: imageKey({ kind: 'url', url: urlB }), ordinal: 2, note: note2 },
      ]);
      const expected = withNote(withNote(build(), paths[0], note1), paths[1], note2);
      assert.equal(JSON.stringify(body), JSON.stringify(expected));
      assert.equal(makeView(body).images().length, 2);
    });

    test('an image inside a tool result is set aside inside it', () => {
      const body = build();
      const view = makeView(body);
      const ordinals = imageOrdinals(view);
      const chosen = chooseImagesToSetAside(view, { kind: 'image-limit', imagePath: paths[2] });
      const [decision] = setAsideImages(view, chosen, ordinals, () => ({}));
      // Without stored facts, the media type and size come from the inline image itself.
      assert.equal(
        decision!.note,
        "[Image #3 set aside (image/webp, 16 B) to fit the model's image limits.]",
      );
      assert.equal(JSON.stringify(body), JSON.stringify(withNote(build(), paths[2], decision!.note)));
      assert.equal(makeView(body).toolResults()[0]!.images.length, 0);
    });

    test('decisions map onto the image-set-aside event of the chat log', () => {
      const view = makeView(build());
      const decisions = setAsideImages(view, view.images(), imageOrdinals(view), describe1);
      assert.equal(decisions.length, 4);
      for (const d of decisions)
        imageSetAsideEvent.parse({
          ...d,
          seq: 3,
          at: 0,
          type: 'image-set-aside',
          requestId: 'req_1',
          round: 1,
        });
    });

    test('a later round keeps numbering by the request as sent', () => {
      const first = build();
      const v1 = makeView(first);
      const round1 = setAsideImages(
        v1,
        chooseImagesToSetAside(v1, { kind: 'image-limit' }),
        imageOrdinals(v1),
        describe1,
      );
      // Next request of the chat: ordinals from the body as sent, then replay, then a new refusal.
      const resent = build();
      const v2 = makeView(resent);
      const ordinals = imageOrdinals(v2);
      assert.equal(replaySetAside(v2, round1), 1);
      const round2 = setAsideImages(
        v2,
        chooseImagesToSetAside(v2, { kind: 'image-limit' }),
        ordinals,
        describe1,
      );
      assert.deepEqual(
        round2.map((d) => d.ordinal),
        [2],
      );
      assert.match(round2[0]!.note, /^\[Image #2 set aside/);
    });

    test('every copy of the same image gets the one note, so first sending and replay agree', () => {
      const body = build({ lastImage: bytesA });
      const view = makeView(body);
      const decisions = setAsideImages(view, [view.images()[0]!], imageOrdinals(view), describe1);
      assert.equal(decisions.length, 1);
      const note = decisions[0]!.note;
      assert.equal(
        JSON.stringify(body),
        JSON.stringify(withNote(withNote(build({ lastImage: bytesA }), paths[0], note), paths[3], note)),
      );
      const resent = build({ lastImage: bytesA });
      assert.equal(replaySetAside(makeView(resent), decisions), 2);
      assert.equal(JSON.stringify(resent), JSON.stringify(body));
    });

    test('ordinals from another request are refused rather than guessed', () => {
      const view = makeView(build());
      assert.throws(() => setAsideImages(view, view.images(), new Map(), describe1), /has no ordinal/);
    });
  });
}
