import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway } from '../helpers/start-gateway.ts';

describe('provider keys, limits and timeouts', () => {
  test('a configured provider key replaces the client credential', async () => {
    const gw = await startGateway();
    const keyed = await startGateway({
      fakeProvider: gw.fake,
      config: {
        providers: [
          { name: 'keyed', format: 'openai', baseUrl: `${gw.fake.url}/v1`, apiKey: 'sk-provider-secret' },
        ],
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sk-client-key', maxRetries: 0 });
      await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'k' }] });
      const got = gw.fake.requestsTo('/v1/chat/completions');
      assert.equal(got[0]!.headers.authorization, 'Bearer sk-provider-secret');
    } finally {
      await keyed.close();
      await gw.close();
    }
  });

  test('a body over the limit is a 413 in the endpoint format', async () => {
    const gw = await startGateway({ config: { server: { bodyLimit: '1kb' } } });
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x'.repeat(5000) }] }),
      });
      assert.equal(res.status, 413);
      const body = (await res.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'ODA_ERR_BODY_TOO_LARGE');
      assert.equal(gw.fake.requests.length, 0);
    } finally {
      await gw.close();
    }
  });

  test('a 10 MB request with images goes through', async () => {
    const gw = await startGateway();
    try {
      const img = Buffer.alloc(2 * 1024 * 1024, 7).toString('base64');
      const body = {
        model: 'gpt-test',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              ...Array.from({ length: 4 }, () => ({
                type: 'image_url',
                image_url: { url: `data:image/png;base64,${img}` },
              })),
            ],
          },
        ],
      };
      const raw = JSON.stringify(body);
      assert.ok(raw.length > 10 * 1024 * 1024);
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: raw,
      });
      assert.equal(res.status, 200);
      assert.equal(gw.fake.requestsTo('/v1/chat/completions')[0]!.raw.length, Buffer.byteLength(raw));
    } finally {
      await gw.close();
    }
  });

  test('an upstream that never answers is a 504; an unreachable one a 502', async () => {
    const gw = await startGateway({ config: { timeouts: { firstByteMs: 200 }, retries: { maxRetries: 0 } } });
    try {
      gw.fake.script({ hang: true });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(res.status, 504);
      assert.equal(
        ((await res.json()) as { error: { code: string } }).error.code,
        'ODA_ERR_UPSTREAM_TIMEOUT',
      );
    } finally {
      await gw.close();
    }
    const dead = await startGateway({
      config: {
        providers: [{ name: 'dead', format: 'openai', baseUrl: 'http://127.0.0.1:9/v1' }],
        retries: { maxRetries: 1 },
      },
    });
    try {
      const res = await fetch(`${dead.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'dead-provider' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(res.status, 502);
      const events = (await (await fetch(`${dead.url}/v1/sessions/dead-provider/events`)).json()) as {
        events: Array<{ type: string; status?: number; ok?: boolean; attempts?: number }>;
      };
      const logged = events.events.find((e) => e.type === 'response');
      assert.deepEqual(
        [logged?.status, logged?.ok, logged?.attempts],
        [502, false, 2],
        'the status the client got',
      );
      // Connection lost is transient: the client's own backoff decides, the gateway does not say stop.
      assert.equal(res.headers.get('x-should-retry'), null);
      assert.equal(res.headers.get('x-oda-attempts'), '2');
      assert.equal(
        ((await res.json()) as { error: { code: string } }).error.code,
        'ODA_ERR_UPSTREAM_UNREACHABLE',
      );
      assert.equal(dead.sleeps.length, 1);
    } finally {
      await dead.close();
    }
  });

  test('a client that goes away mid-stream aborts the upstream request', async () => {
    const gw = await startGateway({
      fake: { chunkDelayMs: 30, streamPieces: Array.from({ length: 100 }, (_, i) => `p${i}`) },
    });
    try {
      const ac = new AbortController();
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }], stream: true }),
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      for (let i = 0; i < 100 && gw.fake.abortedStreams === 0; i++)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(gw.fake.abortedStreams, 1);
    } finally {
      await gw.close();
    }
  });
});
