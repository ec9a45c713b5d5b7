/**
 * A provider that refuses `prompt_cache_key` (SPEC sections 3 and 11), end to end: the official
 * openai SDK -> gateway -> fake providers. With prompt caching at its default (`auto`) and a
 * provider left at `cacheKey: true` (as the zero-config provider is), a compatible server that
 * validates bodies strictly refuses the key the gateway added. The gateway takes its key out and
 * sends the request again in one repair round, remembers that the provider refuses the field (later
 * requests go without it at once), warns once, and leaves every other provider and every key a
 * client set alone. Chat Completions and Responses, streamed and not, each against a server that
 * words its refusal differently.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { Captured } from '../helpers/captured-log.ts';
import { createLogger } from '../../server/logger.ts';
import { FakeProvider, type RecordedRequest } from '../fake-provider/fake-provider.ts';
import { unknownFieldRefusal, type UnknownFieldStyle } from '../fake-provider/fake-unknown-field.ts';

type Api = 'chat' | 'responses';

interface Case {
  api: Api;
  stream: boolean;
  style: UnknownFieldStyle;
  /** The status the refusing server answers. */
  status: number;
}

const CASES: Case[] = [
  { api: 'chat', stream: false, style: 'fastapi', status: 422 },
  { api: 'chat', stream: true, style: 'google', status: 400 },
  { api: 'responses', stream: false, style: 'openai', status: 400 },
  { api: 'responses', stream: true, style: 'unrecognized-argument', status: 400 },
];

const WARNING = 'refuses prompt_cache_key';
const PATHS: Record<Api, string> = { chat: '/v1/chat/completions', responses: '/v1/responses' };

/** What one SDK call produced: the client's bytes, the answer's headers and text, or the refusal. */
interface Outcome {
  clientBody: string;
  status: number;
  headers: Headers;
  text: string;
  /** The body of a refusal, as the client got it. */
  errorBody?: string;
}

/** A fetch that keeps the bytes the SDK sent, the response, and a refusal's body. */
function recordingFetch() {
  const seen: { body: string; res?: Response; errorBody?: string } = { body: '' };
  const wrapped: typeof fetch = async (input, init) => {
    seen.body = typeof init?.body === 'string' ? init.body : '';
    const res = await fetch(input, init);
    seen.res = res;
    if (res.status >= 400) seen.errorBody = await res.clone().text();
    return res;
  };
  return { fetch: wrapped, seen };
}

/** One call through the SDK, in `c.api`, streamed or not; a refusal is returned, not thrown. */
async function call(
  gw: TestGateway,
  c: Case,
  model: string,
  session: string,
  clientKey?: string,
): Promise<Outcome> {
  const rec = recordingFetch();
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'sk-test',
    maxRetries: 0,
    fetch: rec.fetch,
    defaultHeaders: { 'x-session-id': session },
  });
  const key = clientKey === undefined ? {} : { prompt_cache_key: clientKey };
  let text = '';
  try {
    if (c.api === 'chat' && !c.stream) {
      const r = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'Hi' }], ...key })
        .withResponse();
      text = r.data.choices[0]?.message.content ?? '';
    } else if (c.api === 'chat') {
      const r = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'Hi' }], stream: true, ...key })
        .withResponse();
      for await (const chunk of r.data) text += chunk.choices[0]?.delta.content ?? '';
    } else if (!c.stream) {
      const r = await client.responses.create({ model, input: 'Hi', ...key }).withResponse();
      text = r.data.output_text;
    } else {
      const r = await client.responses.create({ model, input: 'Hi', stream: true, ...key }).withResponse();
      for await (const event of r.data) if (event.type === 'response.output_text.delta') text += event.delta;
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
  }
  assert.ok(rec.seen.res, 'the SDK made no request');
  return {
    clientBody: rec.seen.body,
    status: rec.seen.res.status,
    headers: rec.seen.res.headers,
    text,
    ...(rec.seen.errorBody !== undefined ? { errorBody: rec.seen.errorBody } : {}),
  };
}

for (const c of CASES) {
  describe(`a provider that refuses prompt_cache_key: ${c.api}, ${c.stream ? 'streamed' : 'not streamed'}, answering like ${c.style}`, () => {
    let gw: TestGateway;
    let picky: FakeProvider;
    let open: FakeProvider;
    const logs = new Captured();
    const pickyCalls = (): RecordedRequest[] => picky.requestsTo(PATHS[c.api]);
    const warnings = () => logs.text.split(WARNING).length - 1;

    before(async () => {
      picky = await new FakeProvider({
        refusesFields: { fields: ['prompt_cache_key'], style: c.style },
      }).start();
      open = await new FakeProvider().start();
      gw = await startGateway({
        fakeProvider: open,
        // Prompt caching at its default (auto); both providers at theirs (cacheKey: true). The
        // bodies are compared byte for byte with the client's, so no stream-usage ask is added
        // (stream-usage.test.ts has its own refusing provider).
        config: {
          promptCaching: {},
          providers: [
            {
              name: 'picky',
              format: 'openai',
              baseUrl: `${picky.url}/v1`,
              models: ['picky-*'],
              streamUsage: 'off',
            },
            { name: 'open', format: 'openai', baseUrl: `${open.url}/v1`, models: ['*'], streamUsage: 'off' },
          ],
        },
        deps: { logger: createLogger('warn', logs) },
      });
    });
    after(async () => {
      await gw.close();
      await picky.close();
      await open.close();
    });

    test('the first request goes again without the key the gateway added, in one repair round', async () => {
      const out = await call(gw, c, 'picky-model', `${c.api}-refused-1`);
      assert.equal(out.status, 200);
      assert.equal(out.text, 'Hello from the fake provider.');
      assert.equal(out.headers.get('x-oda-attempts'), '2');
      assert.equal(out.headers.get('x-session-id'), `${c.api}-refused-1`);
      // The key did not go with the answered request, so the answer does not say it did.
      assert.equal(out.headers.get('x-oda-prompt-caching'), null);
      const [refused, resent, ...more] = pickyCalls();
      assert.equal(more.length, 0);
      assert.equal(refused?.json?.prompt_cache_key, `${c.api}-refused-1`);
      // Only the key was taken out: the client's own bytes went again.
      assert.equal(resent?.raw.toString('utf8'), out.clientBody);
      assert.equal(out.clientBody.includes('prompt_cache_key'), false);
      // A repair round, not a transport retry: no backoff was waited for.
      assert.deepEqual(gw.sleeps, []);
      assert.equal(warnings(), 1);
      assert.match(logs.text, /providers\[\]\.promptCaching\.cacheKey: false/);
      assert.match(logs.text, /"provider":"picky"/);
    });

    test('later requests to that provider go without the key at once', async () => {
      picky.reset();
      for (const session of [`${c.api}-refused-2`, `${c.api}-refused-1`]) {
        const out = await call(gw, c, 'picky-model', session);
        assert.equal(out.status, 200);
        assert.equal(out.headers.get('x-oda-attempts'), '1');
        assert.equal(out.headers.get('x-oda-prompt-caching'), null);
        const got = pickyCalls();
        assert.equal(got.length, 1);
        assert.equal(got[0]!.json && 'prompt_cache_key' in got[0]!.json, false);
        assert.equal(got[0]!.raw.toString('utf8'), out.clientBody);
        picky.reset();
      }
      assert.equal(warnings(), 1);
    });

    test('another provider still gets the chat id as its key', async () => {
      const out = await call(gw, c, 'open-model', `${c.api}-open-1`);
      assert.equal(out.status, 200);
      assert.equal(out.headers.get('x-oda-attempts'), '1');
      assert.equal(out.headers.get('x-oda-prompt-caching'), 'key');
      const got = open.requestsTo(PATHS[c.api]);
      assert.equal(got[got.length - 1]!.json?.prompt_cache_key, `${c.api}-open-1`);
    });

    test('a key the client set, refused, goes back to the client as the provider sent it', async () => {
      picky.reset();
      const warned = warnings();
      const out = await call(gw, c, 'picky-model', `${c.api}-client-key`, 'my-own-key');
      assert.equal(out.status, c.status);
      assert.equal(out.headers.get('x-oda-attempts'), '1');
      const got = pickyCalls();
      assert.equal(got.length, 1);
      assert.equal(got[0]!.json?.prompt_cache_key, 'my-own-key');
      assert.equal(got[0]!.raw.toString('utf8'), out.clientBody);
      // The provider's refusal, byte for byte.
      assert.equal(out.errorBody, expectedRefusal(c.style, 'my-own-key'));
      assert.equal(out.headers.get('x-should-retry'), 'false');
      assert.equal(warnings(), warned);
    });
  });
}

/** The refusal body the fake sends in `style` for a key `value`, as JSON text. */
function expectedRefusal(style: UnknownFieldStyle, value: string): string {
  const reply = unknownFieldRefusal(style, 'prompt_cache_key', value);
  assert.ok('json' in reply);
  return JSON.stringify(reply.json);
}

describe('a refused key taken out of a body the client formatted its own way', () => {
  let gw: TestGateway;
  let picky: FakeProvider;
  before(async () => {
    picky = await new FakeProvider({
      refusesFields: { fields: ['prompt_cache_key'], style: 'fastapi' },
    }).start();
    gw = await startGateway({
      fakeProvider: picky,
      config: {
        promptCaching: {},
        providers: [{ name: 'picky', format: 'openai', baseUrl: `${picky.url}/v1` }],
      },
    });
  });
  after(async () => {
    await gw.close();
    await picky.close();
  });

  test('the request goes again as the bytes the client sent, spacing and order kept', async () => {
    const sent = JSON.stringify(
      { messages: [{ role: 'user', content: 'Hi ✂' }], model: 'any-model', temperature: 0 },
      null,
      '\t',
    );
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-test',
        'x-session-id': 'tabbed',
      },
      body: sent,
    });
    assert.equal(res.status, 200);
    await res.json();
    assert.equal(res.headers.get('x-oda-attempts'), '2');
    const [refused, resent] = picky.requestsTo('/v1/chat/completions');
    assert.equal(refused?.json?.prompt_cache_key, 'tabbed');
    assert.equal(resent?.raw.toString('utf8'), sent);
  });
});
