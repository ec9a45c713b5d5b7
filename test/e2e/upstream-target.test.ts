// The upstream URL comes from the provider's baseUrl and the route's fixed path only: a crafted
// request target cannot send the provider key (or the chat) to another host, and the client's path
// case, trailing slashes and query do not reach the provider (SPEC section 14).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';

/** Sends a raw request with any request target, as curl --request-target does. */
function rawRequest(
  base: string,
  target: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  const { hostname, port } = new URL(base);
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        method: 'POST',
        path: target,
        headers: { 'content-type': 'application/json', 'content-length': data.length, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const anthropicBody = { model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
const openaiBody = { model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] };

describe('the upstream URL cannot be steered by the request target', () => {
  let gw: TestGateway;
  // A second server stands in for the host an attacker would pick; it must never be called.
  let sink: FakeProvider;
  let fake: FakeProvider;
  before(async () => {
    sink = await new FakeProvider().start();
    fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        providers: [
          { name: 'p-anthropic', format: 'anthropic', baseUrl: fake.url, apiKey: 'sk-ant-provider-secret' },
          {
            name: 'p-openai',
            format: 'openai',
            baseUrl: `${fake.url}/v1`,
            apiKey: 'sk-openai-provider-secret',
          },
        ],
      },
    });
  });
  after(async () => {
    await gw?.close();
    await sink?.close();
    await fake?.close();
  });

  test('absolute-form targets are a 400 before anything else runs', async () => {
    const sinkHost = new URL(sink.url).host;
    for (const target of [
      'munity://x/v1/messages',
      `http://${sinkHost}/v1/messages`,
      `https://${sinkHost}/v1/messages?beta=true`,
      '*',
    ]) {
      const before = gw.fake.requests.length;
      const r = await rawRequest(gw.url, target, anthropicBody, { 'anthropic-version': '2023-06-01' });
      assert.equal(r.status, 400, `${target}: ${r.text}`);
      const body = JSON.parse(r.text) as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error', 'Anthropic error shape for an Anthropic-looking request');
      assert.match(body.error.message, /request target must be a path/);
      assert.equal(gw.fake.requests.length, before, 'the provider received nothing');
    }
    assert.equal(sink.requests.length, 0, 'the other host received nothing');
  });

  test("the client's path case, trailing slash and query do not reach the provider", async () => {
    gw.fake.requests.length = 0;
    const r1 = await rawRequest(gw.url, '/V1/CHAT/COMPLETIONS?api-version=../../admin', openaiBody);
    assert.equal(r1.status, 200, r1.text);
    const r2 = await rawRequest(gw.url, '/v1/messages/?beta=true&x=../../admin', anthropicBody);
    assert.equal(r2.status, 200, r2.text);
    const r3 = await rawRequest(gw.url, '/v1/messages?beta=false', anthropicBody);
    assert.equal(r3.status, 200, r3.text);
    assert.deepEqual(
      gw.fake.requests.map((r) => r.path),
      ['/v1/chat/completions', '/v1/messages?beta=true', '/v1/messages'],
    );
    assert.equal(gw.fake.requests[0]!.headers.authorization, 'Bearer sk-openai-provider-secret');
    assert.equal(gw.fake.requests[1]!.headers['x-api-key'], 'sk-ant-provider-secret');
    assert.equal(sink.requests.length, 0);
  });
});
