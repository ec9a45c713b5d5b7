import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream, bodies } from '../fake-provider/fake-bodies.ts';

describe('Anthropic Messages through the gateway (official SDK)', () => {
  let gw: TestGateway;
  let client: Anthropic;
  before(async () => {
    gw = await startGateway();
    client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
  });
  after(() => gw.close());
  beforeEach(() => gw.fake.reset());

  test('non-streamed answer; headers, cache_control and unknown fields pass unchanged', async () => {
    const params = {
      model: 'claude-test',
      max_tokens: 100,
      system: [
        {
          type: 'text' as const,
          text: 'Be brief.',
          cache_control: { type: 'ephemeral' as const, ttl: '1h' as const },
        },
      ],
      messages: [{ role: 'user' as const, content: 'Hi' }],
    };
    const msg = await client.messages.create(params, {
      headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' },
    });
    assert.equal(msg.content[0]!.type, 'text');
    assert.equal((msg.content[0] as Anthropic.TextBlock).text, 'Hello from the fake provider.');
    const got = gw.fake.requestsTo('/v1/messages');
    assert.equal(got.length, 1);
    assert.deepEqual(got[0]!.json, params);
    assert.match(String(got[0]!.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(got[0]!.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
    // Pass-through: the client's credential (x-api-key or Bearer, by SDK version) goes upstream as sent.
    const sent = got[0]!.headers['x-api-key'] ?? got[0]!.headers.authorization;
    assert.ok(
      sent === 'sk-ant-client' || sent === 'Bearer sk-ant-client',
      `credential forwarded: ${String(sent)}`,
    );
  });

  test('beta endpoint keeps its query; anthropic-version passes as sent', async () => {
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'files-api-2025-04-14',
      },
      body: JSON.stringify({
        model: 'claude-test',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'beta' }],
      }),
    });
    assert.equal(res.status, 200);
    const got = gw.fake.requests.filter((r) => r.path.startsWith('/v1/messages'));
    assert.equal(got[0]!.path, '/v1/messages?beta=true');
    assert.equal(got[0]!.headers['anthropic-version'], '2023-06-01');
    assert.equal(got[0]!.headers['anthropic-beta'], 'files-api-2025-04-14');
  });

  test('streamed events arrive with their names, ping included, byte for byte', async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-test',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 's' }],
      }),
    });
    const text = await res.text();
    const expected = anthropicStream('claude-test', ['Hello', ' from', ' the', ' fake', ' provider.'])
      .map((e) => `event: ${e.event}\ndata: ${e.data}\n\n`)
      .join('');
    assert.equal(text, expected);
  });

  test('a stream the provider closes before message_stop reaches the client as sent and is logged incomplete', async () => {
    const events = anthropicStream('claude-test', ['part', 'ial']).slice(0, 4);
    gw.fake.script({ sse: events });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'cut-stream' },
      body: JSON.stringify({
        model: 'claude-test',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'cut' }],
      }),
    });
    assert.equal(await res.text(), events.map((e) => `event: ${e.event}\ndata: ${e.data}\n\n`).join(''));
    const log = (await (await fetch(`${gw.url}/v1/sessions/cut-stream/events`)).json()) as {
      events: Array<{ type: string; ok?: boolean; error?: string }>;
    };
    const response = log.events.find((e) => e.type === 'response');
    assert.equal(response?.ok, false);
    assert.equal(response?.error, 'stream ended before completion');
  });

  test('the SDK stream helper assembles the streamed message', async () => {
    const stream = client.messages.stream({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'sdk stream' }],
    });
    const final = await stream.finalMessage();
    assert.equal((final.content[0] as Anthropic.TextBlock).text, 'Hello from the fake provider.');
    assert.equal(final.stop_reason, 'end_turn');
  });

  test('529 overloaded is retried', async () => {
    gw.fake.script({ status: 529, json: bodies.anthropicOverloaded() });
    const msg = await client.messages.create({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'o' }],
    });
    assert.equal(msg.type, 'message');
    assert.equal(gw.fake.requestsTo('/v1/messages').length, 2);
  });

  test('a final refusal reaches the SDK as its own error type', async () => {
    gw.fake.script({ status: 400, json: bodies.anthropicPromptTooLong(300000, 200000) });
    await assert.rejects(
      client.messages.create({
        model: 'claude-test',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'too long' }],
      }),
      (e: unknown) => e instanceof Anthropic.BadRequestError && /prompt is too long/.test(e.message),
    );
  });

  test('gateway errors use the Anthropic error shape', async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'not json',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /not valid JSON/);
  });

  test('count_tokens is forwarded', async () => {
    const r = await client.messages.countTokens({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'count me' }],
    });
    assert.equal(typeof r.input_tokens, 'number');
    assert.equal(gw.fake.requestsTo('/v1/messages/count_tokens').length, 1);
  });
});
