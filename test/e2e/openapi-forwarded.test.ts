/**
 * The contract of the routes forwarded as they are and of the model list: real answers of a real
 * gateway in front of the fake provider, each checked against the schema `openapi.yaml` documents
 * for its method, path, status and content type.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newKey } from '../../server/cli-keys.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { loadOpenApi, validateResponse } from '../helpers/openapi-validator.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const doc = loadOpenApi();

interface Answer {
  status: number;
  headers: Headers;
  contentType: string;
  body: unknown;
}

async function call(
  gw: TestGateway,
  method: string,
  path: string,
  init: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const contentType = res.headers.get('content-type') ?? '';
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    contentType,
    body: contentType.includes('application/json') ? (JSON.parse(text) as unknown) : text,
  };
}

function assertDocumented(method: string, path: string, a: Answer, status: number): void {
  assert.equal(a.status, status, `${method} ${path}: status ${a.status}, body ${JSON.stringify(a.body)}`);
  assert.deepEqual(
    validateResponse(doc, method, path, a.status, a.body, a.contentType),
    [],
    `${method} ${path}`,
  );
  assert.ok(a.headers.get('x-oda-request-id'), 'every response carries x-oda-request-id');
}

const anthropicHeaders = { 'anthropic-version': '2023-06-01' };

describe('openapi.yaml: stored responses, input_tokens, embeddings, models', () => {
  let gw: TestGateway;
  let id: string;
  let background: string;
  before(async () => {
    gw = await startGateway();
    const created = await call(gw, 'POST', '/v1/responses', { body: { model: 'gpt-5', input: 'hi' } });
    assert.equal(created.status, 200);
    id = (created.body as { id: string }).id;
    const bg = await call(gw, 'POST', '/v1/responses', {
      body: { model: 'gpt-5', input: 'hi', background: true },
    });
    background = (bg.body as { id: string }).id;
  });
  after(() => gw.close());

  test('GET /v1/responses/{id}: 200 JSON and event stream; 400 for a malformed id', async () => {
    assertDocumented('GET', `/v1/responses/${id}`, await call(gw, 'GET', `/v1/responses/${id}`), 200);
    gw.fake.script({ sse: [{ event: 'response.completed', data: '{"type":"response.completed"}' }] });
    const streamed = await call(gw, 'GET', `/v1/responses/${id}?stream=true`);
    assertDocumented('GET', `/v1/responses/${id}`, streamed, 200);
    assert.match(streamed.contentType, /text\/event-stream/);
    assertDocumented('GET', '/v1/responses/a.b', await call(gw, 'GET', '/v1/responses/a.b'), 400);
  });

  test('input_items, cancel (200 and the provider’s 400), delete, then the provider’s 404', async () => {
    const path = `/v1/responses/${id}/input_items`;
    assertDocumented('GET', path, await call(gw, 'GET', `${path}?limit=10&order=asc`), 200);
    assertDocumented('GET', path, await call(gw, 'GET', `${path}?limit=ten`), 400);
    const cancel = `/v1/responses/${background}/cancel`;
    assertDocumented('POST', cancel, await call(gw, 'POST', cancel), 200);
    assertDocumented(
      'POST',
      `/v1/responses/${id}/cancel`,
      await call(gw, 'POST', `/v1/responses/${id}/cancel`),
      400,
    );
    assertDocumented('DELETE', `/v1/responses/${id}`, await call(gw, 'DELETE', `/v1/responses/${id}`), 200);
    assertDocumented('GET', `/v1/responses/${id}`, await call(gw, 'GET', `/v1/responses/${id}`), 404);
  });

  test('POST /v1/responses/input_tokens: 200, 404 for a model no provider serves', async () => {
    const path = '/v1/responses/input_tokens';
    assertDocumented(
      'POST',
      path,
      await call(gw, 'POST', path, { body: { model: 'gpt-5', input: 'count me' } }),
      200,
    );
    assertDocumented(
      'POST',
      path,
      await call(gw, 'POST', path, { body: { model: 'claude-x', input: 'x' } }),
      200,
    );
    const gw2 = await startGateway({
      fakeProvider: gw.fake,
      config: {
        providers: [{ name: 'only-gpt', format: 'openai', baseUrl: `${gw.fake.url}/v1`, models: ['gpt-*'] }],
      },
    });
    try {
      assertDocumented(
        'POST',
        path,
        await call(gw2, 'POST', path, { body: { model: 'claude-x', input: 'x' } }),
        404,
      );
      assertDocumented('POST', path, await call(gw2, 'POST', path, { body: { model: 5 } }), 400);
    } finally {
      await gw2.close();
    }
  });

  test('POST /v1/responses/compact: 200, 400, 404 for a model no provider serves', async () => {
    const path = '/v1/responses/compact';
    const body = { model: 'gpt-5', input: [{ role: 'user', content: 'compact me' }] };
    assertDocumented('POST', path, await call(gw, 'POST', path, { body }), 200);
    assertDocumented('POST', path, await call(gw, 'POST', path, { body: { model: 5 } }), 400);
    const gw2 = await startGateway({
      fakeProvider: gw.fake,
      config: {
        providers: [{ name: 'only-gpt', format: 'openai', baseUrl: `${gw.fake.url}/v1`, models: ['gpt-*'] }],
      },
    });
    try {
      assertDocumented('POST', path, await call(gw2, 'POST', path, { body: { model: 'claude-x' } }), 404);
    } finally {
      await gw2.close();
    }
  });

  test('POST /v1/embeddings: 200 (floats and base64), 400, the provider’s 400', async () => {
    const path = '/v1/embeddings';
    const floats = await call(gw, 'POST', path, {
      body: { model: 'text-embedding-3-small', input: ['a', 'b'] },
    });
    assertDocumented('POST', path, floats, 200);
    const b64 = await call(gw, 'POST', path, {
      body: { model: 'text-embedding-3-small', input: 'a', encoding_format: 'base64' },
    });
    assertDocumented('POST', path, b64, 200);
    assertDocumented('POST', path, await call(gw, 'POST', path, { body: { input: 'a' } }), 400);
    assertDocumented('POST', path, await call(gw, 'POST', path, { body: { model: 'm', input: [] } }), 400);
  });

  test('GET /v1/models and /v1/models/{id} in both shapes, 404 in both shapes, 400 for a bad limit', async () => {
    assertDocumented('GET', '/v1/models', await call(gw, 'GET', '/v1/models'), 200);
    const anthropicList = await call(gw, 'GET', '/v1/models?limit=2', { headers: anthropicHeaders });
    assertDocumented('GET', '/v1/models', anthropicList, 200);
    assert.equal((anthropicList.body as { has_more: boolean }).has_more, true);
    assertDocumented(
      'GET',
      '/v1/models',
      await call(gw, 'GET', '/v1/models?limit=5000', { headers: anthropicHeaders }),
      400,
    );
    assertDocumented('GET', '/v1/models/gpt-5', await call(gw, 'GET', '/v1/models/gpt-5'), 200);
    const claude = '/v1/models/claude-sonnet-4-5-20250929';
    assertDocumented('GET', claude, await call(gw, 'GET', claude, { headers: anthropicHeaders }), 200);
    assertDocumented('GET', '/v1/models/nope', await call(gw, 'GET', '/v1/models/nope'), 404);
    const notFound = await call(gw, 'GET', '/v1/models/nope', { headers: anthropicHeaders });
    assertDocumented('GET', '/v1/models/nope', notFound, 404);
    assert.equal((notFound.body as { type: string }).type, 'error');
  });
});

describe('openapi.yaml: stored responses of another team', () => {
  const research = newKey();
  const design = newKey();
  let gw: TestGateway;
  before(async () => {
    const fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        providers: [{ name: 'fake-openai', format: 'openai', baseUrl: `${fake.url}/v1`, apiKey: 'sk-gw' }],
        teams: [
          { name: 'research', keys: [research.hash] },
          { name: 'design', keys: [design.hash] },
        ],
      },
    });
  });
  after(async () => {
    await gw.close();
    await gw.fake.close();
  });

  test('404 on every stored-response route, and on input_tokens with previous_response_id', async () => {
    const auth = (k: string) => ({ authorization: `Bearer ${k}` });
    const created = await call(gw, 'POST', '/v1/responses', {
      body: { model: 'gpt-5', input: 'hi' },
      headers: auth(research.key),
    });
    const id = (created.body as { id: string }).id;
    const h = { headers: auth(design.key) };
    assertDocumented('GET', `/v1/responses/${id}`, await call(gw, 'GET', `/v1/responses/${id}`, h), 404);
    assertDocumented(
      'DELETE',
      `/v1/responses/${id}`,
      await call(gw, 'DELETE', `/v1/responses/${id}`, h),
      404,
    );
    const cancel = `/v1/responses/${id}/cancel`;
    assertDocumented('POST', cancel, await call(gw, 'POST', cancel, h), 404);
    const items = `/v1/responses/${id}/input_items`;
    assertDocumented('GET', items, await call(gw, 'GET', items, h), 404);
    const count = await call(gw, 'POST', '/v1/responses/input_tokens', {
      ...h,
      body: { model: 'gpt-5', input: 'x', previous_response_id: id },
    });
    assertDocumented('POST', '/v1/responses/input_tokens', count, 404);
  });
});
