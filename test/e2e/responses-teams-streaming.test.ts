/**
 * With teams, a response belongs to the team that created it from the moment its id is known
 * (SPEC section 9): a team retrieves and cancels its background stream while it still runs, not
 * only once its answer is logged, and another team still cannot. An id the gateway already holds
 * for another team is never handed over by a later answer that names it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { responsesEvents, responsesMessage, responsesObject } from '../fake-provider/fake-responses.ts';
import type { TestGateway } from '../helpers/start-gateway.ts';
import { refusedNotFound, startTeamsGateway, type TeamsGateway } from '../helpers/responses-teams.ts';

/** The gateway's 404 for a response the caller may not reach, the provider not asked. */
const refused = (gw: TestGateway, call: Promise<unknown>, id: string) =>
  refusedNotFound(gw, call, `Response with id '${id}' not found.`);

describe('teams: a streamed response is its team’s as soon as its id is known', () => {
  let gw: TestGateway;
  let researchOpenai: OpenAI;
  let designOpenai: OpenAI;
  let teams: TeamsGateway;
  before(async () => {
    teams = await startTeamsGateway();
    ({ gw, research: researchOpenai, design: designOpenai } = teams);
  });
  after(async () => {
    await teams.close();
  });

  test('mid-stream, the creating team retrieves and cancels its background response; another team gets 404', async () => {
    let release = (): void => undefined;
    const until = new Promise<void>((resolve) => (release = resolve));
    // created, in_progress, output_item.added, content_part.added, the first delta: then held.
    gw.fake.script({
      responses: {
        output: [responsesMessage('a long background job', 'msg_held')],
        holdAfter: { events: 5, until },
      },
    });
    try {
      const stream = await researchOpenai.responses.create({
        model: 'gpt-5',
        input: 'start the long job',
        stream: true,
        background: true,
      });
      let id: string | undefined;
      const types: string[] = [];
      for await (const event of stream) {
        types.push(event.type);
        if (event.type !== 'response.created') continue;
        id = event.response.id;
        // The provider holds the rest of the stream: the answer is not logged yet.
        assert.equal((await researchOpenai.responses.retrieve(id)).id, id);
        await refused(gw, designOpenai.responses.retrieve(id), id);
        await refused(gw, designOpenai.responses.cancel(id), id);
        assert.equal((await researchOpenai.responses.cancel(id)).status, 'cancelled');
        assert.equal(gw.fake.requests.at(-1)?.path, `/v1/responses/${id}/cancel`);
        assert.equal(gw.fake.requests.at(-1)?.headers.authorization, 'Bearer sk-gateway');
        release();
      }
      assert.ok(id, 'the stream named its response');
      assert.equal(types.at(-1), 'response.completed', 'the stream went on to its end');
      const owner = await gw.gateway.context.responseOwners.get(id);
      assert.equal(owner?.team, 'research');
      assert.equal(owner?.provider, 'fake-openai');
      // Once logged, still the creating team's, and continued in the chat that logged it.
      const next = await researchOpenai.responses
        .create({ model: 'gpt-5', input: 'and then?', previous_response_id: id })
        .withResponse();
      assert.equal(next.response.headers.get('x-session-id'), owner?.chatId);
    } finally {
      release();
    }
  });

  test('an answer naming an id another team already owns leaves it with that team', async () => {
    const owners = gw.gateway.context.responseOwners;
    await owners.set('resp_taken', { chatId: 'design-chat', team: 'design', provider: 'fake-openai' });
    const response = responsesObject(
      { model: 'gpt-5', input: 'x' },
      { output: [responsesMessage('hi', 'msg_taken')] },
      'resp_taken',
      1_767_225_600,
      1,
    );
    gw.fake.script({ sse: responsesEvents(response) }, { json: response });
    const stream = await researchOpenai.responses.create({ model: 'gpt-5', input: 'x', stream: true });
    for await (const event of stream) void event;
    await researchOpenai.responses.create({ model: 'gpt-5', input: 'y' });
    assert.deepEqual(await owners.get('resp_taken'), {
      chatId: 'design-chat',
      team: 'design',
      provider: 'fake-openai',
    });
    await refused(gw, researchOpenai.responses.retrieve('resp_taken'), 'resp_taken');
  });
});
