/**
 * Per-team rate limit (SPEC section 8), driven by the gateway's injected ManualClock: over
 * `requestsPerMinute` the answer is a 429 in the endpoint's format with `retry-after` in seconds
 * until the fixed one-minute window ends; other teams and admins are not affected; with the Redis
 * store, replicas share one budget.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { newKey } from '../../server/cli-keys.ts';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../helpers/redis-test.ts';

const research = newKey();
const design = newKey();
const unlimited = newKey();
const admin = newKey();
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 0, 1); // on a minute boundary

const teams = [
  { name: 'research', keys: [research.hash], requestsPerMinute: 3 },
  { name: 'design', keys: [design.hash], requestsPerMinute: 1 },
  { name: 'unlimited', keys: [unlimited.hash] },
];

async function call(gw: TestGateway, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const chat = { model: 'gpt-test', messages: [{ role: 'user', content: 'count me' }] };
const messages = { model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'count me' }] };

describe('per-team rate limit with the injected clock', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { teams, adminKeys: [admin.hash] } });
  });
  after(() => gw.close());

  test('the request over the limit is a 429 with retry-after to the end of the window, in each endpoint’s shape', async () => {
    gw.clock.set(T0 + 15_000);
    gw.fake.reset();
    assert.equal((await call(gw, research.key, 'POST', '/v1/chat/completions', chat)).status, 200);
    assert.equal((await call(gw, research.key, 'GET', '/v1/models')).status, 200);
    assert.equal((await call(gw, research.key, 'GET', '/v1/sessions')).status, 200);

    const over = await call(gw, research.key, 'POST', '/v1/chat/completions', chat);
    assert.equal(over.status, 429);
    assert.equal(over.headers.get('retry-after'), '45');
    const error = over.body.error as { type: string; code: string; message: string };
    assert.equal(error.type, 'rate_limit_error');
    assert.equal(error.code, 'ODA_ERR_RATE_LIMITED');
    assert.match(error.message, /research.*3 requests per minute/);

    gw.clock.set(T0 + 59_500);
    const anthropic = await call(gw, research.key, 'POST', '/v1/messages', messages);
    assert.equal(anthropic.status, 429);
    assert.equal(anthropic.headers.get('retry-after'), '1', 'rounded up, never 0');
    assert.equal(anthropic.body.type, 'error');
    assert.equal((anthropic.body.error as { type: string }).type, 'rate_limit_error');
    // GET /v1/models asks the providers for their lists; count the model calls only.
    const modelCalls = gw.fake.requests.filter((r) => !r.path.startsWith('/v1/models'));
    assert.equal(modelCalls.length, 1, 'limited requests never reach the provider');
  });

  test('a new window starts a new budget', async () => {
    gw.clock.set(T0 + MINUTE);
    for (let i = 0; i < 3; i++) assert.equal((await call(gw, research.key, 'GET', '/v1/models')).status, 200);
    assert.equal((await call(gw, research.key, 'GET', '/v1/models')).status, 429);
    gw.clock.set(T0 + 2 * MINUTE + 1);
    assert.equal((await call(gw, research.key, 'GET', '/v1/models')).status, 200);
  });

  test('teams have their own budgets; admins and teams without a limit are not limited', async () => {
    gw.clock.set(T0 + 10 * MINUTE);
    assert.equal((await call(gw, design.key, 'GET', '/v1/models')).status, 200);
    assert.equal((await call(gw, design.key, 'GET', '/v1/models')).status, 429);
    for (let i = 0; i < 3; i++) assert.equal((await call(gw, research.key, 'GET', '/v1/models')).status, 200);
    for (let i = 0; i < 10; i++) {
      assert.equal((await call(gw, admin.key, 'GET', '/v1/models')).status, 200);
      assert.equal((await call(gw, unlimited.key, 'GET', '/v1/models')).status, 200);
    }
  });
});

describe('per-team rate limit shared by two replicas on Redis', { skip: redisSkip }, () => {
  const prefix = uniquePrefix('ratelimit-e2e');
  let one: TestGateway;
  let two: TestGateway;
  before(async () => {
    const backend = () => new RedisLogBackend({ url: redisUrl!, prefix });
    one = await startGateway({ config: { teams }, deps: { backend: backend() } });
    two = await startGateway({ fakeProvider: one.fake, config: { teams }, deps: { backend: backend() } });
  });
  after(async () => {
    await two.close();
    await one.close();
    await dropPrefix(prefix);
  });

  test('requests to either replica count against the team’s one budget', async () => {
    one.clock.set(T0 + 5_000);
    two.clock.set(T0 + 5_000);
    assert.equal((await call(one, research.key, 'GET', '/v1/models')).status, 200);
    assert.equal((await call(two, research.key, 'GET', '/v1/models')).status, 200);
    assert.equal((await call(one, research.key, 'GET', '/v1/models')).status, 200);
    const over = await call(two, research.key, 'GET', '/v1/models');
    assert.equal(over.status, 429);
    assert.equal(over.headers.get('retry-after'), '55');
    one.clock.set(T0 + MINUTE);
    assert.equal((await call(one, research.key, 'GET', '/v1/models')).status, 200);
  });
});
