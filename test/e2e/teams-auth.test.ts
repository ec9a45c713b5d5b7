/**
 * Teams and secrets (SPEC section 8): with teams configured every route behind auth needs a team
 * key, answered 401 in the endpoint's own error shape otherwise; provider keys never go to clients
 * and client keys never go to providers; neither ever appears in the gateway's log output or in the
 * chat log.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { bodies } from '../fake-provider/fake-bodies.ts';
import { newKey } from '../../server/cli-keys.ts';
import { createLogger } from '../../server/logger.ts';
import type { Event } from '../../chat-log/format/current.ts';
import { Captured } from '../helpers/captured-log.ts';

const research = newKey();
const admin = newKey();
const PROVIDER_KEY = 'sk-provider-secret-0123456789';
const WRONG_KEY = 'oda_not-a-key-of-this-gateway';

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function call(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const chatBody = { model: 'gpt-test', messages: [{ role: 'user', content: 'hello teams' }] };
const messagesBody = {
  model: 'claude-test',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hello teams' }],
};

/** Every byte under a directory (the file store's logs, checkpoints and attachments). */
function allFiles(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out += statSync(p).isDirectory() ? allFiles(p) : readFileSync(p, 'utf8');
  }
  return out;
}

function assertOpenAi401(a: Answer, message: RegExp): void {
  assert.equal(a.status, 401);
  const error = a.body.error as { type: string; code: string; message: string };
  assert.equal(error.type, 'authentication_error');
  assert.equal(error.code, 'ODA_ERR_UNAUTHORIZED');
  assert.match(error.message, message);
}

function assertAnthropic401(a: Answer): void {
  assert.equal(a.status, 401);
  assert.equal(a.body.type, 'error');
  assert.equal((a.body.error as { type: string }).type, 'authentication_error');
}

describe('teams: auth on every route, secrets kept', () => {
  let fake: FakeProvider;
  let gw: TestGateway;
  const logs = new Captured();
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        teams: [{ name: 'research', keys: [research.hash] }],
        adminKeys: [admin.hash],
        providers: [
          { name: 'keyed-openai', format: 'openai', baseUrl: `${fake.url}/v1`, apiKey: PROVIDER_KEY },
          { name: 'plain-anthropic', format: 'anthropic', baseUrl: fake.url },
        ],
      },
      deps: { logger: createLogger('trace', logs) },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test('model routes: missing or wrong key is a 401 in the endpoint’s shape; the provider is never called', async () => {
    fake.reset();
    assertOpenAi401(await call(gw.url, 'POST', '/v1/chat/completions', {}, chatBody), /team key is required/);
    assertOpenAi401(
      await call(gw.url, 'POST', '/v1/chat/completions', { authorization: `Bearer ${WRONG_KEY}` }, chatBody),
      /invalid team key/,
    );
    assertOpenAi401(
      await call(
        gw.url,
        'POST',
        '/v1/chat/completions',
        { authorization: `Bearer ${research.hash}` },
        chatBody,
      ),
      /invalid team key/,
    );
    assertAnthropic401(await call(gw.url, 'POST', '/v1/messages', {}, messagesBody));
    assertAnthropic401(await call(gw.url, 'POST', '/v1/messages', { 'x-api-key': WRONG_KEY }, messagesBody));
    assertAnthropic401(
      await call(gw.url, 'POST', '/v1/messages?beta=true', { 'x-api-key': WRONG_KEY }, messagesBody),
    );
    assertAnthropic401(await call(gw.url, 'POST', '/v1/messages/count_tokens', {}, messagesBody));
    assertOpenAi401(await call(gw.url, 'GET', '/v1/models'), /team key/);
    assert.equal(fake.requests.length, 0);
  });

  test('session routes: missing or wrong key is a 401, before the chat is even looked up', async () => {
    for (const [method, path] of [
      ['GET', '/v1/sessions'],
      ['POST', '/v1/sessions'],
      ['GET', '/v1/sessions/some-chat'],
      ['GET', '/v1/sessions/some-chat/events'],
      ['GET', '/v1/sessions/..%2f..%2fetc/events'],
    ] as const) {
      assertOpenAi401(await call(gw.url, method, path, {}, method === 'POST' ? {} : undefined), /team key/);
      assertOpenAi401(
        await call(gw.url, method, path, { 'x-api-key': WRONG_KEY }, method === 'POST' ? {} : undefined),
        /invalid team key/,
      );
    }
    // Unknown routes too: nothing about the gateway's routes is told to a caller without a key.
    assertOpenAi401(await call(gw.url, 'GET', '/v1/nothing-here'), /team key/);
  });

  test('health, readiness, metrics and the contract stay open for load balancers and scrapers', async () => {
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${gw.url}/readyz`)).status, 200);
    assert.equal((await fetch(`${gw.url}/metrics`)).status, 200);
    assert.equal((await fetch(`${gw.url}/openapi.yaml`)).status, 200);
  });

  test('the right key works with both SDKs; the provider gets the provider key, never the team key', async () => {
    fake.reset();
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: research.key, maxRetries: 0 });
    const done = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'with the right key' }],
    });
    assert.equal(done.choices[0]!.message.content, 'Hello from the fake provider.');
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: research.key, maxRetries: 0 });
    const msg = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'with the right key' }],
    });
    assert.equal(msg.content[0]!.type, 'text');
    const [toOpenAi] = fake.requestsTo('/v1/chat/completions');
    assert.equal(toOpenAi!.headers.authorization, `Bearer ${PROVIDER_KEY}`);
    const [toAnthropic] = fake.requestsTo('/v1/messages');
    // That provider has no key of its own; pass-through is off with teams, so nothing is sent.
    assert.equal(toAnthropic!.headers['x-api-key'], undefined);
    assert.equal(toAnthropic!.headers.authorization, undefined);
    for (const r of fake.requests) assert.ok(!JSON.stringify(r.headers).includes(research.key));
  });

  test('either credential header carries the key; other routes answer with it', async () => {
    const viaX = await call(gw.url, 'GET', '/v1/models', { 'x-api-key': research.key });
    assert.equal(viaX.status, 200);
    // A client sending some other token in Authorization and the team key in x-api-key gets in.
    const both = await call(gw.url, 'GET', '/v1/sessions', {
      authorization: 'Bearer some-oauth-token',
      'x-api-key': research.key,
    });
    assert.equal(both.status, 200);
    const tokens = await call(
      gw.url,
      'POST',
      '/v1/messages/count_tokens',
      { 'x-api-key': research.key },
      messagesBody,
    );
    assert.equal(tokens.status, 200);
  });

  test('an admin key works on every route', async () => {
    const headers = { authorization: `Bearer ${admin.key}` };
    assert.equal((await call(gw.url, 'GET', '/v1/models', headers)).status, 200);
    assert.equal((await call(gw.url, 'GET', '/v1/sessions', headers)).status, 200);
    assert.equal((await call(gw.url, 'POST', '/v1/chat/completions', headers, chatBody)).status, 200);
  });

  test('a provider refusal reaches the client as sent, without the provider key', async () => {
    fake.reset();
    fake.script({ status: 401, json: bodies.openaiServerError() });
    const res = await call(
      gw.url,
      'POST',
      '/v1/chat/completions',
      { authorization: `Bearer ${research.key}` },
      chatBody,
    );
    assert.equal(res.status, 401);
    assert.ok(!JSON.stringify(res.body).includes(PROVIDER_KEY));
    for (const [, v] of res.headers) assert.ok(!v.includes(PROVIDER_KEY));
  });

  test('no key, the provider key or the team key is ever in the log output or the chat log', async () => {
    // Failures log the most: an unreachable provider (error with its cause) and an upstream 500.
    fake.script({ status: 500, json: bodies.openaiServerError() }, { reset: true }, { reset: true });
    await call(gw.url, 'POST', '/v1/chat/completions', { authorization: `Bearer ${research.key}` }, chatBody);
    await call(gw.url, 'POST', '/v1/chat/completions', { authorization: `Bearer ${WRONG_KEY}` }, chatBody);
    const lines = logs.text.trim().split('\n');
    assert.ok(lines.length > 5, 'the logger saw the traffic');
    for (const secret of [research.key, admin.key, PROVIDER_KEY, WRONG_KEY, 'some-oauth-token']) {
      assert.ok(!logs.text.includes(secret), `log output holds ${secret.slice(0, 8)}...`);
    }

    const sessions = await call(gw.url, 'GET', '/v1/sessions', { authorization: `Bearer ${admin.key}` });
    const ids = (sessions.body.sessions as Array<{ id: string }>).map((s) => s.id);
    assert.ok(ids.length >= 2);
    let everything = '';
    for (const id of ids) {
      const page = await call(gw.url, 'GET', `/v1/sessions/${id}/events`, {
        authorization: `Bearer ${admin.key}`,
      });
      everything += JSON.stringify((page.body.events as Event[]) ?? []);
      everything += JSON.stringify(
        (await call(gw.url, 'GET', `/v1/sessions/${id}`, { authorization: `Bearer ${admin.key}` })).body,
      );
    }
    everything += allFiles(gw.dataDir);
    assert.ok(everything.includes('with the right key'), 'the chat log was read');
    for (const secret of [research.key, admin.key, PROVIDER_KEY, WRONG_KEY, research.hash]) {
      assert.ok(!everything.includes(secret), `chat log holds ${secret.slice(0, 8)}...`);
    }
  });
});
