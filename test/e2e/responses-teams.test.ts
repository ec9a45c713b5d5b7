/**
 * Stored responses belong to the team whose request created them (SPEC section 9). With teams the
 * gateway's own provider key fetches them, so the gateway decides: another team cannot read,
 * continue (`previous_response_id`), cancel, list the input of, or delete a team's response; an id
 * the gateway never saw is refused the same way; admin keys reach them all.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Caller } from '../../server/auth.ts';
import { checkPreviousResponse } from '../../server/response-access.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { refusedNotFound, startTeamsGateway, type TeamsGateway } from '../helpers/responses-teams.ts';

function client(gw: TestGateway, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
}

/** The gateway's 404 for a response the caller may not reach, the provider not asked. */
const refused = (gw: TestGateway, call: Promise<unknown>, id: string) =>
  refusedNotFound(gw, call, `Response with id '${id}' not found.`);

describe('teams: a stored response is reached only by the team that created it, and admins', () => {
  let gw: TestGateway;
  let researchOpenai: OpenAI;
  let designOpenai: OpenAI;
  let adminOpenai: OpenAI;
  let teams: TeamsGateway;
  before(async () => {
    teams = await startTeamsGateway();
    ({ gw, research: researchOpenai, design: designOpenai, admin: adminOpenai } = teams);
  });
  after(async () => {
    await teams.close();
  });

  test('the creating team reads, lists, continues and deletes its response, with the gateway’s key', async () => {
    const created = await researchOpenai.responses.create({ model: 'gpt-5', input: 'research notes' });
    const got = await researchOpenai.responses.retrieve(created.id);
    assert.equal(got.id, created.id);
    assert.equal(gw.fake.requests.at(-1)?.headers.authorization, 'Bearer sk-gateway');
    const items = await researchOpenai.responses.inputItems.list(created.id);
    assert.ok(items.data.length >= 1, 'items.data.length >= 1');
    const next = await researchOpenai.responses
      .create({ model: 'gpt-5', input: 'and then?', previous_response_id: created.id })
      .withResponse();
    assert.equal(gw.fake.requests.at(-1)?.json?.previous_response_id, created.id);
    // The continuation is logged in the chat that logged the first response.
    const owner = await gw.gateway.context.responseOwners.get(created.id);
    assert.equal(owner?.team, 'research');
    assert.equal(next.response.headers.get('x-session-id'), owner?.chatId);
    await researchOpenai.responses.delete(created.id);
    assert.equal(gw.fake.requests.at(-1)?.method, 'DELETE');
  });

  test('another team cannot read, list, cancel, continue, count or delete it: 404, nothing sent', async () => {
    const { id } = await researchOpenai.responses.create({
      model: 'gpt-5',
      input: 'private',
      background: true,
    });
    await refused(gw, designOpenai.responses.retrieve(id), id);
    await refused(gw, designOpenai.responses.retrieve(id, { stream: true }), id);
    await refused(gw, designOpenai.responses.inputItems.list(id), id);
    await refused(gw, designOpenai.responses.cancel(id), id);
    await refused(gw, designOpenai.responses.delete(id), id);
    await refused(
      gw,
      designOpenai.responses.create({ model: 'gpt-5', input: 'steal', previous_response_id: id }),
      id,
    );
    await refused(
      gw,
      designOpenai.responses.inputTokens.count({ model: 'gpt-5', input: 'x', previous_response_id: id }),
      id,
    );
    // Still there for its own team.
    assert.equal((await researchOpenai.responses.retrieve(id)).id, id);
  });

  test('an id the gateway never saw is refused the same way (it may be another gateway user’s)', async () => {
    await refused(gw, researchOpenai.responses.retrieve('resp_made_elsewhere'), 'resp_made_elsewhere');
    await refused(
      gw,
      researchOpenai.responses.create({
        model: 'gpt-5',
        input: 'x',
        previous_response_id: 'resp_made_elsewhere',
      }),
      'resp_made_elsewhere',
    );
  });

  test('an admin key reaches every team’s response, and ids the gateway never saw', async () => {
    const { id } = await researchOpenai.responses.create({
      model: 'gpt-5',
      input: 'for the admin',
      background: true,
    });
    assert.equal((await adminOpenai.responses.retrieve(id)).id, id);
    assert.ok(
      (await adminOpenai.responses.inputItems.list(id)).data.length >= 1,
      '(await adminOpenai.responses.inputItems.list(id)).data.length >= 1',
    );
    assert.equal((await adminOpenai.responses.cancel(id)).status, 'cancelled');
    await adminOpenai.responses.create({ model: 'gpt-5', input: 'continue', previous_response_id: id });
    assert.equal(gw.fake.requests.at(-1)?.json?.previous_response_id, id);
    await adminOpenai.responses.delete(id);
    await assert.rejects(adminOpenai.responses.retrieve('resp_made_elsewhere'), OpenAI.NotFoundError);
    assert.equal(gw.fake.requests.at(-1)?.path, '/v1/responses/resp_made_elsewhere');
  });

  test('checkPreviousResponse: the owner for its team and admins, the 404 for others, 400 for a non-string', async () => {
    const { id } = await researchOpenai.responses.create({ model: 'gpt-5', input: 'owned' });
    const app = gw.gateway.context;
    const team = (name: string): Caller => ({ team: name, admin: false, identity: `team:${name}` });
    const owner = await checkPreviousResponse(app, { previous_response_id: id }, team('research'));
    assert.equal(owner?.team, 'research');
    assert.equal(owner?.provider, 'fake-openai');
    assert.deepEqual(
      await checkPreviousResponse(
        app,
        { previous_response_id: id },
        { team: undefined, admin: true, identity: 'admin' },
      ),
      owner,
    );
    await assert.rejects(checkPreviousResponse(app, { previous_response_id: id }, team('design')), {
      status: 404,
      param: 'previous_response_id',
    });
    await assert.rejects(
      checkPreviousResponse(app, { previous_response_id: 'bad id/../x' }, team('research')),
      {
        status: 404,
      },
    );
    await assert.rejects(checkPreviousResponse(app, { previous_response_id: 7 }, team('research')), {
      status: 400,
      message: 'previous_response_id must be a string',
    });
    assert.equal(await checkPreviousResponse(app, { input: 'no previous' }, team('design')), undefined);
    assert.equal(await checkPreviousResponse(app, { previous_response_id: null }, team('design')), undefined);
  });
});

describe('no teams: stored responses are forwarded as they are', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test('any caller reaches any id (the provider’s own key decides); previous_response_id is not checked', async () => {
    const a = client(gw, 'sk-user-a');
    const b = client(gw, 'sk-user-b');
    const { id } = await a.responses.create({ model: 'gpt-5', input: 'hello' });
    assert.equal((await b.responses.retrieve(id)).id, id);
    assert.equal(gw.fake.requests.at(-1)?.headers.authorization, 'Bearer sk-user-b');
    // The provider's own answer, not the gateway's: it was asked.
    await assert.rejects(
      b.responses.create({ model: 'gpt-5', input: 'next', previous_response_id: 'resp_unknown_to_gateway' }),
      /Previous response with id 'resp_unknown_to_gateway' not found/,
    );
    assert.equal(gw.fake.requests.at(-1)?.json?.previous_response_id, 'resp_unknown_to_gateway');
  });
});
