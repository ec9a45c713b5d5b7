import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import {
  anthropicChat,
  openaiChat,
  type Body,
  type BuiltChat,
  type Part,
  type Turn,
} from './__fixtures__/chat-builder.ts';
import { IMAGE_REMOVED_TEXT, imageReplayCleanup } from './image-replay-cleanup.ts';
import { MEDIA_REFERENCE_REMOVED_TEXT } from './media-references.ts';

const IMG = { type: 'text', text: IMAGE_REMOVED_TEXT };
const REF = MEDIA_REFERENCE_REMOVED_TEXT;
const messagesOf = (body: Body): Array<Record<string, unknown>> =>
  body.messages as Array<Record<string, unknown>>;
const json = (value: unknown): string => JSON.stringify(value);

const formats = [
  { name: 'openai', chat: openaiChat, view: createOpenaiRequestView },
  { name: 'anthropic', chat: anthropicChat, view: createAnthropicRequestView },
] as const;

/** Five completed turns (the second a two-step tool loop) and a current one, images and references throughout. */
const sixTurns: Turn[] = [
  {
    user: [{ text: 'first [media attached: /m/in0.png (image/png) | /m/in0.png]' }, { image: 0 }],
    reply: true,
  },
  {
    user: [{ text: 'run it' }],
    loops: [
      [{ text: 'shot at media://inbound/s1.png done' }, { image: 1 }],
      [{ text: 'again' }, { image: 2 }],
    ],
    reply: true,
  },
  { user: [{ image: 3 }, { text: '[Image: source: /tmp/t2.jpg]' }], reply: true },
  { user: [{ text: 'plain' }], reply: true },
  { user: [{ text: '[media attached 1/2: media://inbound/q.png] look' }, { image: 4 }], reply: true },
  { user: [{ image: 5 }, { text: '[media attached: /m/new.png]' }] },
];

/** The tool-result content of a message, whichever the format. */
function toolContent(message: Record<string, unknown>): unknown {
  if (message.role === 'tool') return message.content;
  const block = (message.content as Array<Record<string, unknown>>)[0]!;
  return block.content;
}

for (const format of formats) {
  describe(`imageReplayCleanup (${format.name})`, () => {
    test('keeps the 3 newest completed turns and the current one byte for byte', () => {
      const { body, turnStarts } = format.chat(sixTurns, { system: true });
      const before = structuredClone(body);
      const result = imageReplayCleanup(format.view(body));
      assert.deepEqual(result, { imagesRemoved: 3, referencesRemoved: 2 });
      const from = turnStarts[2]!;
      assert.equal(json(messagesOf(body).slice(from)), json(messagesOf(before).slice(from)));
    });

    test('replaces older images and references in user messages and tool results', () => {
      const { body, turnStarts } = format.chat(sixTurns, { system: true });
      imageReplayCleanup(format.view(body));
      const messages = messagesOf(body);
      assert.deepEqual(messages[turnStarts[0]!]!.content, [{ type: 'text', text: `first ${REF}` }, IMG]);
      // The tool loop of turn 1: both tool results cleaned, assistant tool calls as they were.
      const t1 = turnStarts[1]!;
      assert.deepEqual(toolContent(messages[t1 + 2]!), [{ type: 'text', text: `shot at ${REF} done` }, IMG]);
      assert.deepEqual(toolContent(messages[t1 + 4]!), [{ type: 'text', text: 'again' }, IMG]);
    });

    test('never touches assistant or system messages', () => {
      const { body } = format.chat(sixTurns, { system: true });
      const before = structuredClone(body);
      imageReplayCleanup(format.view(body), 0);
      const roleOf = (m: Record<string, unknown>) => m.role;
      messagesOf(body).forEach((message, i) => {
        if (roleOf(message) === 'assistant' || roleOf(message) === 'system')
          assert.deepEqual(message, messagesOf(before)[i]);
      });
      assert.deepEqual(body.system, before.system);
    });

    test('running it twice changes nothing more', () => {
      const { body } = format.chat(sixTurns, { system: true });
      imageReplayCleanup(format.view(body));
      const once = json(body);
      const view = format.view(body);
      assert.deepEqual(imageReplayCleanup(view), { imagesRemoved: 0, referencesRemoved: 0 });
      assert.equal(json(body), once);
      assert.equal(view.changed, false);
    });

    test('a tool loop counts as one turn', () => {
      // Keeping 4 turns keeps turns 1-4: the two tool calls of turn 1 do not make it two turns.
      const { body, turnStarts } = format.chat(sixTurns);
      const before = structuredClone(body);
      assert.deepEqual(imageReplayCleanup(format.view(body), 4), { imagesRemoved: 1, referencesRemoved: 1 });
      assert.equal(
        json(messagesOf(body).slice(turnStarts[1])),
        json(messagesOf(before).slice(turnStarts[1])),
      );
    });

    test('with no more completed turns than it keeps, nothing changes', () => {
      const { body } = format.chat(sixTurns.slice(2), { system: true });
      const before = json(body);
      assert.deepEqual(imageReplayCleanup(format.view(body)), { imagesRemoved: 0, referencesRemoved: 0 });
      assert.equal(json(body), before);
    });

    test('the current turn is never touched, even mid tool loop or with keepTurns 0', () => {
      const turns: Turn[] = [
        ...sixTurns.slice(0, 5),
        {
          user: [{ image: 5 }, { text: '[media attached: /m/new.png]' }],
          loops: [[{ text: 'media://inbound/z.png' }, { image: 6 }]],
        },
      ];
      const { body, turnStarts } = format.chat(turns);
      const before = structuredClone(body);
      const current = turnStarts[5]!;
      // The turn in progress holds an assistant message but is not completed: the 3 completed
      // turns before it are kept too, and only what precedes them is cleaned.
      const imagesBeforeKept = format
        .view(structuredClone(before))
        .images()
        .filter((i) => i.messageIndex < turnStarts[2]!).length;
      assert.ok(imagesBeforeKept > 0);
      assert.equal(imageReplayCleanup(format.view(body)).imagesRemoved, imagesBeforeKept);
      assert.equal(
        json(messagesOf(body).slice(turnStarts[2])),
        json(messagesOf(before).slice(turnStarts[2])),
      );
      assert.deepEqual(imageReplayCleanup(format.view(body), 0), { imagesRemoved: 2, referencesRemoved: 2 });
      assert.equal(json(messagesOf(body).slice(current)), json(messagesOf(before).slice(current)));
      assert.equal(
        format
          .view(body)
          .images()
          .filter((i) => i.messageIndex < current).length,
        0,
      );
    });
  });
}

describe('imageReplayCleanup (anthropic turn boundaries)', () => {
  test('a user message with tool results and text of its own opens a turn', () => {
    const image = (n: number) => ({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: Buffer.from(`i${n}`).toString('base64') },
    });
    const body: Body = {
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'old' }, image(0)] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'look', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [image(1)] },
            { type: 'text', text: 'and this one', cache_control: { type: 'ephemeral' } },
            image(2),
          ],
        },
        { role: 'assistant', content: 'seen' },
        { role: 'user', content: 'next' },
      ],
    };
    const before = structuredClone(body);
    // Turns: [0,1] completed, [2,3] completed, [4] current. Keeping one completed turn cleans only turn 0.
    assert.deepEqual(imageReplayCleanup(createAnthropicRequestView(body), 1), {
      imagesRemoved: 1,
      referencesRemoved: 0,
    });
    assert.deepEqual(messagesOf(body)[0]!.content, [{ type: 'text', text: 'old' }, IMG]);
    assert.equal(json(messagesOf(body).slice(1)), json(messagesOf(before).slice(1)));
  });
});

describe('imageReplayCleanup over generated chats', () => {
  const text = fc.constantFrom(
    'hello',
    'plain 😀 text',
    'see [media attached: /m/a.png (image/png) | /m/a.png]',
    '[Image: source: /tmp/x.jpg] what is it',
    'file media://inbound/abc.jpg here',
    '[media attached 1/2: media://inbound/q.png]\n[media attached 2/2: /m/b.png]',
  );
  const part: fc.Arbitrary<Part> = fc.oneof(
    text.map((t) => ({ text: t })),
    fc.nat(20).map((n) => ({ image: n })),
  );
  const parts = fc.array(part, { minLength: 1, maxLength: 3 });
  const turn: fc.Arbitrary<Turn> = fc.record({
    user: parts,
    loops: fc.array(parts, { maxLength: 2 }),
    reply: fc.boolean(),
  });
  const chats = fc.record({
    turns: fc.array(turn, { minLength: 1, maxLength: 7 }),
    keep: fc.nat(4),
    system: fc.boolean(),
  });

  /** First message index the clean-up must keep, from the chat's description alone. */
  function keptFrom(turns: Turn[], built: BuiltChat, keep: number): number {
    const last = turns.length - 1;
    // The last turn is the one in progress: never counted as completed.
    const completed = turns
      .slice(0, -1)
      .flatMap((t, i) => ((t.loops?.length ?? 0) > 0 || t.reply ? [i] : []));
    const turnIndex =
      keep === 0 ? last : completed.length < keep ? 0 : Math.min(completed[completed.length - keep]!, last);
    return built.turnStarts[turnIndex]!;
  }

  const REFERENCE = /\[media attached|\[Image: ?source:|media:\/\/inbound\//i;

  for (const format of formats) {
    test(`${format.name}: keeps the newest turns, cleans the rest, and is idempotent`, () => {
      fc.assert(
        fc.property(chats, ({ turns, keep, system }) => {
          const built = format.chat(turns, { system });
          const { body } = built;
          const before = structuredClone(body);
          const imagesBefore = format.view(structuredClone(body)).images();
          const from = keptFrom(turns, built, keep);

          const first = imageReplayCleanup(format.view(body), keep);
          const messages = messagesOf(body);
          assert.equal(json(messages.slice(from)), json(messagesOf(before).slice(from)));
          assert.equal(first.imagesRemoved, imagesBefore.filter((i) => i.messageIndex < from).length);
          assert.deepEqual(body.system, before.system);
          messages.slice(0, from).forEach((message, i) => {
            if (message.role === 'assistant' || message.role === 'system')
              assert.deepEqual(message, messagesOf(before)[i]);
            else assert.doesNotMatch(json(message.content), REFERENCE);
          });
          assert.ok(
            format
              .view(body)
              .images()
              .every((i) => i.messageIndex >= from),
          );

          const once = json(body);
          assert.deepEqual(imageReplayCleanup(format.view(body), keep), {
            imagesRemoved: 0,
            referencesRemoved: 0,
          });
          assert.equal(json(body), once);
        }),
        { numRuns: 300 },
      );
    });
  }
});
