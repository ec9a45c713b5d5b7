// A stateless Responses API client (the whole history in `input`) that names its chat with
// x-session-id gets exactly that chat every turn, however it sends the model's output back (SPEC
// sections 2 and 9): exactly as received, without the items' ids and statuses, as a plain
// `{role: 'assistant', content: text}` (leaving out a reasoning model's reasoning item, too), or as
// an `item_reference` to a stored response's item.
// Four turns per style through the official openai SDK: one chat, each message logged once, and
// the provider received the input exactly as the client sent it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { responsesMessage, responsesReasoning } from '../fake-provider/fake-responses.ts';

type Item = OpenAI.Responses.ResponseInputItem;
type Output = OpenAI.Responses.ResponseOutputItem;

interface Style {
  name: string;
  /** Extra request fields. */
  extra: Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming>;
  /** The fake's output items for turn `n` (ids unique per style and turn). */
  output(n: number): Record<string, unknown>[];
  /** What the client sends back of the previous response. */
  sendBack(response: OpenAI.Responses.Response): Item[];
  /** What each turn adds to the log: the question, then the answer's messages. */
  logged(n: number): string[];
}

const answer = (style: string, n: number) => `${style} answer ${n}`;

const styles: Style[] = [
  {
    name: 'as-received',
    extra: { store: false },
    output: (n) => [responsesMessage(answer('as-received', n), `msg_ar_${n}`)],
    sendBack: (r) => r.output as unknown as Item[],
    logged: (n) => [`q${n}`, answer('as-received', n)],
  },
  {
    name: 'without-ids',
    extra: { store: false, include: ['reasoning.encrypted_content'] },
    output: (n) => [
      responsesReasoning(`thinking ${n}`, `gAAAA-encrypted-${n}`, `rs_wi_${n}`),
      responsesMessage(answer('without-ids', n), `msg_wi_${n}`),
    ],
    sendBack: (r) =>
      r.output.map((item: Output) => {
        const { id: _id, status: _status, ...rest } = item as Output & { status?: unknown };
        return rest as unknown as Item;
      }),
    logged: (n) => [`q${n}`, `thinking ${n}`, answer('without-ids', n)],
  },
  {
    name: 'plain-text',
    extra: { store: false },
    output: (n) => [responsesMessage(answer('plain-text', n), `msg_pt_${n}`)],
    sendBack: (r) => [{ role: 'assistant', content: r.output_text }],
    logged: (n) => [`q${n}`, answer('plain-text', n)],
  },
  {
    // The plain pattern against a reasoning model: the reasoning item is left out, the text kept.
    name: 'plain-text-without-reasoning',
    extra: { store: false },
    output: (n) => [
      responsesReasoning(`pondering ${n}`, `gAAAA-encrypted-${n}`, `rs_pr_${n}`),
      responsesMessage(answer('plain-text-without-reasoning', n), `msg_pr_${n}`),
    ],
    sendBack: (r) => [{ role: 'assistant', content: r.output_text }],
    logged: (n) => [`q${n}`, `pondering ${n}`, answer('plain-text-without-reasoning', n)],
  },
  {
    name: 'item-reference',
    extra: {},
    output: (n) => [responsesMessage(answer('item-reference', n), `msg_ir_${n}`)],
    sendBack: (r) => r.output.map((item: Output) => ({ type: 'item_reference' as const, id: item.id! })),
    // The first answer is logged as the model's item; the references to it are recognised.
    logged: (n) => [`q${n}`, answer('item-reference', n)],
  },
];

/** The text a logged message holds: its text and reasoning parts, or its raw item's summary. */
function textOf(message: { content: ReadonlyArray<Record<string, unknown>> }): string {
  return message.content
    .map((p) => {
      if (typeof p.text === 'string') return p.text;
      const summary = (p.value as { summary?: Array<{ text: string }> } | undefined)?.summary;
      return summary?.map((s) => s.text).join('') ?? JSON.stringify(p);
    })
    .join('');
}

describe('a stateless Responses client stays in the chat its x-session-id names', () => {
  for (const style of styles) {
    describe(style.name, () => {
      let gw: TestGateway;
      before(async () => {
        gw = await startGateway();
      });
      after(() => gw.close());

      test('four turns: one chat, each message logged once, the input forwarded as sent', async () => {
        const session = `stateless-${style.name}`;
        const client = new OpenAI({
          baseURL: `${gw.url}/v1`,
          apiKey: 'sk-test',
          maxRetries: 0,
          defaultHeaders: { 'x-session-id': session },
        });
        let history: Item[] = [];
        for (let n = 1; n <= 4; n++) {
          gw.fake.script({ responses: { output: style.output(n) } });
          const input: Item[] = [...history, { role: 'user', content: `q${n}` }];
          const { data, response } = await client.responses
            .create({ model: 'gpt-5', input, ...style.extra })
            .withResponse();
          assert.equal(response.headers.get('x-session-id'), session, `turn ${n} answered from the chat`);
          assert.deepEqual(
            (gw.fake.requestsTo('/v1/responses').at(-1)!.json as { input: unknown }).input,
            JSON.parse(JSON.stringify(input)),
            `turn ${n}: the provider got the input as the client sent it`,
          );
          history = [...input, ...style.sendBack(data)];
        }

        const listed = (await (await fetch(`${gw.url}/v1/sessions`)).json()) as {
          data: Array<{ id: string }>;
        };
        assert.deepEqual(
          listed.data.map((s) => s.id),
          [session],
          'one chat, no branch',
        );
        const messages = eventsOfType(await sessionEvents(gw.url, session), 'message');
        assert.deepEqual(
          messages.map(textOf),
          [1, 2, 3, 4].flatMap((n) => style.logged(n)),
          'each message logged once, in order',
        );
        assert.equal(eventsOfType(await sessionEvents(gw.url, session), 'request').length, 4);
      });
    });
  }

  test('leaving out the reasoning is no edit, but changing the answer after it still branches', async () => {
    const gw = await startGateway();
    try {
      const session = 'stateless-edited';
      const client = new OpenAI({
        baseURL: `${gw.url}/v1`,
        apiKey: 'sk-test',
        maxRetries: 0,
        defaultHeaders: { 'x-session-id': session },
      });
      gw.fake.script({
        responses: {
          output: [responsesReasoning('hmm', 'gAAAA-x', 'rs_e'), responsesMessage('yes', 'msg_e')],
        },
      });
      await client.responses.create({
        model: 'gpt-5',
        input: [{ role: 'user', content: 'q1' }],
        store: false,
      });
      const { response } = await client.responses
        .create({
          model: 'gpt-5',
          store: false,
          input: [
            { role: 'user', content: 'q1' },
            { role: 'assistant', content: 'no' },
            { role: 'user', content: 'q2' },
          ],
        })
        .withResponse();
      const chat = response.headers.get('x-session-id') ?? '';
      assert.notEqual(chat, session, 'an edited answer is a branch');
      assert.ok(chat.startsWith(`${session}.`), chat);
    } finally {
      await gw.close();
    }
  });
});
