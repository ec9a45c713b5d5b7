/**
 * What the chat log keeps of a long streamed answer: the answer assembled as it passes (a long
 * stream of small deltas is logged whole and right), and, for an answer larger than the gateway
 * logs, nothing of its content: the client still gets the stream whole, and the log's response
 * event, the call's line and `oda_answers_unrecorded_total{reason="too-large"}` say why the answer
 * is missing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream, openaiStream, type SseEvent } from '../fake-provider/fake-bodies.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { Captured } from '../helpers/captured-log.ts';
import { createLogger } from '../../server/logger.ts';

/** The bound the gateway is started with: low, so a test stream can pass it. */
const MAX_CHARS = 20_000;

const wire = (events: SseEvent[]) =>
  events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${e.data}\n\n`).join('');

/** `n` pieces of a few characters each, numbered so a piece lost or out of order shows. */
const pieces = (n: number) => Array.from({ length: n }, (_, i) => `${i % 10}ab `);

describe('a long streamed answer in the chat log', () => {
  let gw: TestGateway;
  const logs = new Captured();
  before(async () => {
    gw = await startGateway({
      config: { logLevel: 'info' },
      deps: { logger: createLogger('info', logs), maxRecordedStreamChars: MAX_CHARS },
    });
  });
  after(() => gw.close());

  async function call(path: string, chat: string, body: object): Promise<string> {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-session-id': chat,
        ...(path === '/v1/messages' ? { 'anthropic-version': '2023-06-01' } : {}),
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    return res.text();
  }
  const base = { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] };
  // The scripted streams end with the usage-only chunk, which a client gets when it asks for it.
  const chatBody = { ...base, stream_options: { include_usage: true } };
  const messagesBody = { ...base, model: 'claude-test', max_tokens: 10 };

  async function tooLarge(): Promise<number> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('oda_answers_unrecorded_total{reason="too-large"} '));
    return line ? Number(line.split(' ')[1]) : 0;
  }

  for (const [name, path, body, stream] of [
    ['Chat Completions', '/v1/chat/completions', chatBody, openaiStream('gpt-test', pieces(4000))],
    ['Messages', '/v1/messages', messagesBody, anthropicStream('claude-test', pieces(4000))],
  ] as const) {
    test(`${name}: 4,000 deltas under the bound are logged as the whole answer`, async () => {
      const chat = `long-${path.split('/').pop()}`;
      const text = pieces(4000).join('');
      assert.ok(text.length < MAX_CHARS);
      gw.fake.script({ sse: stream });
      assert.equal(await call(path, chat, body), wire(stream));
      const events = await sessionEvents(gw.url, chat);
      const answer = eventsOfType(events, 'message').filter((m) => m.role === 'model');
      assert.deepEqual(
        answer.map((m) => m.content),
        [[{ kind: 'text', text }]],
      );
      const [response] = eventsOfType(events, 'response');
      assert.equal(response?.ok, true);
      assert.equal(response?.error, undefined);
    });
  }

  const cases: Array<[string, string, object, SseEvent[]]> = [
    [
      'Chat Completions, many deltas',
      '/v1/chat/completions',
      chatBody,
      openaiStream('gpt-test', pieces(6000)),
    ],
    ['Messages, many deltas', '/v1/messages', messagesBody, anthropicStream('claude-test', pieces(6000))],
    [
      'Chat Completions, one delta longer than the bound',
      '/v1/chat/completions',
      chatBody,
      openaiStream('gpt-test', ['start ', 'x'.repeat(MAX_CHARS + 10), ' end']),
    ],
  ];
  for (const [name, path, body, stream] of cases) {
    test(`${name}: an answer over the bound reaches the client whole; the log says why it is missing`, async () => {
      const chat = `too-large-${name.replace(/\W+/g, '-')}`;
      const before = await tooLarge();
      const from = logs.text.length;
      gw.fake.script({ sse: stream });
      assert.equal(await call(path, chat, body), wire(stream), 'the client gets every byte');

      const events = await sessionEvents(gw.url, chat);
      assert.deepEqual(
        eventsOfType(events, 'message').filter((m) => m.role === 'model'),
        [],
        'no answer message: its content was not kept',
      );
      const [response] = eventsOfType(events, 'response');
      assert.equal(response?.status, 200);
      assert.equal(response?.ok, true, 'the answer itself was whole');
      assert.equal(
        response?.error,
        `answer not recorded: larger than the gateway logs (more than ${MAX_CHARS} characters)`,
      );
      assert.ok(response?.usage, 'its usage is still logged');
      assert.equal(await tooLarge(), before + 1);
      const line = logs.text
        .slice(from)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === 'model call done');
      assert.equal(line?.notRecorded, response?.error, JSON.stringify(line));
      assert.equal(line?.level, 40, 'warn');
    });
  }
});
