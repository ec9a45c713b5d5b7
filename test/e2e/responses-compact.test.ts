// `POST /v1/responses/compact` through the gateway (`client.responses.compact` of the official SDK):
// a model call like `POST /v1/responses`, logged as the session's compaction side request, whose
// output (the user's messages and one opaque `compaction` item) the next turn sends back as its
// history. That history continues the main chat with the compaction recorded (SPEC section 10),
// whether the chat is named by a header or derived from the conversation.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { refusedNotFound, startTeamsGateway, type TeamsGateway } from '../helpers/responses-teams.ts';

type Input = OpenAI.Responses.ResponseInput;
const user = (text: string) => ({
  type: 'message' as const,
  role: 'user' as const,
  content: [{ type: 'input_text' as const, text }],
});

async function chatIds(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/sessions?limit=500`);
  const body = (await res.json()) as { data: Array<{ id: string }> };
  return body.data.map((s) => s.id).sort();
}

/** Turn, compact, turn: the chats each call went to and the compacted output. */
async function turnCompactTurn(openai: OpenAI, headers: Record<string, string> = {}) {
  const first = await openai.responses
    .create(
      { model: 'gpt-5', store: false, input: [user('Plan the migration of the billing service')] },
      { headers },
    )
    .withResponse();
  const history = [user('Plan the migration of the billing service'), ...first.data.output] as Input;
  const compacted = await openai.responses
    .compact({ model: 'gpt-5', input: [...history, user('Keep it short')] }, { headers })
    .withResponse();
  const next = await openai.responses
    .create(
      {
        model: 'gpt-5',
        store: false,
        input: [...compacted.data.output, user('Now write step one')] as Input,
      },
      { headers },
    )
    .withResponse();
  return {
    main: first.response.headers.get('x-session-id')!,
    side: compacted.response.headers.get('x-session-id')!,
    next: next.response.headers.get('x-session-id')!,
    compacted: compacted.data,
  };
}

describe('POST /v1/responses/compact', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  before(async () => {
    gw = await startGateway();
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
  });

  test('is forwarded to the provider and answered as the API answers it', async () => {
    const body = { model: 'gpt-5', input: [user('Summarise what we did')], instructions: 'Be brief.' };
    const compacted = await openai.responses.compact(body);
    const sent = gw.fake.requestsTo('/v1/responses/compact');
    assert.equal(sent.length, 1, 'one call reached the provider compact route');
    assert.equal(sent[0]!.method, 'POST');
    assert.deepEqual(sent[0]!.json?.input, body.input);
    assert.equal(sent[0]!.json?.instructions, 'Be brief.');
    assert.equal(compacted.object, 'response.compaction');
    assert.equal(compacted.output.at(-1)?.type, 'compaction');
    assert.ok(compacted.usage.input_tokens > 0, 'usage comes back');
  });

  test('a chat named by a header: the compaction is a side chat, the next turn continues the main chat', async () => {
    const headers = { 'x-session-id': 'billing-migration' };
    const { main, side, next, compacted } = await turnCompactTurn(openai, headers);
    assert.equal(main, 'billing-migration');
    assert.match(side, /^billing-migration\.side-compaction-[0-9a-f]{12}$/);
    assert.equal(next, 'billing-migration', 'the compacted history continues the main chat');

    const events = await sessionEvents(gw.url, main);
    const compactions = eventsOfType(events, 'compaction');
    assert.equal(compactions.length, 1, 'the compaction is recorded in the main chat');
    const messages = eventsOfType(events, 'message');
    const replacedFrom = messages.find((m) => m.seq === compactions[0]!.replaced.fromSeq);
    assert.equal(replacedFrom?.role, 'model', 'it replaced the model answer on');
    assert.equal(messages.filter((m) => m.role === 'model').length, 3, 'answer, compaction item, answer');

    // The side chat holds the compaction request and its answer, with its usage.
    const sideEvents = await sessionEvents(gw.url, side);
    const [response] = eventsOfType(sideEvents, 'response');
    assert.equal(response?.ok, true);
    assert.equal(response?.usage?.inputTokens, compacted.usage.input_tokens);
    const last = eventsOfType(sideEvents, 'message').at(-1);
    assert.equal(last?.role, 'model');
    assert.equal(last?.source?.kind, 'provider');
    assert.deepEqual(
      (await chatIds(gw)).filter((id) => id.startsWith('billing-migration.b')),
      [],
      'no branch chat',
    );

    // The session tree lists the compaction as a side conversation of the main chat.
    const read = (await (await fetch(`${gw.url}/v1/sessions/billing-migration`)).json()) as {
      conversations: { id: string; children: Array<{ id: string; kind: string; purpose?: string }> };
    };
    const entry = read.conversations.children.find((c) => c.id === side);
    assert.deepEqual(
      entry && { kind: entry.kind, purpose: entry.purpose },
      { kind: 'side', purpose: 'compaction' },
      `the side chat is in the session tree: ${JSON.stringify(read.conversations)}`,
    );
  });

  test('a chat derived from the conversation continues as well', async () => {
    const { main, side, next } = await turnCompactTurn(openai);
    assert.match(side, new RegExp(`^${main.replace(/[.:-]/g, '\\$&')}\\.side-compaction-[0-9a-f]{12}$`));
    assert.equal(next, main, 'the compacted history continues the derived chat');
    assert.equal(eventsOfType(await sessionEvents(gw.url, main), 'compaction').length, 1);
  });

  test('a compaction item the provider did not give is an edit: it branches', async () => {
    const headers = { 'x-session-id': 'billing-forged' };
    const { compacted } = await turnCompactTurn(openai, headers);
    const forged = compacted.output.map((item) =>
      item.type === 'compaction' ? { ...item, encrypted_content: 'Zm9yZ2Vk' } : item,
    );
    const edited = await openai.responses
      .create({ model: 'gpt-5', store: false, input: [...forged, user('Go on')] as Input }, { headers })
      .withResponse();
    assert.match(edited.response.headers.get('x-session-id')!, /^billing-forged\.b[0-9a-f]+$/);
  });

  test('with previous_response_id: logged in a side chat of that response’s chat', async () => {
    const created = await openai.responses
      .create({ model: 'gpt-5', input: 'Draft the release notes' })
      .withResponse();
    const chat = created.response.headers.get('x-session-id')!;
    const compacted = await openai.responses
      .compact({ model: 'gpt-5', previous_response_id: created.data.id })
      .withResponse();
    assert.equal(
      gw.fake.requestsTo('/v1/responses/compact').at(-1)?.json?.previous_response_id,
      created.data.id,
    );
    assert.match(
      compacted.response.headers.get('x-session-id')!,
      new RegExp(`^${chat.replace(/[.:-]/g, '\\$&')}\\.side-compaction-[0-9a-f]{12}$`),
    );
    // The response's own chat did not take the compaction's answer.
    const events = await sessionEvents(gw.url, chat);
    assert.equal(eventsOfType(events, 'response').length, 1);
  });

  test('a provider refusal comes back in the Responses error shape', async () => {
    gw.fake.script({
      status: 400,
      json: {
        error: { message: 'Invalid input', type: 'invalid_request_error', param: 'input', code: null },
      },
    });
    await assert.rejects(openai.responses.compact({ model: 'gpt-5', input: 'x' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.equal(err.message, '400 Invalid input');
      return true;
    });
  });
});

describe('POST /v1/responses/compact with teams', () => {
  let teams: TeamsGateway;
  before(async () => {
    teams = await startTeamsGateway();
  });
  after(async () => {
    await teams.close();
  });

  test("another team's previous_response_id is refused: 404, nothing sent", async () => {
    const { id } = await teams.research.responses.create({ model: 'gpt-5', input: 'private plans' });
    await refusedNotFound(
      teams.gw,
      teams.design.responses.compact({ model: 'gpt-5', previous_response_id: id }),
      `Response with id '${id}' not found.`,
    );
    assert.equal(teams.gw.fake.requestsTo('/v1/responses/compact').length, 0);
    // Its own team compacts it.
    const own = await teams.research.responses.compact({ model: 'gpt-5', previous_response_id: id });
    assert.equal(own.object, 'response.compaction');
  });
});
