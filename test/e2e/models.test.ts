/**
 * GET /v1/models and GET /v1/models/{id} (SPEC section 2): the real model ids the providers serve,
 * asked of each provider with its key (or the client's credential in pass-through), cached
 * briefly, merged, narrowed by the providers' `models` globs; a provider that cannot be asked
 * contributes the literal ids of its globs, never `*`. In the caller's shape: the `openai` SDK's
 * `models.list/retrieve` and the Anthropic SDK's.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

/** A port nothing listens on: every call to it fails to connect. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const modelCalls = (fake: FakeProvider) => fake.requests.filter((r) => r.path.startsWith('/v1/models'));

describe('models from several providers, with provider keys', () => {
  let gw: TestGateway;
  let other: FakeProvider;
  let openai: OpenAI;
  let anthropic: Anthropic;
  before(async () => {
    const main = await new FakeProvider({
      openaiModels: ['gpt-5', 'gpt-5-mini', 'gpt-4.1', 'text-embedding-3-small'],
      anthropicModels: [
        'claude-sonnet-4-5-20250929',
        'claude-haiku-4-5-20251001',
        'claude-opus-4-1-20250805',
      ],
    }).start();
    other = await new FakeProvider({
      openaiModels: ['gpt-4.1', 'gpt-5', 'o3', 'meta-llama/Llama-3.1-8B'],
    }).start();
    const dead = await closedPort();
    gw = await startGateway({
      fakeProvider: main,
      config: {
        providers: [
          {
            name: 'main',
            format: 'openai',
            baseUrl: `${main.url}/v1`,
            apiKey: 'sk-main',
            models: ['gpt-5*'],
          },
          {
            name: 'other',
            format: 'openai',
            baseUrl: `${other.url}/v1`,
            apiKey: 'sk-other',
            models: ['gpt-4*', 'gpt-5', 'meta-llama/*'],
          },
          {
            name: 'claude',
            format: 'anthropic',
            baseUrl: main.url,
            apiKey: 'sk-ant-main',
            models: ['claude-*-4-5-*'],
          },
          {
            name: 'down',
            format: 'openai',
            baseUrl: `http://127.0.0.1:${dead}/v1`,
            models: ['local-llama-3-8b', 'local-*', 'qwen?-coder'],
          },
        ],
      },
    });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await gw.fake.close();
    await other.close();
  });

  test('openai SDK: merged in provider order, narrowed by globs, duplicates once, a dead provider’s literal ids', async () => {
    const ids: string[] = [];
    const owners: string[] = [];
    for await (const m of openai.models.list()) {
      ids.push(m.id);
      owners.push(m.owned_by);
      assert.equal(m.object, 'model');
      assert.equal(typeof m.created, 'number');
    }
    assert.deepEqual(ids, [
      'gpt-5',
      'gpt-5-mini',
      'gpt-4.1',
      'meta-llama/Llama-3.1-8B',
      'claude-sonnet-4-5-20250929',
      'claude-haiku-4-5-20251001',
      'local-llama-3-8b',
    ]);
    // The provider's own owned_by when it said, else the provider's name.
    assert.equal(owners[0], 'openai');
    assert.equal(owners.at(-1), 'down');
    // Each provider was asked once, with the gateway's key for it, never the client's.
    const main = modelCalls(gw.fake);
    assert.deepEqual(
      main.map((r) => [r.method, r.path, r.headers.authorization ?? r.headers['x-api-key']]),
      [
        ['GET', '/v1/models', 'Bearer sk-main'],
        ['GET', '/v1/models?limit=1000', 'sk-ant-main'],
      ].sort((a, b) => (a[1]! < b[1]! ? -1 : 1)),
    );
    const claudeCall = main.find((r) => r.headers['x-api-key'] !== undefined)!;
    assert.equal(claudeCall.headers['anthropic-version'], '2023-06-01');
    assert.equal(claudeCall.headers.authorization, undefined);
    assert.deepEqual(
      modelCalls(other).map((r) => [r.path, r.headers.authorization]),
      [['/v1/models', 'Bearer sk-other']],
    );
  });

  test('cached for a minute per provider and credential: asked again only once the clock moved on', async () => {
    const before = modelCalls(gw.fake).length + modelCalls(other).length;
    await openai.models.list();
    await anthropic.models.list();
    assert.equal(modelCalls(gw.fake).length + modelCalls(other).length, before, 'answered from the cache');
    gw.clock.advance(61_000);
    await openai.models.list();
    assert.equal(modelCalls(gw.fake).length + modelCalls(other).length, before + 3);
  });

  test('Anthropic SDK: Anthropic’s shape, paged by limit and after_id as Anthropic pages it', async () => {
    const page = await anthropic.models.list({ limit: 3 });
    assert.deepEqual(
      page.data.map((m) => m.id),
      ['gpt-5', 'gpt-5-mini', 'gpt-4.1'],
    );
    assert.equal(page.has_more, true);
    assert.equal(page.first_id, 'gpt-5');
    assert.equal(page.last_id, 'gpt-4.1');
    const all: Anthropic.ModelInfo[] = [];
    for await (const m of anthropic.models.list({ limit: 2 })) all.push(m);
    assert.equal(all.length, 7);
    const sonnet = all.find((m) => m.id === 'claude-sonnet-4-5-20250929')!;
    assert.deepEqual(sonnet, {
      type: 'model',
      id: 'claude-sonnet-4-5-20250929',
      display_name: 'Claude Sonnet 4.5',
      created_at: sonnet.created_at,
    });
    assert.match(sonnet.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const literal = all.find((m) => m.id === 'local-llama-3-8b')!;
    assert.equal(literal.display_name, 'local-llama-3-8b');
    const bad = await fetch(`${gw.url}/v1/models?limit=0`, {
      headers: { 'anthropic-version': '2023-06-01' },
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'limit must be at least 1' },
    });
  });

  test('retrieve: a served model in the caller’s shape; one not served is a 404 in the caller’s shape', async () => {
    const m = await openai.models.retrieve('gpt-4.1');
    assert.deepEqual(
      { id: m.id, object: m.object, owned_by: m.owned_by },
      {
        id: 'gpt-4.1',
        object: 'model',
        owned_by: 'openai',
      },
    );
    assert.equal((await openai.models.retrieve('meta-llama/Llama-3.1-8B')).id, 'meta-llama/Llama-3.1-8B');
    const claude = await anthropic.models.retrieve('claude-haiku-4-5-20251001');
    assert.equal(claude.type, 'model');
    assert.equal(claude.display_name, 'Claude Haiku 4.5');
    // o3 is listed by a provider whose globs do not cover it; gpt-4o-mini by none.
    for (const id of ['o3', 'claude-opus-4-1-20250805', 'gpt-4o-mini']) {
      await assert.rejects(openai.models.retrieve(id), (e: unknown) => {
        assert.ok(e instanceof OpenAI.NotFoundError, 'e instanceof OpenAI.NotFoundError');
        assert.equal((e.error as { type?: string }).type, 'not_found_error');
        assert.match(e.message, new RegExp(`model '${id}' is not served by this gateway`));
        return true;
      });
    }
    await assert.rejects(anthropic.models.retrieve('o3'), (e: unknown) => {
      assert.ok(e instanceof Anthropic.NotFoundError, 'e instanceof Anthropic.NotFoundError');
      assert.deepEqual(e.error, {
        type: 'error',
        error: { type: 'not_found_error', message: "model 'o3' is not served by this gateway" },
      });
      return true;
    });
  });
});

describe('models in pass-through mode (no keys at the gateway)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      fake: { openaiModels: ['gpt-5', 'gpt-4.1'], anthropicModels: ['claude-sonnet-4-5-20250929'] },
    });
  });
  after(() => gw.close());

  test('providers of the client’s format are asked with its own credential, cached per credential; no other vendor gets it', async () => {
    const a = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-user-a', maxRetries: 0 });
    const b = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-user-b', maxRetries: 0 });
    const ids = (await a.models.list()).data.map((m) => m.id);
    assert.deepEqual(ids, ['gpt-5', 'gpt-4.1']);
    await a.models.list();
    await b.models.list();
    const openaiCalls = () => modelCalls(gw.fake).filter((r) => r.headers['anthropic-version'] === undefined);
    const anthropicCalls = () =>
      modelCalls(gw.fake).filter((r) => r.headers['anthropic-version'] !== undefined);
    assert.deepEqual(
      openaiCalls().map((r) => r.headers.authorization),
      ['Bearer sk-user-a', 'Bearer sk-user-b'],
    );
    // The OpenAI keys never went to the Anthropic-format provider.
    assert.deepEqual(anthropicCalls(), []);

    // An Anthropic client (Claude Code sends a Bearer token): its own provider only.
    const claude = new Anthropic({
      baseURL: gw.url,
      authToken: 'sk-ant-oat-user',
      apiKey: null,
      maxRetries: 0,
    });
    assert.deepEqual(
      (await claude.models.list()).data.map((m) => m.id),
      ['claude-sonnet-4-5-20250929'],
    );
    assert.deepEqual(
      anthropicCalls().map((r) => r.headers.authorization),
      ['Bearer sk-ant-oat-user'],
    );
    assert.equal(openaiCalls().length, 2, 'the Anthropic token never went to the OpenAI-format provider');
  });

  test('a provider that refuses the listing contributes the literal ids of its globs, never *', async () => {
    const gw2 = await startGateway({
      fakeProvider: gw.fake,
      config: {
        providers: [
          {
            name: 'strict',
            format: 'openai',
            baseUrl: `${gw.fake.url}/v1`,
            models: ['gpt-5', 'gpt-5-*', '*'],
          },
        ],
      },
    });
    try {
      gw.fake.script({
        status: 401,
        json: {
          error: {
            message: 'Incorrect API key provided',
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        },
      });
      const res = await fetch(`${gw2.url}/v1/models`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), {
        object: 'list',
        data: [{ id: 'gpt-5', object: 'model', created: 0, owned_by: 'strict' }],
      });
    } finally {
      await gw2.close();
    }
  });
});
