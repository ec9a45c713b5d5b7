/**
 * How a provider's answer is relayed: a stream whatever the case of its media type, and what the
 * chat log and the call's log line say of answers that failed inside a 200 (a JSON error body, a
 * body that is not JSON, an error event) or of a stream that broke off, and why.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream, bodies, openaiStream } from '../fake-provider/fake-bodies.ts';
import type { FakeReply } from '../fake-provider/fake-provider.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';

/** A promise and the function that settles it: a stream the test holds open mid-way. */
function held(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

describe('a provider stream is relayed as it arrives', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw.close();
  });

  test(
    'a media type in capitals (Text/Event-Stream) is a stream: passed on before it ends, logged whole',
    { timeout: 20_000 },
    async () => {
      const hold = held();
      gw.fake.script({
        sse: openaiStream('gpt-test', ['Hello', ' there']),
        headers: { 'content-type': 'Text/Event-Stream; charset=UTF-8' },
        holdAfter: { events: 2, until: hold.until },
      });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
      const stream = await client.chat.completions.create(
        { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-session-id': 'caps-stream' } },
      );
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        // The provider sends the rest only once the client has had its first words: a stream held
        // whole by the gateway would never get here.
        if (text === 'Hello') hold.release();
      }
      assert.equal(text, 'Hello there');
      const events = await sessionEvents(gw.url, 'caps-stream');
      const answer = eventsOfType(events, 'message').filter((m) => m.role === 'model');
      assert.deepEqual(
        answer.map((m) => m.content),
        [[{ kind: 'text', text: 'Hello there' }]],
      );
      assert.equal(eventsOfType(events, 'response')[0]?.ok, true);
    },
  );

  test('a slow first token: the client has the status and headers before the provider sends its first event', async () => {
    const hold = held();
    gw.fake.script({
      sse: anthropicStream('claude-test', ['Late', ' words']),
      holdAfter: { events: 0, until: hold.until },
    });
    const asked = fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'slow-first-token', ...ANTHROPIC },
      body: JSON.stringify({ ...messagesBody, stream: true }),
    });
    // The provider holds its first event until the client has the headers: a gateway that kept
    // them for the first bytes would leave both waiting.
    let timer: NodeJS.Timeout | undefined;
    const res = await Promise.race([
      asked,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no headers before the first event (5 s)')), 5000);
      }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('x-session-id'), 'slow-first-token');
    hold.release();
    const text = await res.text();
    assert.match(text, /^event: message_start\n/);
    assert.match(text, /"text":"Late"/);
    assert.match(text, /event: message_stop/);
    const events = await sessionEvents(gw.url, 'slow-first-token');
    assert.equal(eventsOfType(events, 'response')[0]?.ok, true);
  });

  test('a stream broken before its first event: the client gets the status, then the cut', async () => {
    gw.fake.script({ sse: anthropicStream('claude-test', ['never']), resetAfter: 0 });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'broken-at-once', ...ANTHROPIC },
      body: JSON.stringify({ ...messagesBody, stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    await assert.rejects(res.text(), 'the body ends with the connection cut, not a clean end');
    const events = await sessionEvents(gw.url, 'broken-at-once');
    assert.equal(eventsOfType(events, 'response')[0]?.ok, false);
  });
});

interface Case {
  name: string;
  path: string;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  reply: FakeReply;
  error: string;
}

const chatBody = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] };
const messagesBody = {
  model: 'claude-test',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hi' }],
};
const ANTHROPIC = { 'anthropic-version': '2023-06-01' };

const failedAnswers: Case[] = [
  {
    name: 'Chat Completions: an error body sent with 200',
    path: '/v1/chat/completions',
    body: chatBody,
    reply: { json: { error: { message: 'The model crashed.', type: 'server_error', code: 500 } } },
    error: 'The model crashed.',
  },
  {
    name: "Chat Completions: vLLM's bare error object sent with 200",
    path: '/v1/chat/completions',
    body: chatBody,
    reply: { json: { object: 'error', message: 'Engine died.', type: 'InternalServerError', code: 500 } },
    error: 'Engine died.',
  },
  {
    name: 'Chat Completions: a body that is not JSON (a proxy page)',
    path: '/v1/chat/completions',
    body: chatBody,
    reply: { text: '<html>upstream is warming up</html>', headers: { 'content-type': 'text/html' } },
    error: "the provider's answer (HTTP 200) is not JSON",
  },
  {
    name: 'Chat Completions: an empty 200',
    path: '/v1/chat/completions',
    body: chatBody,
    reply: { text: '', headers: { 'content-type': 'application/json' } },
    error: "the provider's answer (HTTP 200) is empty",
  },
  {
    name: 'Messages: an overloaded_error body sent with 200',
    path: '/v1/messages',
    body: messagesBody,
    headers: ANTHROPIC,
    reply: { json: bodies.anthropicOverloaded() },
    error: 'Overloaded',
  },
  {
    name: 'Responses: a failed response',
    path: '/v1/responses',
    body: { model: 'gpt-test', input: 'hi', store: false },
    reply: {
      responses: {
        output: [],
        status: 'failed',
        error: { code: 'server_error', message: 'The model failed.' },
      },
    },
    error: 'The model failed.',
  },
];

describe('a 2xx answer read whole that is not an answer is logged as failed', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw.close();
  });

  for (const [i, c] of failedAnswers.entries()) {
    test(`${c.name}: the client gets it as sent, the log a failed response; the resend continues the chat`, async () => {
      const chat = `failed-whole-${i}`;
      const send = () =>
        fetch(`${gw.url}${c.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-session-id': chat, ...c.headers },
          body: JSON.stringify(c.body),
        });
      gw.fake.script(c.reply);
      const res = await send();
      const text = await res.text();
      assert.equal(res.status, 200);
      const sent = gw.fake.requests.length;
      if ('json' in c.reply) assert.deepEqual(JSON.parse(text), c.reply.json);
      if ('text' in c.reply) assert.equal(text, c.reply.text);

      const events = await sessionEvents(gw.url, chat);
      assert.deepEqual(
        eventsOfType(events, 'response').map((r) => ({ status: r.status, ok: r.ok, error: r.error })),
        [{ status: 200, ok: false, error: c.error }],
      );
      // No empty answer logged as the model's: the history the client sends again is the chat's.
      assert.deepEqual(
        eventsOfType(events, 'message').map((m) => m.role),
        ['user'],
      );
      gw.clock.advance(1000);
      const again = await send();
      await again.text();
      assert.equal(again.status, 200);
      assert.equal(gw.fake.requests.length, sent + 1);
      assert.equal(again.headers.get('x-session-id'), chat, 'the same chat goes on, not a branch');
    });
  }
});
