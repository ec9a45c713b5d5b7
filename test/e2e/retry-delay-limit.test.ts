/**
 * A provider that asks for a longer wait than `retries.maxDelayMs` (SPEC section 3, step 5): the
 * gateway neither waits nor retries; the client gets the provider's answer at once, retry headers
 * included and not told to stop, and its own backoff decides. Shorter asked waits are honoured.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { bodies, openaiError } from '../fake-provider/fake-bodies.ts';

const rateLimited = () => openaiError('Rate limit reached', 'rate_limit_exceeded', 'requests');

describe('retry delays asked for by the provider, against retries.maxDelayMs', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: { retries: { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8000 } },
    });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.fake.reset();
    gw.sleeps.length = 0;
  });

  const chat = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
    });

  for (const [name, headers] of [
    ['retry-after in seconds', { 'retry-after': '45' }],
    ['retry-after of an hour', { 'retry-after': '3600' }],
    ['retry-after-ms', { 'retry-after-ms': '9000', 'retry-after': '9' }],
  ] as const) {
    test(`a 429 asking for longer (${name}) goes back at once, with its retry headers`, async () => {
      gw.fake.script({ status: 429, json: rateLimited(), headers });
      const res = await chat();
      assert.equal(res.status, 429);
      assert.deepEqual(await res.json(), rateLimited());
      for (const [h, v] of Object.entries(headers)) assert.equal(res.headers.get(h), v);
      assert.equal(res.headers.get('x-should-retry'), null);
      assert.equal(res.headers.get('x-oda-attempts'), '1');
      assert.equal(gw.fake.requestsTo('/v1/chat/completions').length, 1);
      assert.deepEqual(gw.sleeps, []);
    });
  }

  test('a retry-after HTTP date further off than maxDelayMs is not waited for either', async () => {
    const when = new Date(gw.clock.now() + 30_000).toUTCString();
    gw.fake.script({ status: 529, json: bodies.anthropicOverloaded(), headers: { 'retry-after': when } });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-test',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    assert.equal(res.status, 529);
    assert.equal(res.headers.get('retry-after'), when);
    assert.equal(res.headers.get('x-should-retry'), null);
    assert.equal(res.headers.get('x-oda-attempts'), '1');
    assert.deepEqual(await res.json(), bodies.anthropicOverloaded());
    assert.equal(gw.fake.requestsTo('/v1/messages').length, 1);
    assert.deepEqual(gw.sleeps, []);
  });

  test('asked waits up to maxDelayMs are honoured as asked', async () => {
    gw.fake.script(
      { status: 429, json: rateLimited(), headers: { 'retry-after': '8' } },
      { status: 503, json: bodies.openaiServerError(), headers: { 'retry-after-ms': '1234' } },
    );
    const res = await chat();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-oda-attempts'), '3');
    assert.deepEqual(gw.sleeps, [8000, 1234]);
  });

  test('/metrics counts the retries given up, by reason', async () => {
    gw.fake.script({ status: 429, json: rateLimited(), headers: { 'retry-after': '60' } });
    assert.equal((await chat()).status, 429);
    for (let i = 0; i < 3; i++) gw.fake.script({ status: 503, json: bodies.openaiServerError() });
    assert.equal((await chat()).status, 503);
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(text, /oda_upstream_retries_given_up_total\{reason="retry-delay-too-long"\} [1-9]/);
    assert.match(text, /oda_upstream_retries_given_up_total\{reason="retries-exhausted"\} 1\n/);
  });
});
