/**
 * Issue 5 end to end, for both wire formats: image set-aside on image-limit refusals (SPEC
 * sections 3 and 7). Real tiny PNGs (so the gateway reads their type and size), the official SDKs
 * as clients, the fake provider refusing with its real bodies; every test checks what the client
 * got and what the provider received.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { makePng } from '../../chat-log/test-images.ts';
import type { Event } from '../../chat-log/format/current.ts';
import { bodies } from '../fake-provider/fake-bodies.ts';
import { countImages, type FakeReply, type RecordedRequest } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { dig, eventsOfType, sessionEvents, withReplaced } from '../helpers/session-events.ts';
import {
  callWithSdk,
  postRaw,
  sdkErrorBody,
  sdkErrorClass,
  sdkErrorStatus,
  UPSTREAM_PATH,
  type WireName,
} from '../helpers/wire-clients.ts';

const ANSWER = 'Hello from the fake provider.';

interface Img {
  png: Buffer;
  width: number;
  height: number;
  b64: string;
  sha256: string;
}

function img(width: number, height: number): Img {
  const png = makePng(width, height);
  return {
    png,
    width,
    height,
    b64: png.toString('base64'),
    sha256: createHash('sha256').update(png).digest('hex'),
  };
}

type Part = Record<string, unknown>;
type Path = ReadonlyArray<string | number>;

/** One wire format's way of writing images, chats and image-limit refusals. */
interface ImageWire {
  wire: WireName;
  image(i: Img, extra?: Part): Part;
  text(text: string): Part;
  /** user(first) -> assistant -> user(second); the first user text names the test. */
  chat(label: string, first: Part[], second: Part[], model?: string): Record<string, unknown>;
  nextTurn(
    body: Record<string, unknown>,
    answer: string,
    userText: string,
    model: string,
  ): Record<string, unknown>;
  tooManyImages(sent: number, max: number): FakeReply;
}

const WIRES: ImageWire[] = [
  {
    wire: 'openai',
    image: (i, extra = {}) => ({
      type: 'image_url',
      image_url: { url: `data:image/png;base64,${i.b64}`, detail: 'low' },
      ...extra,
    }),
    text: (text) => ({ type: 'text', text }),
    chat: (label, first, second, model = 'vision-model') => ({
      model,
      messages: [
        { role: 'user', content: [{ type: 'text', text: `[${label}] Look at these.` }, ...first] },
        { role: 'assistant', content: 'I see them.' },
        { role: 'user', content: [{ type: 'text', text: 'And these?' }, ...second] },
      ],
      temperature: 0.5,
      x_client_extension: { keep: true },
    }),
    nextTurn: (body, answer, userText, model) => ({
      ...structuredClone(body),
      model,
      messages: [
        ...(structuredClone(body.messages) as unknown[]),
        { role: 'assistant', content: answer },
        { role: 'user', content: userText },
      ],
    }),
    tooManyImages: (sent, max) => ({ status: 400, json: bodies.openaiTooManyImages(sent, max) }),
  },
  {
    wire: 'anthropic',
    image: (i, extra = {}) => ({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: i.b64 },
      ...extra,
    }),
    text: (text) => ({ type: 'text', text }),
    chat: (label, first, second, model = 'vision-model') => ({
      model,
      max_tokens: 128,
      messages: [
        { role: 'user', content: [{ type: 'text', text: `[${label}] Look at these.` }, ...first] },
        { role: 'assistant', content: [{ type: 'text', text: 'I see them.' }] },
        { role: 'user', content: [{ type: 'text', text: 'And these?' }, ...second] },
      ],
      temperature: 0.5,
    }),
    nextTurn: (body, answer, userText, model) => ({
      ...structuredClone(body),
      model,
      messages: [
        ...(structuredClone(body.messages) as unknown[]),
        { role: 'assistant', content: [{ type: 'text', text: answer }] },
        { role: 'user', content: userText },
      ],
    }),
    tooManyImages: (sent, max) => ({ status: 400, json: bodies.anthropicTooManyImages(sent, max) }),
  },
];

/** Where the read-only copy of `i` lives. */
const copyPath = (gw: TestGateway, i: Img) => join(gw.dataDir, 'attachments', `${i.sha256}.png`);

/** Checks the note that replaced image `i` (ordinal, media type, size in pixels and bytes, copy path); returns it. */
function assertNote(gw: TestGateway, part: unknown, ordinal: number, i: Img): string {
  assert.equal(dig(part, ['type']), 'text', `image #${ordinal} became a text part`);
  const note = dig(part, ['text']);
  assert.equal(typeof note, 'string');
  const text = note as string;
  for (const piece of [
    `#${ordinal} `,
    'image/png',
    `${i.width}x${i.height}`,
    `${i.png.length} B`,
    copyPath(gw, i),
  ]) {
    assert.ok(text.includes(piece), `note of image #${ordinal} names ${piece}: ${text}`);
  }
  assert.ok(!text.includes(i.b64), 'the note does not carry the image');
  return text;
}

/** The sha256 of every image attachment in the chat's logged messages, tool results included. */
function loggedImageHashes(events: readonly Event[]): string[] {
  const out: string[] = [];
  for (const m of eventsOfType(events, 'message')) {
    for (const part of m.content) {
      if (part.kind === 'image' && part.attachment) out.push(part.attachment.sha256);
      if (part.kind === 'tool-result') {
        for (const c of part.content) if (c.kind === 'image' && c.attachment) out.push(c.attachment.sha256);
      }
    }
  }
  return out;
}

const imagesIn = (r: RecordedRequest) => countImages(r.json ?? {}).length;

for (const w of WIRES) {
  const upstream = UPSTREAM_PATH[w.wire];

  describe(`image set-aside over ${w.wire} (official SDK)`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway();
    });
    after(() => gw.close());
    beforeEach(() => {
      gw.fake.reset();
      gw.fake.options = {};
      gw.sleeps.length = 0;
    });

    test('4 images, a limit of 2: the 2 oldest become notes, then the answer; permanent on later turns', async () => {
      const imgs = [img(16, 16), img(24, 12), img(32, 20), img(40, 30)];
      gw.fake.options = { imageLimit: 2 };
      // A cache breakpoint on the oldest image stays where the client put it (Anthropic).
      const firstExtra = w.wire === 'anthropic' ? { cache_control: { type: 'ephemeral' } } : {};
      const body = w.chat(
        'four images',
        [w.image(imgs[0]!, firstExtra), w.image(imgs[1]!)],
        [w.image(imgs[2]!), w.image(imgs[3]!)],
      );
      const paths: Path[] = [
        ['messages', 0, 'content', 1],
        ['messages', 0, 'content', 2],
        ['messages', 2, 'content', 1],
        ['messages', 2, 'content', 2],
      ];

      const got = await callWithSdk(w.wire, gw, body);
      assert.equal(got.text, ANSWER);
      assert.equal(got.headers.get('x-oda-images-set-aside'), '2');
      const sent = gw.fake.requestsTo(upstream);
      assert.equal(sent.length, 2);
      assert.deepEqual(sent[0]!.json, body, 'the first attempt is the request as sent');
      assert.equal(imagesIn(sent[1]!), 2);
      const second = sent[1]!.json;
      const note1 = assertNote(gw, dig(second, paths[0]!), 1, imgs[0]!);
      const note2 = assertNote(gw, dig(second, paths[1]!), 2, imgs[1]!);
      // The 2 newest go as sent; everything else is as the client sent it.
      const expected = withReplaced(
        withReplaced(body, paths[0]!, { type: 'text', text: note1, ...firstExtra }),
        paths[1]!,
        {
          type: 'text',
          text: note2,
        },
      );
      assert.deepEqual(second, expected);

      // Read-only copies with the original bytes.
      for (const i of imgs.slice(0, 2)) {
        const p = copyPath(gw, i);
        assert.ok(readFileSync(p).equals(i.png), `copy of ${i.width}x${i.height} holds the original bytes`);
        assert.equal(statSync(p).mode & 0o777, 0o444);
      }

      // Next turn, another model, a provider without a limit: still the notes, never the images.
      gw.fake.reset();
      gw.fake.options = {};
      const next = w.nextTurn(body, got.text, 'Thanks. Anything else?', 'roomy-model');
      const turn2 = await callWithSdk(w.wire, gw, next);
      assert.equal(turn2.text, ANSWER);
      assert.equal(turn2.sessionId, got.sessionId, 'the same chat continues');
      const sent2 = gw.fake.requestsTo(upstream);
      assert.equal(sent2.length, 1);
      assert.equal(imagesIn(sent2[0]!), 2);
      assert.deepEqual(
        sent2[0]!.json,
        withReplaced(withReplaced(next, paths[0]!, { type: 'text', text: note1, ...firstExtra }), paths[1]!, {
          type: 'text',
          text: note2,
        }),
        'the same notes, byte for byte; the newer images as sent',
      );

      // The log still holds every image.
      const hashes = loggedImageHashes(await sessionEvents(gw.url, got.sessionId));
      for (const i of imgs)
        assert.ok(hashes.includes(i.sha256), `the log holds the ${i.width}x${i.height} image`);
      assert.equal(eventsOfType(await sessionEvents(gw.url, got.sessionId), 'image-set-aside').length, 2);
    });

    test('a limit of 0: every image is set aside in one round', async () => {
      const imgs = [img(5, 5), img(6, 6)];
      gw.fake.options = { imageLimit: 0 };
      const body = w.chat('limit zero', [w.image(imgs[0]!)], [w.image(imgs[1]!)]);
      const got = await callWithSdk(w.wire, gw, body);
      assert.equal(got.text, ANSWER);
      assert.equal(got.headers.get('x-oda-images-set-aside'), '2');
      const sent = gw.fake.requestsTo(upstream);
      assert.equal(sent.length, 2);
      assert.equal(imagesIn(sent[1]!), 0);
      assertNote(gw, dig(sent[1]!.json, ['messages', 0, 'content', 1]), 1, imgs[0]!);
      assertNote(gw, dig(sent[1]!.json, ['messages', 2, 'content', 1]), 2, imgs[1]!);
    });

    test('no image left to set aside: the refusal reaches the client unchanged, with its status', async () => {
      const imgs = [img(7, 7), img(8, 8)];
      // A provider that still refuses once every image is gone.
      const refusal = w.tooManyImages(2, 0);
      gw.fake.script(refusal, refusal);
      const raw = JSON.stringify(w.chat('nothing left, raw', [w.image(imgs[0]!)], [w.image(imgs[1]!)]));
      const res = await postRaw(w.wire, gw, raw);
      assert.equal(res.status, 400);
      assert.equal(
        await res.text(),
        JSON.stringify('json' in refusal ? refusal.json : undefined),
        'the provider body, byte for byte',
      );
      const sent = gw.fake.requestsTo(upstream);
      assert.equal(sent.length, 2, 'one set-aside round, then nothing left to repair');
      assert.equal(imagesIn(sent[1]!), 0);

      // The SDK sees the provider's error, in its own class.
      gw.fake.reset();
      gw.fake.script(refusal, refusal);
      let caught: unknown;
      await assert.rejects(
        callWithSdk(w.wire, gw, w.chat('nothing left, sdk', [w.image(imgs[0]!)], [w.image(imgs[1]!)])),
        (e: unknown) => {
          caught = e;
          return e instanceof sdkErrorClass(w.wire, 400);
        },
      );
      assert.equal(sdkErrorStatus(caught), 400);
      const json = 'json' in refusal ? (refusal.json as Record<string, unknown>) : {};
      assert.deepEqual(sdkErrorBody(caught), w.wire === 'openai' ? json.error : json);
      assert.deepEqual(gw.sleeps, []);
    });
  });

  describe(`image set-aside over ${w.wire}: the retry budget is not spent`, () => {
    test('with maxRetries 0 the set-aside round still happens and succeeds; no sleep', async () => {
      const gw = await startGateway({ config: { retries: { maxRetries: 0 } }, fake: { imageLimit: 2 } });
      try {
        const imgs = [img(9, 9), img(10, 10), img(11, 11), img(12, 12)];
        const body = w.chat(
          'no retry budget',
          [w.image(imgs[0]!), w.image(imgs[1]!)],
          [w.image(imgs[2]!), w.image(imgs[3]!)],
        );
        const got = await callWithSdk(w.wire, gw, body);
        assert.equal(got.text, ANSWER);
        assert.equal(got.headers.get('x-oda-images-set-aside'), '2');
        assert.equal(gw.fake.requestsTo(upstream).length, 2);
        assert.deepEqual(gw.sleeps, []);
      } finally {
        await gw.close();
      }
    });

    test('with maxRetries 1 a set-aside round and a transient retry both fit', async () => {
      const gw = await startGateway({ config: { retries: { maxRetries: 1 } }, fake: { imageLimit: 2 } });
      try {
        const imgs = [img(13, 13), img(14, 14), img(15, 15)];
        gw.fake.script(
          w.tooManyImages(3, 2),
          w.wire === 'openai'
            ? { status: 503, json: bodies.openaiServerError() }
            : { status: 529, json: bodies.anthropicOverloaded() },
        );
        const body = w.chat('repair plus retry', [w.image(imgs[0]!)], [w.image(imgs[1]!), w.image(imgs[2]!)]);
        const got = await callWithSdk(w.wire, gw, body);
        assert.equal(got.text, ANSWER);
        assert.equal(got.headers.get('x-oda-images-set-aside'), '1');
        const sent = gw.fake.requestsTo(upstream);
        assert.equal(sent.length, 3);
        assert.deepEqual(sent.map(imagesIn), [3, 2, 2]);
        assert.equal(gw.sleeps.length, 1, 'exactly one transport retry');
      } finally {
        await gw.close();
      }
    });
  });
}

describe('image set-aside: Anthropic-only shapes', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.fake.reset();
    gw.fake.options = {};
  });
  const [anthropic] = WIRES.filter((x) => x.wire === 'anthropic');
  const w = anthropic!;

  test('an image too large by itself is set aside by the path the error names, not the oldest', async () => {
    const small1 = img(4, 4);
    const large = img(600, 400);
    const small2 = img(5, 3);
    const limit = Math.max(small1.png.length, small2.png.length) + 1;
    assert.ok(large.png.length > limit, `the large image (${large.png.length} B) is over ${limit} B`);
    gw.fake.options = { maxImageBytes: limit };
    const body = w.chat('too large by itself', [w.image(small1), w.image(large)], [w.image(small2)]);
    const got = await callWithSdk('anthropic', gw, body);
    assert.equal(got.text, ANSWER);
    assert.equal(got.headers.get('x-oda-images-set-aside'), '1');
    const sent = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent.length, 2);
    // The refusal named messages.0.content.2 (the second image, not the oldest).
    const note = assertNote(gw, dig(sent[1]!.json, ['messages', 0, 'content', 2]), 2, large);
    assert.deepEqual(
      sent[1]!.json,
      withReplaced(body, ['messages', 0, 'content', 2], { type: 'text', text: note }),
    );
  });

  test('images inside a tool_result count and are set aside too', async () => {
    const x = img(20, 10);
    const a = img(21, 11);
    const b = img(22, 12);
    gw.fake.options = { imageLimit: 1 };
    const body = {
      model: 'vision-model',
      max_tokens: 64,
      messages: [
        { role: 'user', content: [{ type: 'text', text: '[tool images] Here is the design.' }, w.image(x)] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_shot', name: 'screenshot', input: { pages: 2 } }],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_shot',
              content: [{ type: 'text', text: 'two captures' }, w.image(a), w.image(b)],
            },
            { type: 'text', text: 'What changed?' },
          ],
        },
      ],
    };
    const got = await callWithSdk('anthropic', gw, body);
    assert.equal(got.text, ANSWER);
    assert.equal(got.headers.get('x-oda-images-set-aside'), '2');
    const sent = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent.length, 2);
    assert.equal(imagesIn(sent[0]!), 3);
    assert.equal(imagesIn(sent[1]!), 1);
    const noteX = assertNote(gw, dig(sent[1]!.json, ['messages', 0, 'content', 1]), 1, x);
    const noteA = assertNote(gw, dig(sent[1]!.json, ['messages', 2, 'content', 0, 'content', 1]), 2, a);
    const expected = withReplaced(
      withReplaced(body, ['messages', 0, 'content', 1], { type: 'text', text: noteX }),
      ['messages', 2, 'content', 0, 'content', 1],
      {
        type: 'text',
        text: noteA,
      },
    );
    assert.deepEqual(sent[1]!.json, expected);
    const hashes = loggedImageHashes(await sessionEvents(gw.url, got.sessionId));
    for (const i of [x, a, b]) assert.ok(hashes.includes(i.sha256));
  });

  test('an image the gateway cannot set aside (a file id): the refusal goes straight back', async () => {
    gw.fake.options = { imageLimit: 0 };
    const body = w.chat(
      'file id only',
      [{ type: 'image', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } }],
      [],
    );
    const res = await postRaw('anthropic', gw, JSON.stringify(body));
    assert.equal(res.status, 400);
    assert.equal(await res.text(), JSON.stringify(bodies.anthropicTooManyImages(1, 0)));
    assert.equal(res.headers.get('x-oda-images-set-aside'), null);
    assert.equal(gw.fake.requestsTo('/v1/messages').length, 1);
  });
});
