import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { createResponsesRequestView } from '../../providers/responses/request-view.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { anthropicImageChat, imagePaths, openaiImageChat } from './__fixtures__/image-chats.ts';
import { chooseImagesToSetAside, type ImageLimitRefusal } from './choose-images.ts';

const formats = [
  ['openai', openaiImageChat, createOpenaiRequestView],
  ['anthropic', anthropicImageChat, createAnthropicRequestView],
] as const;

for (const [name, build, makeView] of formats) {
  const paths = imagePaths[name];
  const chosen = (view: RequestView, refusal: ImageLimitRefusal) =>
    chooseImagesToSetAside(view, refusal).map((image) => image.path);

  describe(`chooseImagesToSetAside (${name})`, () => {
    test('stated counts set aside enough of the oldest in one round', () => {
      const view = makeView(build());
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 4, max: 2 } }), [
        paths[0],
        paths[1],
      ]);
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 4, max: 3 } }), [paths[0]]);
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 4, max: 0 } }), [...paths]);
    });

    test('counts are never below one', () => {
      const view = makeView(build());
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 4, max: 20 } }), [paths[0]]);
    });

    test('a count the images left cannot get under sets nothing aside', () => {
      // 40 sent, 1 allowed, 4 in the view: without all 4 the provider still counts 36.
      const view = makeView(build());
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 40, max: 1 } }), []);
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 5, max: 0 } }), []);
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 5, max: 1 } }), [...paths]);
    });

    test('a provider count above what the view sees still gets there in one round', () => {
      // Sent 6 (the provider counted two images the view cannot set aside), max 3: 3 of ours go.
      const view = makeView(build());
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 6, max: 3 } }), [
        paths[0],
        paths[1],
        paths[2],
      ]);
    });

    test('counts refer to the images still sent, not to those already set aside', () => {
      const view = makeView(build());
      view.images()[0]!.replaceWithText('[set aside]');
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 3, max: 2 } }), [paths[1]]);
    });

    test('a named image is chosen when its path matches, even when it is not the oldest', () => {
      const view = makeView(build());
      assert.deepEqual(chosen(view, { kind: 'image-limit', imagePath: paths[2] }), [paths[2]]);
      assert.equal(
        chooseImagesToSetAside(view, { kind: 'image-limit', imagePath: paths[2] })[0]!.inToolResult,
        true,
      );
      assert.deepEqual(chosen(view, { kind: 'image-limit', imagePath: paths[3] }), [paths[3]]);
    });

    test('a named path that matches no image falls back to the oldest', () => {
      const view = makeView(build());
      assert.deepEqual(chosen(view, { kind: 'image-limit', imagePath: ['messages', 1, 'content', 0] }), [
        paths[0],
      ]);
      assert.deepEqual(chosen(view, { kind: 'image-limit', imagePath: [...paths[0], 'source'] }), [paths[0]]);
    });

    test('without counts or a path, the single oldest', () => {
      assert.deepEqual(chosen(makeView(build()), { kind: 'image-limit' }), [paths[0]]);
    });

    test('without counts, at least `atLeast` (the repairs double it each round); a named image alone', () => {
      const view = makeView(build());
      const atLeast = (refusal: ImageLimitRefusal, n: number) =>
        chooseImagesToSetAside(view, refusal, n).map((image) => image.path);
      assert.deepEqual(atLeast({ kind: 'image-limit' }, 2), [paths[0], paths[1]]);
      assert.deepEqual(atLeast({ kind: 'image-limit' }, 40), [...paths], 'never beyond the images left');
      assert.deepEqual(atLeast({ kind: 'image-limit' }, 0), [paths[0]], 'never below one');
      assert.deepEqual(
        atLeast({ kind: 'image-limit', imagePath: paths[2] }, 3),
        [paths[2]],
        'the refusal named one image: the older ones did nothing wrong',
      );
      assert.deepEqual(
        atLeast({ kind: 'image-limit', imagePath: ['messages', 1, 'content', 0] }, 3),
        [paths[0], paths[1], paths[2]],
        'a name that matches no image: the oldest, as many as asked',
      );
      assert.deepEqual(
        atLeast({ kind: 'image-limit', count: { sent: 4, max: 3 } }, 4),
        [paths[0]],
        'stated counts decide alone',
      );
    });

    test('nothing left to set aside gives nothing', () => {
      const view = makeView(build());
      for (const image of view.images()) image.replaceWithText('[set aside]');
      assert.deepEqual(chosen(view, { kind: 'image-limit' }), []);
      assert.deepEqual(chosen(view, { kind: 'image-limit', count: { sent: 5, max: 1 } }), []);
      assert.deepEqual(chosen(view, { kind: 'image-limit', imagePath: paths[0] }), []);
      assert.deepEqual(
        chosen(makeView({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), {
          kind: 'image-limit',
        }),
        [],
      );
    });

    test('choosing does not change the request', () => {
      const body = build();
      const view = makeView(body);
      chooseImagesToSetAside(view, { kind: 'image-limit', count: { sent: 4, max: 1 } });
      assert.deepEqual(body, build());
      assert.equal(view.changed, false);
    });
  });
}

describe('chooseImagesToSetAside (responses, computer-use screenshots)', () => {
  // A screenshot set aside leaves the placeholder image in its place: the provider still counts it.
  const png = (n: number) => `data:image/png;base64,${Buffer.from(`picture ${n}`).toString('base64')}`;
  const body = () => ({
    model: 'computer-use-preview',
    input: [
      { role: 'user', content: [{ type: 'input_image', image_url: png(0) }] },
      ...[1, 2, 3].flatMap((n) => [
        { type: 'computer_call', call_id: `call_${n}`, action: { type: 'screenshot' } },
        {
          type: 'computer_call_output',
          call_id: `call_${n}`,
          output: { type: 'computer_screenshot', image_url: png(n) },
        },
      ]),
    ],
  });
  const paths = (images: readonly { path: readonly (string | number)[] }[]) =>
    images.map((i) => i.path.join('.'));

  test('counts take only images whose setting aside lowers the count', () => {
    const view = createResponsesRequestView(body());
    assert.deepEqual(
      view.images().map((image) => image.keepsImageSlot === true),
      [false, true, true, true],
    );
    assert.deepEqual(
      paths(chooseImagesToSetAside(view, { kind: 'image-limit', count: { sent: 4, max: 3 } })),
      ['input.0.content.0'],
    );
    assert.deepEqual(
      chooseImagesToSetAside(view, { kind: 'image-limit', count: { sent: 4, max: 2 } }),
      [],
      'one countable image cannot take 4 down to 2: nothing is set aside for good in vain',
    );
  });

  test('a named screenshot (too large) and refusals without counts still take screenshots', () => {
    const view = createResponsesRequestView(body());
    assert.deepEqual(
      paths(chooseImagesToSetAside(view, { kind: 'image-limit', imagePath: ['input', 4, 'output'] })),
      ['input.4.output'],
    );
    assert.deepEqual(paths(chooseImagesToSetAside(view, { kind: 'image-limit' }, 2)), [
      'input.0.content.0',
      'input.2.output',
    ]);
  });
});
