/**
 * Two Responses API flows of the official `openai` SDK through the gateway, against a fake that
 * answers them as the API does: background mode (`background: true`, answered queued with no
 * output, then polled with `responses.retrieve` until it is done, or cancelled), with teams; and
 * `responses.inputItems.list` paged by the SDK (`limit`, `after`, `order`), each page a forwarded
 * call. What the client got and what the provider received.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { responsesMessage } from '../fake-provider/fake-responses.ts';
import { refusedNotFound, startTeamsGateway, type TeamsGateway } from '../helpers/responses-teams.ts';

describe('background responses and paged input items, with teams', () => {
  let teams: TeamsGateway;
  before(async () => {
    teams = await startTeamsGateway();
  });
  after(() => teams.close());

  test('background: queued at once, polled until done by its team; another team gets 404 and sends nothing', async () => {
    const { gw, research, design } = teams;
    gw.fake.script({ responses: { output: [responsesMessage('the long answer', 'msg_bg')] } });
    const queued = await research.responses.create({ model: 'gpt-5', input: 'a long job', background: true });
    assert.equal(queued.status, 'queued');
    assert.deepEqual(queued.output, []);

    let polled = await research.responses.retrieve(queued.id);
    for (let i = 0; i < 5 && (polled.status === 'queued' || polled.status === 'in_progress'); i++) {
      polled = await research.responses.retrieve(queued.id);
    }
    assert.equal(polled.status, 'completed');
    assert.equal(polled.output_text, 'the long answer');
    const poll = gw.fake.requests.at(-1)!;
    assert.equal(poll.method, 'GET');
    assert.equal(poll.path, `/v1/responses/${queued.id}`);
    assert.equal(poll.headers.authorization, 'Bearer sk-gateway');

    const notFound = `Response with id '${queued.id}' not found.`;
    await refusedNotFound(gw, design.responses.retrieve(queued.id), notFound);
    await refusedNotFound(gw, design.responses.cancel(queued.id), notFound);
  });

  test('background: its team cancels it while it runs; the provider’s cancelled response comes back', async () => {
    const { gw, research, design } = teams;
    const queued = await research.responses.create({ model: 'gpt-5', input: 'never mind', background: true });
    await refusedNotFound(
      gw,
      design.responses.cancel(queued.id),
      `Response with id '${queued.id}' not found.`,
    );
    const cancelled = await research.responses.cancel(queued.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(cancelled.output, []);
    const sent = gw.fake.requests.at(-1)!;
    assert.equal(`${sent.method} ${sent.path}`, `POST /v1/responses/${queued.id}/cancel`);
    assert.equal((await research.responses.retrieve(queued.id)).status, 'cancelled');
  });

  test('inputItems.list: the SDK pages through every item, each page a call with after and limit', async () => {
    const { gw, research, design } = teams;
    const input = [1, 2, 3, 4, 5].map((n) => ({ role: 'user' as const, content: `note ${n}` }));
    const created = await research.responses.create({ model: 'gpt-5', input });
    const before = gw.fake.requests.length;

    const texts: string[] = [];
    for await (const item of research.responses.inputItems.list(created.id, { limit: 2, order: 'asc' })) {
      assert.equal(item.type, 'message');
      const part = item.type === 'message' ? item.content[0] : undefined;
      texts.push(part && 'text' in part ? part.text : '');
    }
    assert.deepEqual(texts, ['note 1', 'note 2', 'note 3', 'note 4', 'note 5']);

    const pages = gw.fake.requests.slice(before).map((r) => new URL(r.path, 'http://x'));
    assert.equal(pages.length, 3, 'three pages of at most two');
    assert.ok(pages.every((u) => u.pathname === `/v1/responses/${created.id}/input_items`));
    assert.deepEqual(
      pages.map((u) => [u.searchParams.get('limit'), u.searchParams.get('order')]),
      [
        ['2', 'asc'],
        ['2', 'asc'],
        ['2', 'asc'],
      ],
    );
    assert.equal(pages[0]!.searchParams.get('after'), null);
    assert.match(pages[1]!.searchParams.get('after') ?? '', /^msg_/);

    // Newest first by default, as the API lists them.
    const newest = await research.responses.inputItems.list(created.id, { limit: 1 });
    const first = newest.data[0];
    assert.ok(first?.type === 'message' && first.content[0]?.type === 'input_text');
    assert.equal(first.content[0].text, 'note 5');

    await refusedNotFound(
      gw,
      design.responses.inputItems.list(created.id, { limit: 2 }),
      `Response with id '${created.id}' not found.`,
    );
  });
});
