/**
 * A model's answer logged with its reasoning, sent back by the client without it: the same
 * message, so the conversation stays one chat (SPEC section 2: one chat per conversation). DeepSeek
 * refuses `reasoning_content` in a request and documents sending `content` only; Anthropic lets
 * earlier `thinking` blocks be left out. Before, every such turn started a branch of the last.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Event } from '../../chat-log/format/current.ts';
import type { FakeReply } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { getEvents, getJson, ofType } from '../helpers/sdk-chat-drivers.ts';

type Shape = 'openai-json' | 'openai-stream' | 'anthropic';

/** The provider's answer of turn `n`: reasoning, then the text `Answer n`. */
function answer(shape: Shape, n: number): FakeReply {
  if (shape === 'openai-json') {
    return {
      json: {
        id: `c${n}`,
        object: 'chat.completion',
        created: 1,
        model: 'deepseek-reasoner',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: `Answer ${n}`, reasoning_content: `thinking ${n}` },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
      },
    };
  }
  if (shape === 'openai-stream') {
    const chunk = (delta: unknown, finish: string | null = null) => ({
      data: JSON.stringify({
        id: `c${n}`,
        object: 'chat.completion.chunk',
        created: 1,
        model: 'deepseek-reasoner',
        choices: [{ index: 0, delta, finish_reason: finish }],
      }),
    });
    return {
      sse: [
        chunk({ role: 'assistant', content: null, reasoning_content: `thinking ${n}` }),
        chunk({ content: `Answer ${n}` }),
        chunk({}, 'stop'),
        { data: '[DONE]' },
      ],
    };
  }
  return {
    json: {
      id: `msg_${n}`,
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [
        { type: 'thinking', thinking: `thinking ${n}`, signature: `sig-${n}` },
        { type: 'text', text: `Answer ${n}` },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 5 },
    },
  };
}

async function call(gw: TestGateway, shape: Shape, messages: unknown[]): Promise<string> {
  const anthropic = shape === 'anthropic';
  const res = await fetch(`${gw.url}${anthropic ? '/v1/messages' : '/v1/chat/completions'}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(anthropic
        ? { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
        : { authorization: 'Bearer k' }),
    },
    body: JSON.stringify({
      model: anthropic ? 'claude-test' : 'deepseek-reasoner',
      ...(anthropic ? { max_tokens: 64 } : {}),
      ...(shape === 'openai-stream' ? { stream: true } : {}),
      messages,
    }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(text, /Answer \d/);
  return res.headers.get('x-session-id')!;
}

const modelMessages = (events: readonly Event[]) =>
  ofType(events, 'message')
    .filter((m) => m.role === 'model')
    .map((m) =>
      m.content.map((p) => (p.kind === 'reasoning' || p.kind === 'text' ? `${p.kind}:${p.text}` : p.kind)),
    );

describe('an answer sent back without its reasoning', () => {
  const shapes: Shape[] = ['openai-json', 'openai-stream', 'anthropic'];
  for (const shape of shapes) {
    describe(shape, () => {
      let gw: TestGateway;
      before(async () => {
        gw = await startGateway();
      });
      after(() => gw.close());

      test('continues the chat: one chat, each answer logged once with its reasoning', async () => {
        const messages: unknown[] = [{ role: 'user', content: 'turn 1' }];
        const ids: string[] = [];
        for (let n = 1; n <= 4; n++) {
          gw.fake.script(answer(shape, n));
          ids.push(await call(gw, shape, messages));
          // As DeepSeek documents (and Anthropic allows): the answer's text only, no reasoning.
          messages.push(
            { role: 'assistant', content: `Answer ${n}` },
            { role: 'user', content: `turn ${n + 1}` },
          );
        }
        assert.equal(new Set(ids).size, 1, `one chat, got ${ids.join(', ')}`);
        const { body } = await getJson<{ data: Array<{ id: string }> }>(`${gw.url}/v1/sessions`);
        assert.deepEqual(
          body.data.map((c) => c.id),
          [ids[0]],
        );
        const events = await getEvents(gw.url, ids[0]!);
        assert.deepEqual(
          modelMessages(events),
          [1, 2, 3, 4].map((n) => [`reasoning:thinking ${n}`, `text:Answer ${n}`]),
        );
      });

      test('an edited answer is still an edit: another text starts a branch', async () => {
        const first = [{ role: 'user', content: 'edit me' }];
        gw.fake.script(answer(shape, 1));
        const id = await call(gw, shape, first);
        gw.fake.script(answer(shape, 2));
        const branched = await call(gw, shape, [
          ...first,
          { role: 'assistant', content: 'Answer 1, edited' },
          { role: 'user', content: 'and?' },
        ]);
        assert.notEqual(branched, id);
      });
    });
  }
});
