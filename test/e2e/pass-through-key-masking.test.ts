/**
 * A provider with no configured key takes the client's own (pass-through). A provider's answer
 * that echoes that key (an error body naming the key it refused, a header) has it masked like a
 * configured key (SPEC section 8: provider keys never appear in logs): the chat log, which anyone
 * who can read the chat sees, never holds it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const CLIENT_KEY = 'sk-proj-PASSTHROUGH-secret-123';

describe("a pass-through client's key echoed by the provider", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  for (const [format, path, headers] of [
    ['openai', '/v1/chat/completions', { authorization: `Bearer ${CLIENT_KEY}` }],
    ['anthropic', '/v1/messages', { 'x-api-key': CLIENT_KEY, 'anthropic-version': '2023-06-01' }],
  ] as const) {
    test(`${format}: masked in the answer, its headers and the chat log`, async () => {
      gw.fake.script((req) => {
        const sent = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
        return {
          status: 401,
          headers: { 'x-echo': sent },
          json: { error: { message: `Incorrect API key provided: ${sent.replace(/^Bearer /, '')}` } },
        };
      });
      const chat = `pass-through-${format}`;
      const res = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': chat, ...headers },
        body: JSON.stringify({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const text = await res.text();
      assert.equal(res.status, 401);
      assert.equal(
        gw.fake.requests.at(-1)?.headers[Object.keys(headers)[0]!],
        headers[Object.keys(headers)[0] as keyof typeof headers],
        'the key went upstream',
      );
      assert.match(text, /Incorrect API key provided: \[masked\]/);
      assert.ok(!(res.headers.get('x-echo') ?? '').includes(CLIENT_KEY), 'not in a header');
      const log = await (await fetch(`${gw.url}/v1/sessions/${chat}/events`)).text();
      assert.match(log, /"type":"response"/);
      assert.ok(!log.includes(CLIENT_KEY), `not in the chat log: ${log}`);
    });
  }
});
