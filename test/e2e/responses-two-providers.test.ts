/**
 * Two OpenAI-format providers (SPEC sections 1 and 9): a `previous_response_id` is continued only on
 * the provider that holds the response. A request whose `model` routes to the other provider is the
 * gateway's 400 in OpenAI's shape naming both, and goes to neither; one whose model routes to the
 * holder goes on as before. Through the official `openai` SDK, without teams and with them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { newKey } from '../../server/cli-keys.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

for (const withTeams of [false, true]) {
  describe(`previous_response_id across two OpenAI-format providers${withTeams ? ', with teams' : ''}`, () => {
    let gw: TestGateway;
    let alpha: FakeProvider;
    let beta: FakeProvider;
    let client: OpenAI;
    before(async () => {
      alpha = await new FakeProvider({ answer: 'from alpha' }).start();
      beta = await new FakeProvider({ answer: 'from beta' }).start();
      const key = newKey();
      gw = await startGateway({
        fakeProvider: alpha,
        config: {
          providers: [
            {
              name: 'alpha',
              format: 'openai',
              baseUrl: `${alpha.url}/v1`,
              apiKey: 'sk-a',
              models: ['gpt-*'],
            },
            {
              name: 'beta',
              format: 'openai',
              baseUrl: `${beta.url}/v1`,
              apiKey: 'sk-b',
              models: ['local-*'],
            },
          ],
          ...(withTeams ? { teams: [{ name: 'research', keys: [key.hash] }] } : {}),
        },
      });
      client = new OpenAI({
        baseURL: `${gw.url}/v1`,
        apiKey: withTeams ? key.key : 'sk-client',
        maxRetries: 0,
      });
    });
    after(async () => {
      await gw.close();
      await alpha.close();
      await beta.close();
    });

    test('a model routed to the other provider is a 400 naming both; nothing is sent', async () => {
      const first = await client.responses.create({ model: 'gpt-5', input: 'hello' });
      assert.equal(first.output_text, 'from alpha');
      const sent = { alpha: alpha.requests.length, beta: beta.requests.length };

      const refused = (call: Promise<unknown>) =>
        assert.rejects(call, (e: unknown) => {
          assert.ok(e instanceof OpenAI.BadRequestError, `expected a 400, got ${String(e)}`);
          assert.equal(
            e.message,
            `400 previous_response_id '${first.id}' is held by provider "alpha", but model "local-llama" ` +
              `routes to provider "beta", which cannot continue it: use a model "alpha" serves, or send ` +
              `the whole history instead`,
          );
          assert.equal(e.param, 'previous_response_id');
          assert.equal((e.error as { type?: string }).type, 'invalid_request_error');
          return true;
        });
      await refused(
        client.responses.create({ model: 'local-llama', previous_response_id: first.id, input: 'and?' }),
      );
      await refused(
        client.responses.inputTokens.count({
          model: 'local-llama',
          previous_response_id: first.id,
          input: 'and?',
        }),
      );
      assert.deepEqual(
        { alpha: alpha.requests.length, beta: beta.requests.length },
        sent,
        'nothing was sent',
      );

      // The holder's model continues it as before; the other provider serves its own models.
      const next = await client.responses.create({
        model: 'gpt-5',
        previous_response_id: first.id,
        input: 'and?',
      });
      assert.equal(next.output_text, 'from alpha');
      assert.equal(
        (await client.responses.create({ model: 'local-llama', input: 'hi' })).output_text,
        'from beta',
      );
    });
  });
}
