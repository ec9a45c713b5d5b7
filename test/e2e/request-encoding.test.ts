/**
 * A client that compresses its request body (`content-encoding: gzip`, `deflate` or `br`; some SDKs
 * and agents do): the gateway reads it decoded and sends it upstream decoded, without the
 * `content-encoding` that no longer describes it (a provider that honours the header would try to
 * inflate plain JSON). A coding it cannot read is a 415 that names it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { anthropicMessage, openaiCompletion } from '../fake-provider/fake-bodies.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const ENCODE: Record<string, (b: Buffer) => Buffer> = {
  gzip: gzipSync,
  deflate: deflateSync,
  br: brotliCompressSync,
};

describe('a compressed request body', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  const routes = [
    {
      path: '/v1/chat/completions',
      body: { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] },
      reply: () => ({ json: openaiCompletion('gpt-test', 'hello') }),
      headers: {} as Record<string, string>,
    },
    {
      path: '/v1/messages',
      body: { model: 'claude-test', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      reply: () => ({ json: anthropicMessage('claude-test', 'hello') }),
      headers: { 'anthropic-version': '2023-06-01' } as Record<string, string>,
    },
    {
      path: '/v1/embeddings',
      body: { model: 'gpt-test', input: 'hi' },
      reply: () => ({ json: { object: 'list', data: [], model: 'gpt-test' } }),
      headers: {} as Record<string, string>,
    },
  ];

  for (const coding of Object.keys(ENCODE)) {
    for (const route of routes) {
      test(`${coding} on ${route.path}: decoded, and forwarded decoded without content-encoding`, async () => {
        gw.fake.script(route.reply());
        const plain = Buffer.from(JSON.stringify(route.body));
        const res = await fetch(`${gw.url}${route.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': coding, ...route.headers },
          body: new Uint8Array(ENCODE[coding]!(plain)),
        });
        assert.equal(res.status, 200, await res.clone().text());
        await res.arrayBuffer();
        const sent = gw.fake.requests.at(-1)!;
        assert.equal(sent.headers['content-encoding'], undefined);
        assert.deepEqual(sent.json, route.body);
      });
    }
  }

  test('a coding the gateway cannot read is a 415 naming it, and nothing goes upstream', async () => {
    const before = gw.fake.requests.length;
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' },
      body: new Uint8Array([0x28, 0xb5, 0x2f, 0xfd]),
    });
    assert.equal(res.status, 415);
    assert.match(
      ((await res.json()) as { error: { message: string } }).error.message,
      /"zstd" is not supported/,
    );
    assert.equal(gw.fake.requests.length, before);
  });
});
