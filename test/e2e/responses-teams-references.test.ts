/**
 * With teams, a Responses request reaches stored state only of its own team (SPEC section 9), also
 * through an `item_reference` in `input` and a `conversation`: the output items the gateway logged
 * for a team's responses are that team's; another team's item, an item the gateway never saw and
 * any conversation (the gateway serves no `/v1/conversations`) answer 404 without the provider
 * being asked. Admin keys reach all; without teams everything is forwarded as it is.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { itemReferenceIds, typedItemIds } from '../../server/response-references.ts';
import {
  responsesFunctionCall,
  responsesMessage,
  responsesReasoning,
} from '../fake-provider/fake-responses.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { refusedNotFound, startTeamsGateway, type TeamsGateway } from '../helpers/responses-teams.ts';

function client(gw: TestGateway, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
}

/** The gateway's 404 with `message` naming `param`, the provider not asked. */
const refused = refusedNotFound;

const reference = (id: string) => ({ type: 'item_reference' as const, id });

/** Asserts that `call` got the provider's own 404 for the item `id` it does not hold. */
const providersNotFound = (call: Promise<unknown>, id: string) =>
  assert.rejects(call, (e: unknown) => {
    assert.ok(e instanceof OpenAI.NotFoundError, `expected the provider's 404, got ${String(e)}`);
    assert.equal(e.message, `404 Item with id '${id}' not found.`);
    return true;
  });

describe('teams: item references and conversations reach only the team’s own stored state', () => {
  let gw: TestGateway;
  let researchOpenai: OpenAI;
  let designOpenai: OpenAI;
  let adminOpenai: OpenAI;
  let teams: TeamsGateway;
  before(async () => {
    teams = await startTeamsGateway();
    ({ gw, research: researchOpenai, design: designOpenai, admin: adminOpenai } = teams);
    // Research's answer: two output items, streamed, so the ids come from the stream's events.
    gw.fake.script({
      responses: {
        output: [
          responsesReasoning('weighing the sources', undefined, 'rs_research_thoughts'),
          responsesMessage('the findings', 'msg_research_findings'),
          responsesFunctionCall('lookup', '{"q":"x"}', 'call_r1', 'fc_research_lookup'),
        ],
      },
    });
    const stream = await researchOpenai.responses.create({
      model: 'gpt-5',
      input: 'research notes',
      stream: true,
    });
    for await (const event of stream) void event;
  });
  after(async () => {
    await teams.close();
  });

  test('the team references the output items of its own responses: forwarded as sent', async () => {
    const input = [
      reference('msg_research_findings'),
      { id: 'fc_research_lookup' },
      { role: 'user' as const, content: 'go on' },
    ];
    await researchOpenai.responses.create({ model: 'gpt-5', input });
    assert.deepEqual(gw.fake.requests.at(-1)?.json?.input, input);
    await researchOpenai.responses.inputTokens.count({ model: 'gpt-5', input });
    assert.equal(gw.fake.requests.at(-1)?.path, '/v1/responses/input_tokens');
  });

  test('another team’s item, or one the gateway never saw, is the 404 (as a reference of either form)', async () => {
    const msg = "Item with id 'msg_research_findings' not found.";
    await refused(
      gw,
      designOpenai.responses.create({ model: 'gpt-5', input: [reference('msg_research_findings')] }),
      msg,
      'input',
    );
    await refused(
      gw,
      designOpenai.responses.create({
        model: 'gpt-5',
        input: [{ role: 'user', content: 'hi' }, { id: 'msg_research_findings' } as never],
      }),
      msg,
      'input',
    );
    await refused(
      gw,
      designOpenai.responses.inputTokens.count({ model: 'gpt-5', input: [reference('fc_research_lookup')] }),
      "Item with id 'fc_research_lookup' not found.",
      'input',
    );
    await refused(
      gw,
      researchOpenai.responses.create({ model: 'gpt-5', input: [reference('msg_made_elsewhere')] }),
      "Item with id 'msg_made_elsewhere' not found.",
      'input',
    );
  });

  test('a typed item carrying another team’s item id is the 404; the team’s own and unknown ids go', async () => {
    // The provider may look a stored item up by its id (a reasoning item sent back without its
    // content): an id of another team's item is refused like a reference to it.
    const typed = [
      { type: 'reasoning', id: 'rs_research_thoughts', summary: [] },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_research_findings',
        content: [{ type: 'output_text', text: 'x' }],
      },
      { role: 'assistant', id: 'msg_research_findings', content: 'x' },
      {
        type: 'function_call',
        id: 'fc_research_lookup',
        call_id: 'call_r1',
        name: 'lookup',
        arguments: '{}',
      },
    ];
    for (const item of typed) {
      const input = [{ role: 'user', content: 'hi' }, item, { role: 'user', content: 'and?' }] as never;
      const msg = `Item with id '${item.id}' not found.`;
      await refused(gw, designOpenai.responses.create({ model: 'gpt-5', input }), msg, 'input');
      await refused(gw, designOpenai.responses.inputTokens.count({ model: 'gpt-5', input }), msg, 'input');
      // Research sends its own items back as it pleases.
      await researchOpenai.responses.create({ model: 'gpt-5', input });
      assert.deepEqual(gw.fake.requests.at(-1)?.json?.input, input);
    }
    // An id the gateway never logged (the client's own, or items of a `store: false` answer) goes.
    const unknown = [
      { type: 'reasoning', id: 'rs_never_logged', summary: [] },
      { role: 'user', content: 'go' },
    ];
    await designOpenai.responses.create({ model: 'gpt-5', input: unknown as never });
    assert.deepEqual(gw.fake.requests.at(-1)?.json?.input, unknown);
    // Asked twice within a turn or across turns, still refused (the owner is remembered, never loosened).
    await refused(
      gw,
      designOpenai.responses.create({ model: 'gpt-5', input: [typed[0]] as never }),
      "Item with id 'rs_research_thoughts' not found.",
      'input',
    );
  });

  test('typedItemIds: items with a type or a role and an id, each once; never references', () => {
    assert.deepEqual(
      typedItemIds([
        { type: 'item_reference', id: 'a' },
        { id: 'b' },
        { type: 'reasoning', id: 'rs_c', summary: [] },
        { role: 'assistant', id: 'msg_d', content: 'x' },
        { type: 'message', role: 'user', id: 'msg_e', content: [] },
        { type: 'reasoning', id: 'rs_c' },
        { type: 'message', role: 'user', content: [] },
        { type: 'message', id: '' },
        'text',
      ]),
      ['rs_c', 'msg_d', 'msg_e'],
    );
    assert.deepEqual(typedItemIds('a string input'), []);
  });

  test('a conversation is the 404 for a team key (none was created through the gateway), as a string or {id}', async () => {
    const msg = "Conversation with id 'conv_abc123' not found.";
    await refused(
      gw,
      researchOpenai.responses.create({ model: 'gpt-5', input: 'hi', conversation: 'conv_abc123' }),
      msg,
      'conversation',
    );
    await refused(
      gw,
      designOpenai.responses.create({ model: 'gpt-5', input: 'hi', conversation: { id: 'conv_abc123' } }),
      msg,
      'conversation',
    );
    await refused(
      gw,
      researchOpenai.responses.inputTokens.count({ model: 'gpt-5', input: 'x', conversation: 'conv_abc123' }),
      msg,
      'conversation',
    );
    await assert.rejects(
      researchOpenai.responses.create({ model: 'gpt-5', input: 'hi', conversation: 7 as never }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'conversation',
    );
  });

  test('an admin key reaches any item and conversation: forwarded as sent', async () => {
    const input = [reference('msg_research_findings'), reference('msg_made_elsewhere')];
    // The provider holds no 'msg_made_elsewhere': its own 404 comes back.
    await providersNotFound(
      adminOpenai.responses.create({ model: 'gpt-5', input, conversation: 'conv_abc123' }),
      'msg_made_elsewhere',
    );
    const sent = gw.fake.requests.at(-1)?.json;
    assert.deepEqual(sent?.input, input);
    assert.equal(sent?.conversation, 'conv_abc123');
  });

  test('itemReferenceIds: typed references and untyped items with an id, each once; never messages or typed items', () => {
    assert.deepEqual(
      itemReferenceIds([
        { type: 'item_reference', id: 'a' },
        { id: 'b' },
        { id: 'c', type: null },
        { type: 'item_reference', id: 'a' },
        { role: 'assistant', id: 'msg_d', content: 'x' },
        { type: 'message', role: 'user', id: 'msg_e', content: [] },
        { type: 'reasoning', id: 'rs_f', summary: [] },
        { type: 'item_reference' },
        'text',
      ]),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(itemReferenceIds('a string input'), []);
  });
});

describe('no teams: item references and conversations are forwarded as they are', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test('any caller’s references and conversation reach the provider', async () => {
    const openai = client(gw, 'sk-user-a');
    const input = [reference('msg_never_seen')];
    await providersNotFound(
      openai.responses.create({ model: 'gpt-5', input, conversation: { id: 'conv_x' } }),
      'msg_never_seen',
    );
    const sent = gw.fake.requests.at(-1)?.json;
    assert.deepEqual(sent?.input, input);
    assert.deepEqual(sent?.conversation, { id: 'conv_x' });
  });
});
