/**
 * The setup the Responses API team tests share: a gateway with two teams (research, design) and an
 * admin key in front of one OpenAI-format fake provider that holds the gateway's own key, with an
 * official `openai` client for each key; and their check of a refusal: the gateway's 404 in
 * OpenAI's shape, the provider not asked.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { newKey } from '../../server/cli-keys.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from './start-gateway.ts';

export interface TeamsGateway {
  gw: TestGateway;
  research: OpenAI;
  design: OpenAI;
  admin: OpenAI;
  close(): Promise<void>;
}

export async function startTeamsGateway(): Promise<TeamsGateway> {
  const research = newKey();
  const design = newKey();
  const admin = newKey();
  const fake = await new FakeProvider().start();
  const gw = await startGateway({
    fakeProvider: fake,
    config: {
      providers: [{ name: 'fake-openai', format: 'openai', baseUrl: `${fake.url}/v1`, apiKey: 'sk-gateway' }],
      teams: [
        { name: 'research', keys: [research.hash] },
        { name: 'design', keys: [design.hash] },
      ],
      adminKeys: [admin.hash],
    },
  });
  const client = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
  return {
    gw,
    research: client(research.key),
    design: client(design.key),
    admin: client(admin.key),
    async close() {
      await gw.close();
      await fake.close();
    },
  };
}

/** Asserts that `call` is the gateway's 404 with `message` (and `param`), the provider not asked. */
export async function refusedNotFound(
  gw: TestGateway,
  call: Promise<unknown>,
  message: string,
  param?: string,
): Promise<void> {
  const before = gw.fake.requests.length;
  await assert.rejects(call, (e: unknown) => {
    assert.ok(e instanceof OpenAI.NotFoundError, `expected a 404, got ${String(e)}`);
    assert.equal(e.message, `404 ${message}`);
    assert.equal((e.error as { type?: string }).type, 'not_found_error');
    if (param !== undefined) assert.equal(e.param, param);
    return true;
  });
  assert.equal(gw.fake.requests.length, before, 'the provider was not asked');
}
