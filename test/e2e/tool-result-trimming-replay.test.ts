/**
 * A recorded trim keeps replaying once an image in the same tool result has become text (SPEC
 * section 5: the model never receives a second copy of the removed text). Between requests an
 * image of a trimmed result may turn into a text part: set aside after an image-limit refusal
 * (its note replayed from then on), or replaced by the image replay clean-up, which runs after the
 * replay of recorded decisions. Either moves the place of the trimmed text among the result's text
 * parts; replay must still find it. Through the official Anthropic SDK, a real gateway and the fake
 * provider.
 */
import { after, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { makePng } from '../../chat-log/test-images.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';

/** Written out here, not imported: the test states the contract independently of the code. */
const MARKER = '\n\n[... tool result middle pruned ...]\n\n';
const IMAGE_REMOVED = '[image data removed - already processed by model]';
const HEAD = 4096;
const TAIL = 1024;

type Message = Anthropic.MessageParam;
type Block = { type: string; text?: string; content?: Block[] };

/** A log dump whose middle (`MIDDLE`) is what trimming removes. */
const dump = (side: number) => 'A'.repeat(side) + 'MIDDLE' + 'Z'.repeat(side);
/** Any dump as trimmed: its first HEAD characters, the marker, its last TAIL. */
const TRIMMED = 'A'.repeat(HEAD) + MARKER + 'Z'.repeat(TAIL);

/** The first turn: a tool call answered with a screenshot and a log dump, in one tool result. */
function firstTurn(text: string): Message[] {
  const data = makePng(6, 6, 9).toString('base64');
  return [
    { role: 'user', content: 'Take a screenshot and dump the log.' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_shot', name: 'shot', input: {} }] },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_shot',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data } },
            { type: 'text', text },
          ],
        },
      ],
    },
  ];
}

/** The tool result's content blocks in a request the provider received. */
function receivedResult(json: Record<string, unknown> | undefined): Block[] {
  const blocks = (json?.messages as Array<{ content: Block[] | string }>)[2]!.content as Block[];
  return blocks[0]!.content!;
}

async function call(gw: TestGateway, session: string, model: string, messages: Message[]) {
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
  const { data, response } = await client.messages
    .create({ model, max_tokens: 64, messages }, { headers: { 'x-session-id': session } })
    .withResponse();
  return { content: data.content, headers: response.headers };
}

describe('a recorded trim keeps replaying once an image of its tool result became text', () => {
  const gateways: TestGateway[] = [];
  const start = async (config: Parameters<typeof startGateway>[0]) => {
    const gw = await startGateway(config);
    gateways.push(gw);
    return gw;
  };
  after(async () => {
    for (const gw of gateways) await gw.close();
  });
  beforeEach(() => {
    for (const gw of gateways) gw.fake.reset();
  });

  test('an image set aside after the trim: the next turn, on a roomy model, still gets the trimmed text', async () => {
    const gw = await start({ config: { models: { 'small-*': { contextWindow: 4000 } } } });
    const text = dump(6000);
    const messages = firstTurn(text);

    // Request 1 on a small model: over the compaction threshold (trimmed before the first send),
    // then refused for its image (set aside, sent again).
    gw.fake.options = { imageLimit: 0 };
    const first = await call(gw, 'replay-set-aside', 'small-a', messages);
    assert.equal(first.headers.get('x-oda-trimmed'), '1');
    assert.equal(first.headers.get('x-oda-images-set-aside'), '1');
    const sent1 = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent1.length, 2);
    const final = receivedResult(sent1[1]!.json);
    assert.equal(final.length, 2);
    assert.equal(final[0]!.type, 'text');
    assert.match(final[0]!.text!, /^\[Image #1 set aside/);
    assert.deepEqual(final[1], { type: 'text', text: TRIMMED });

    // Request 2, the next turn, on a model with room: the image is a note from the start, so the
    // trimmed text is the second text part now. It is still the trimmed text.
    gw.fake.reset();
    gw.fake.options = {};
    const next: Message[] = [
      ...messages,
      { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] },
      { role: 'user', content: 'Thanks, what now?' },
    ];
    const second = await call(gw, 'replay-set-aside', 'roomy-model', next);
    assert.equal(second.headers.get('x-oda-trimmed'), null);
    const sent2 = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent2.length, 1);
    assert.deepEqual(receivedResult(sent2[0]!.json), final, 'the same blocks the model got before');
    assert.ok(!sent2[0]!.raw.includes('MIDDLE'), 'no second copy of the removed text');

    const events = await sessionEvents(gw.url, 'replay-set-aside');
    assert.equal(eventsOfType(events, 'tool-result-trimmed').length, 1);
    assert.equal(eventsOfType(events, 'image-set-aside').length, 1);
  });

  test('an image the clean-up replaced before the trim: later requests replay it, never trim it again', async () => {
    const gw = await start({
      config: { models: { 'small-*': { contextWindow: 4000 } }, pruning: { mode: 'off' } },
    });
    const text = dump(10_000);
    // Four more turns, so the screenshot's turn is older than the 3 newest completed turns and the
    // image replay clean-up replaces its image by text.
    const messages: Message[] = firstTurn(text);
    for (let i = 0; i < 4; i++) {
      messages.push(
        { role: 'assistant', content: `Answer ${i}.` },
        { role: 'user', content: `Question ${i}?` },
      );
    }
    const expected = [
      { type: 'text', text: IMAGE_REMOVED },
      { type: 'text', text: TRIMMED },
    ];

    const sessions: Array<{ model: string; trimmed: string | null }> = [
      // The trim is made with the clean-up's text before the dump: the dump is text part 1.
      { model: 'small-a', trimmed: '1' },
      // Replay runs before the clean-up: the image is still an image, the dump is text part 0.
      { model: 'small-a', trimmed: null },
      { model: 'roomy-model', trimmed: null },
    ];
    for (const [i, { model, trimmed }] of sessions.entries()) {
      gw.fake.reset();
      const got = await call(gw, 'replay-clean-up', model, messages);
      assert.equal(got.headers.get('x-oda-trimmed'), trimmed, `request ${i + 1}`);
      const sent = gw.fake.requestsTo('/v1/messages');
      assert.equal(sent.length, 1, `request ${i + 1}`);
      assert.deepEqual(receivedResult(sent[0]!.json), expected, `request ${i + 1}`);
      assert.ok(!sent[0]!.raw.includes('MIDDLE'), `request ${i + 1}: no second copy of the removed text`);
      messages.push(
        { role: 'assistant', content: got.content as Anthropic.ContentBlockParam[] },
        { role: 'user', content: `Next ${i}.` },
      );
    }
    const trims = eventsOfType(await sessionEvents(gw.url, 'replay-clean-up'), 'tool-result-trimmed');
    assert.equal(trims.length, 1, 'one decision, not one per request');
  });
});
