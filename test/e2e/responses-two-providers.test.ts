/**
 * Two OpenAI-format providers (SPEC sections 1 and 9): a `previous_response_id` is continued only on
 * the provider that holds the response. A request whose `model` routes to the other provider is the
 * gateway's 400 in OpenAI's shape naming both, and goes to neither; one whose model routes to the
 * holder goes on as before. Through the official `openai` SDK, without teams and with them. The same
 * holds for the output items the gateway logged (with teams): an `item_reference` to one, or a typed
 * item sent back with its id, in a request whose model routes to the other provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { newKey } from '../../server/cli-keys.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { responsesMessage, responsesReasoning } from '../fake-provider/fake-responses.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

type Item = OpenAI.Responses.ResponseInputItem;

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

describe('output items across two OpenAI-format providers, with teams', () => {
  let gw: TestGateway;
  let alpha: FakeProvider;
  let beta: FakeProvider;
  let research: OpenAI;
  let admin: OpenAI;
  before(async () => {
    alpha = await new FakeProvider({ answer: 'from alpha' }).start();
    beta = await new FakeProvider({ answer: 'from beta' }).start();
    const [researchKey, adminKey] = [newKey(), newKey()];
    gw = await startGateway({
      fakeProvider: alpha,
      config: {
        providers: [
          { name: 'alpha', format: 'openai', baseUrl: `${alpha.url}/v1`, apiKey: 'sk-a', models: ['gpt-*'] },
          { name: 'beta', format: 'openai', baseUrl: `${beta.url}/v1`, apiKey: 'sk-b', models: ['local-*'] },
        ],
        teams: [{ name: 'research', keys: [researchKey.hash] }],
        adminKeys: [adminKey.hash],
      },
    });
    const client = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
    research = client(researchKey.key);
    admin = client(adminKey.key);
    alpha.script({
      responses: {
        output: [
          responsesReasoning('weighing it', undefined, 'rs_alpha_thoughts'),
          responsesMessage('the findings', 'msg_alpha_findings'),
        ],
      },
    });
    const first = await research.responses.create({ model: 'gpt-5', input: 'research notes' });
    assert.equal(first.output_text, 'the findings');
  });
  after(async () => {
    await gw.close();
    await alpha.close();
    await beta.close();
  });

  const reference = (id: string) => ({ type: 'item_reference' as const, id });
  const sentNothing = async (call: () => Promise<unknown>) => {
    const sent = { alpha: alpha.requests.length, beta: beta.requests.length };
    await call();
    assert.deepEqual({ alpha: alpha.requests.length, beta: beta.requests.length }, sent, 'nothing was sent');
  };
  /** Asserts that `call` is the gateway's 400 with `message`, naming `input`. */
  const refused = (call: Promise<unknown>, message: string) =>
    assert.rejects(call, (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `expected a 400, got ${String(e)}`);
      assert.equal(e.message, `400 ${message}`);
      assert.equal(e.param, 'input');
      assert.equal((e.error as { type?: string }).type, 'invalid_request_error');
      return true;
    });

  test('a reference to an item of the other provider is a 400 naming both; nothing is sent', async () => {
    const message =
      `item_reference 'msg_alpha_findings' is held by provider "alpha", but model "local-llama" routes ` +
      `to provider "beta", which cannot find it: use a model "alpha" serves, or send the item itself ` +
      `instead of a reference`;
    const input = [reference('msg_alpha_findings'), { role: 'user' as const, content: 'go on' }];
    await sentNothing(async () => {
      await refused(research.responses.create({ model: 'local-llama', input }), message);
      await refused(research.responses.inputTokens.count({ model: 'local-llama', input }), message);
      // An admin reaches every team's items, but not on a provider that does not hold them.
      await refused(admin.responses.create({ model: 'local-llama', input }), message);
    });
    // The holder's model reaches it as before.
    const next = await research.responses.create({ model: 'gpt-5', input });
    assert.equal(next.output_text, 'from alpha');
    assert.deepEqual(alpha.requests.at(-1)?.json?.input, input);
  });

  test('a typed item sent back with the id of an item of the other provider is the same 400', async () => {
    const reasoning = responsesReasoning('weighing it', undefined, 'rs_alpha_thoughts');
    const item = reasoning as unknown as Item;
    await sentNothing(() =>
      refused(
        research.responses.create({
          model: 'local-llama',
          input: [item, { role: 'user', content: 'go on' }],
        }),
        `input item id 'rs_alpha_thoughts' is held by provider "alpha", but model "local-llama" routes ` +
          `to provider "beta", which cannot find it: use a model "alpha" serves, or send the item ` +
          `without its id`,
      ),
    );
    // Without its id, it goes to the other provider as sent.
    const { id: _id, ...withoutId } = reasoning;
    const input = [withoutId as unknown as Item];
    const other = await research.responses.create({ model: 'local-llama', input });
    assert.equal(other.output_text, 'from beta');
    assert.deepEqual(beta.requests.at(-1)?.json?.input, input);
  });

  test('ids the gateway never logged go as sent, and the provider judges them', async () => {
    // A typed item of the client's own history: forwarded as it is.
    const own = [
      { ...responsesMessage('said earlier', 'msg_never_logged') },
      { role: 'user', content: 'hi' },
    ];
    const answered = await research.responses.create({
      model: 'local-llama',
      input: own as OpenAI.Responses.ResponseInput,
    });
    assert.equal(answered.output_text, 'from beta');
    assert.deepEqual(beta.requests.at(-1)?.json?.input, own);
    // An admin's reference to an item the gateway never logged reaches the provider, which has none.
    const before = beta.requests.length;
    await assert.rejects(
      admin.responses.create({ model: 'local-llama', input: [reference('msg_nobody_holds')] }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.NotFoundError, `expected the provider's 404, got ${String(e)}`);
        assert.equal(e.message, "404 Item with id 'msg_nobody_holds' not found.");
        return true;
      },
    );
    assert.equal(beta.requests.length, before + 1, 'the provider was asked');
  });
});
