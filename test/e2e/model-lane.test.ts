/**
 * The model calls' lane (server/model-lane.ts): POSTs to the exact model paths skip the router's
 * walk, and must get everything the router's way gives: auth, the content-type and JSON checks,
 * errors in the endpoint's shape, the request id, the request metrics. Other spellings of the same
 * paths go through the router and answer the same.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { newKey } from '../../server/cli-keys.ts';

const team = newKey();
const messagesBody = JSON.stringify({
  model: 'claude-test',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hello lane' }],
});

describe('the model calls lane', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { teams: [{ name: 'lane', keys: [team.hash] }] } });
  });
  after(() => gw.close());

  const post = (path: string, headers: Record<string, string>, body = messagesBody) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  const routeCount = async (status: number) => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const m = new RegExp(
      `^oda_requests_total\\{route="/v1/messages",status="${status}"\\} (\\d+)$`,
      'm',
    ).exec(text);
    return Number(m?.[1] ?? 0);
  };

  test('the exact path and the router spellings answer the same, counted under one route', async () => {
    const auth = { 'x-api-key': team.key };
    for (const path of ['/v1/messages', '/v1/messages?beta=true', '/v1/messages/', '/V1/Messages']) {
      const res = await post(path, { ...auth, 'x-session-id': `lane-${path.length}` });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('x-oda-request-id') ?? '', /^[0-9a-f-]{36}$/, path);
      assert.equal(((await res.json()) as { type: string }).type, 'message', path);
    }
    assert.equal(await routeCount(200), 4);
  });

  test('refusals on the lane: no key (401), not JSON (415), bad JSON (400), each in the Anthropic shape', async () => {
    const cases: Array<[Record<string, string>, string, number, string]> = [
      [{}, messagesBody, 401, 'authentication_error'],
      [{ 'x-api-key': team.key, 'content-type': 'text/plain' }, messagesBody, 415, 'invalid_request_error'],
      [{ 'x-api-key': team.key }, '{"model": ', 400, 'invalid_request_error'],
    ];
    for (const [headers, body, status, type] of cases) {
      const res = await post('/v1/messages', headers, body);
      assert.equal(res.status, status);
      const answer = (await res.json()) as { type: string; error: { type: string } };
      assert.equal(answer.type, 'error');
      assert.equal(answer.error.type, type);
      assert.ok(res.headers.get('x-oda-request-id'));
    }
    assert.equal(await routeCount(401), 1);
  });

  test('a browser page of another origin is refused on the lane before its body is read', async () => {
    const res = await post('/v1/chat/completions', { 'x-api-key': team.key, origin: 'https://evil.example' });
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'ODA_ERR_FORBIDDEN');
  });
});
