/**
 * Header hygiene both ways (SPEC section 14). With teams, only an allow-list of client headers
 * reaches the provider: what the SDKs, Claude Code and Codex send and providers act on; billing
 * routing, client addresses, browser context and other credentials stay at the gateway, and
 * `anthropic-beta` is narrowed per provider. Without teams the client's headers pass, less origin,
 * referer and cookies. Provider answers cannot set cookies or the provider host's navigation and
 * browser-policy headers, overwrite the gateway's own headers or redirect the client (a 3xx is a
 * 502), and a provider key echoed in an error body or a header is masked for the client and in the
 * logs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { anthropicMessage } from '../fake-provider/fake-bodies.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { newKey } from '../../server/cli-keys.ts';
import { createLogger } from '../../server/logger.ts';
import { Captured } from '../helpers/captured-log.ts';

const team = newKey();
const OPENAI_KEY = 'sk-openai-provider-key-0123456789';
const ANTHROPIC_KEY = 'sk-ant-provider-key-9876543210';

/** What Claude Code sends besides its key (recorded from claude-cli 2.x). */
const CLAUDE_CODE_HEADERS = {
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-1m-2025-08-07',
  'anthropic-dangerous-direct-browser-access': 'true',
  'x-app': 'cli',
  'user-agent': 'claude-cli/2.1.7 (external, cli)',
  'x-stainless-lang': 'js',
  'x-stainless-retry-count': '0',
  'x-claude-code-session-id': 'c0ffee00-0000-4000-8000-000000000001',
};

/** What Codex sends besides its key. */
const CODEX_HEADERS = {
  originator: 'codex_cli_rs',
  version: '0.63.0',
  'openai-beta': 'responses=experimental',
  'session-id': 'codex-session-1',
  'thread-id': 'codex-thread-1',
  'x-codex-turn-metadata': '{"session_id":"codex-session-1","turn_id":"t1"}',
  'x-codex-turn-state': 'opaque-routing-token',
  'x-openai-subagent': 'review',
  'x-client-request-id': 'req-123',
  accept: 'text/event-stream',
};

/** What no provider call made with the gateway's key may carry. */
const HOSTILE_HEADERS = {
  'openai-organization': 'org-attacker',
  'openai-project': 'proj-attacker',
  'x-forwarded-for': '203.0.113.7',
  'x-forwarded-host': 'evil.example',
  forwarded: 'for=203.0.113.7',
  'x-real-ip': '203.0.113.7',
  referer: 'https://evil.example/page',
  cookie: 'session=stolen',
  'chatgpt-account-id': 'acct-attacker',
  'api-key': 'sk-azure-style',
  'sentry-trace': 'abc-def-1',
  'x-custom-tracking': 'yes',
};

const messagesBody = { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
const chatBody = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] };

describe('with teams, only allowed client headers reach the provider', () => {
  let fake: FakeProvider;
  let gw: TestGateway;
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        teams: [{ name: 'research', keys: [team.hash] }],
        providers: [
          { name: 'p-openai', format: 'openai', baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY },
          {
            name: 'p-anthropic',
            format: 'anthropic',
            baseUrl: fake.url,
            apiKey: ANTHROPIC_KEY,
            anthropicBetas: ['claude-code-*', 'interleaved-thinking-2025-05-14'],
          },
        ],
      },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test('Claude Code headers pass (anthropic-beta narrowed to the provider’s list); hostile ones do not', async () => {
    fake.reset();
    const r = await rawRequest(gw.url, {
      path: '/v1/messages?beta=true',
      headers: {
        'content-type': 'application/json',
        'x-api-key': team.key,
        ...CLAUDE_CODE_HEADERS,
        ...HOSTILE_HEADERS,
      },
      body: JSON.stringify(messagesBody),
    });
    assert.equal(r.status, 200, r.text);
    const got = fake.requests[0]!.headers;
    assert.equal(fake.requests[0]!.path, '/v1/messages?beta=true');
    assert.equal(got['x-api-key'], ANTHROPIC_KEY, 'the gateway’s key, not the team key');
    assert.equal(got.authorization, undefined);
    assert.equal(got['anthropic-beta'], 'claude-code-20250219,interleaved-thinking-2025-05-14');
    for (const [name, value] of Object.entries(CLAUDE_CODE_HEADERS)) {
      if (name !== 'anthropic-beta') assert.equal(got[name], value, name);
    }
    for (const name of Object.keys(HOSTILE_HEADERS)) assert.equal(got[name], undefined, name);
    // Nothing but the allow-list, the credential and the transport's own headers.
    const expected = new Set([
      ...Object.keys(CLAUDE_CODE_HEADERS),
      'x-api-key',
      'content-type',
      'content-length',
      'accept-encoding',
      'host',
      'connection',
    ]);
    assert.deepEqual(
      Object.keys(got).filter((n) => !expected.has(n)),
      [],
      'no other header reached the provider',
    );
  });

  test('Codex headers pass; organization, project and forwarding headers do not', async () => {
    fake.reset();
    const r = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${team.key}`,
        ...CODEX_HEADERS,
        ...HOSTILE_HEADERS,
      },
      body: JSON.stringify(chatBody),
    });
    assert.equal(r.status, 200, r.text);
    const got = fake.requests[0]!.headers;
    assert.equal(got.authorization, `Bearer ${OPENAI_KEY}`);
    for (const [name, value] of Object.entries(CODEX_HEADERS)) assert.equal(got[name], value, name);
    for (const name of Object.keys(HOSTILE_HEADERS)) assert.equal(got[name], undefined, name);
  });

  test('an anthropic-beta with no allowed beta is dropped whole; the SDK still gets its answer', async () => {
    fake.reset();
    const client = new Anthropic({ baseURL: gw.url, apiKey: team.key, maxRetries: 0 });
    const msg = await client.messages.create(messagesBody as Anthropic.MessageCreateParamsNonStreaming, {
      headers: { 'anthropic-beta': 'context-1m-2025-08-07' },
    });
    assert.equal(msg.type, 'message');
    const got = fake.requests[0]!.headers;
    assert.equal(got['anthropic-beta'], undefined);
    assert.ok(String(got['x-stainless-lang']).length > 0, 'the SDK’s own x-stainless-* pass');
    assert.ok(got['anthropic-version'], 'the SDK’s anthropic-version passes');
  });
});

describe('without teams, client headers pass as sent, less origin, referer and cookies', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => gw.close());

  test('openai-organization and unknown headers pass; browser context does not', async () => {
    const r = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-client-own-key',
        'openai-organization': 'org-mine',
        'x-custom-tracking': 'yes',
        referer: 'https://somewhere.example/',
        cookie: 'a=b',
        // Its own origin (Host) passes the origin check; the header itself is not forwarded.
        origin: `http://${new URL(gw.url).host}`,
      },
      body: JSON.stringify(chatBody),
    });
    assert.equal(r.status, 200, r.text);
    const got = gw.fake.requests[0]!.headers;
    assert.equal(got.authorization, 'Bearer sk-client-own-key', 'pass-through credential');
    assert.equal(got['openai-organization'], 'org-mine');
    assert.equal(got['x-custom-tracking'], 'yes');
    assert.equal(got.referer, undefined);
    assert.equal(got.cookie, undefined);
    assert.equal(got.origin, undefined);
  });
});

describe('provider answers cannot take over the gateway’s side of the exchange', () => {
  let fake: FakeProvider;
  let gw: TestGateway;
  const logs = new Captured();
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        providers: [
          { name: 'p-openai', format: 'openai', baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY },
          { name: 'p-anthropic', format: 'anthropic', baseUrl: fake.url, apiKey: ANTHROPIC_KEY },
        ],
      },
      deps: { logger: createLogger('trace', logs) },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const forged = {
    'x-session-id': 'forged-chat',
    'x-oda-request-id': 'forged-request',
    'x-oda-trimmed': '999',
    'set-cookie': 'tracker=1; Path=/',
    'alt-svc': 'h3=":443"',
    // The provider's host's browser and navigation headers, not the gateway's.
    location: 'https://evil.example/next',
    refresh: '0; url=https://evil.example/',
    'access-control-allow-origin': '*',
    'access-control-allow-credentials': 'true',
    'content-security-policy': "default-src 'none'",
    'content-security-policy-report-only': "default-src 'none'",
    // Hop-by-hop: a proxy's connection header, and a header the connection header names.
    'proxy-connection': 'keep-alive',
    connection: 'keep-alive, x-hop-only',
    'x-hop-only': 'this hop',
    // A provider header echoing the key it was given, and one that passes as it is.
    'x-echo': `key=${OPENAI_KEY}`,
    'x-request-id': 'req_provider_1',
  };

  /** None of the provider host's headers reached the client; its key is masked; other headers pass. */
  function assertProviderHeadersKept(headers: Headers, what: string): void {
    for (const name of [
      'set-cookie',
      'alt-svc',
      'location',
      'refresh',
      'content-security-policy',
      'proxy-connection',
      'x-hop-only',
    ])
      assert.equal(headers.get(name), null, `${what}: ${name}`);
    assert.equal(headers.get('content-security-policy-report-only'), null, what);
    assert.deepEqual(
      [...headers.keys()].filter((n) => n.startsWith('access-control-')),
      [],
      `${what}: access-control-*`,
    );
    assert.equal(headers.get('x-echo'), 'key=[masked]', what);
    assert.equal(headers.get('x-request-id'), 'req_provider_1', what);
  }

  test('x-session-id and x-oda-* stay the gateway’s; the provider host’s headers are dropped (JSON and stream)', async () => {
    fake.reset();
    fake.script({ json: anthropicMessage('claude-test', 'ok'), headers: forged });
    const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
    const { response } = await client.messages
      .create(messagesBody as Anthropic.MessageCreateParamsNonStreaming, {
        headers: { 'x-session-id': 'my-chat' },
      })
      .withResponse();
    assert.equal(response.headers.get('x-session-id'), 'my-chat');
    assert.notEqual(response.headers.get('x-oda-request-id'), 'forged-request');
    assert.equal(response.headers.get('x-oda-trimmed'), null);
    assertProviderHeadersKept(response.headers, 'JSON');

    fake.script({
      sse: [
        { data: JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [] }) },
        { data: '[DONE]' },
      ],
      headers: forged,
    });
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'my-stream' },
      body: JSON.stringify({ ...chatBody, stream: true }),
    });
    await r.text();
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-session-id'), 'my-stream');
    assert.equal(r.headers.get('x-oda-trimmed'), null);
    assertProviderHeadersKept(r.headers, 'stream');
  });

  test('a refusal cannot set cookies, the session id or the provider host’s headers either', async () => {
    fake.reset();
    fake.script({
      status: 400,
      json: { error: { message: 'bad', type: 'invalid_request_error', param: null, code: null } },
      headers: forged,
    });
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'refused-chat' },
      body: JSON.stringify(chatBody),
    });
    assert.equal(r.status, 400);
    assert.equal(r.headers.get('x-session-id'), 'refused-chat');
    assertProviderHeadersKept(r.headers, 'refusal');
  });

  test('a 3xx from the provider is a 502; the client is never sent elsewhere', async () => {
    for (const status of [301, 302, 307, 308]) {
      fake.reset();
      fake.script({
        status,
        text: '',
        headers: { location: 'https://evil.example/steal', 'set-cookie': 'x=1' },
      });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const err = await client.chat.completions
        .create(chatBody as OpenAI.ChatCompletionCreateParamsNonStreaming)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(err instanceof OpenAI.APIError, `${status}: ${String(err)}`);
      assert.equal(err.status, 502, `${status}`);
      assert.equal(err.headers?.get('location') ?? null, null);
      assert.equal(err.headers?.get('set-cookie') ?? null, null);
      assert.match(String((err.error as { message?: string }).message), /redirect/);
      assert.equal(fake.requests.length, 1, 'the redirect was not followed, nor retried');
    }
  });

  test('a provider key echoed in an error body is masked for the client and in the logs', async () => {
    for (const [path, key, body] of [
      [
        '/v1/chat/completions',
        OPENAI_KEY,
        { error: { message: `Incorrect API key provided: ${OPENAI_KEY}.`, type: 'invalid_request_error' } },
      ],
      [
        '/v1/messages',
        ANTHROPIC_KEY,
        {
          type: 'error',
          error: { type: 'authentication_error', message: `invalid x-api-key ${ANTHROPIC_KEY}` },
        },
      ],
    ] as const) {
      fake.reset();
      fake.script({ status: 401, json: body });
      const r = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(path === '/v1/messages' ? messagesBody : chatBody),
      });
      const text = await r.text();
      assert.equal(r.status, 401);
      assert.equal(
        fake.requests[0]!.headers[path === '/v1/messages' ? 'x-api-key' : 'authorization'] !== undefined,
        true,
      );
      assert.ok(!text.includes(key), `the key is not in the answer: ${text}`);
      assert.match(text, /\[masked\]/);
    }
    assert.ok(!logs.text.includes(OPENAI_KEY) && !logs.text.includes(ANTHROPIC_KEY), 'no key in the logs');
  });
});
