/**
 * Listing chats by page and reading a log in bounded parts (SPEC sections 13 and 14), end to end:
 * `GET /v1/sessions` with limit, cursor and filters in the caller's team view, the same pages after
 * a restart, `GET /v1/sessions/{id}/events` cut at 1,000 events or 8 MB with the next offset and
 * streamed, and the process metrics in `/metrics`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';
import { newKey } from '../../server/cli-keys.ts';
import type { NewEvent } from '../../chat-log/format/current.ts';

const research = newKey();
const design = newKey();
const admin = newKey();
const teams = {
  teams: [
    { name: 'research', keys: [research.hash], requestsPerMinute: 100_000 },
    { name: 'design', keys: [design.hash], requestsPerMinute: 100_000 },
  ],
  adminKeys: [admin.hash],
};

interface ListPage {
  object: string;
  data: Array<{ id: string; eventCount: number; lastActivityAt: number; team?: string; cwd?: string }>;
  has_more: boolean;
  next_cursor: string | null;
  sessions: unknown[];
}

async function call(gw: TestGateway, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

async function page(gw: TestGateway, key: string, query: string): Promise<ListPage> {
  const a = await call(gw, key, 'GET', `/v1/sessions${query}`);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  return a.body as unknown as ListPage;
}

/** Every page of a listing, following next_cursor. */
async function walk(gw: TestGateway, key: string, query: string): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const p = await page(gw, key, `${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(p.object, 'list');
    assert.deepEqual(p.sessions, p.data, 'sessions repeats data for clients written before paging');
    assert.equal(p.has_more, p.next_cursor !== null);
    pages.push(p.data.map((s) => s.id));
    cursor = p.next_cursor;
  } while (cursor);
  return pages;
}

describe('GET /v1/sessions: pages in the caller’s view', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oda-paging-'));
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: teams, dataDir });
    // research: proj-0..proj-4 and misc-0, misc-1; design: d-0..d-2; one second apart.
    for (const [key, id] of [
      ...['proj-0', 'proj-1', 'misc-0', 'proj-2', 'proj-3', 'misc-1', 'proj-4'].map((id) => [
        research.key,
        id,
      ]),
      ...['d-0', 'd-1', 'd-2'].map((id) => [design.key, id]),
    ] as Array<[string, string]>) {
      assert.equal((await call(gw, key, 'POST', '/v1/sessions', { id, cwd: `/src/${id}` })).status, 201);
      gw.clock.advance(1000);
    }
  });
  after(async () => {
    await gw.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('a team pages through its own chats only, newest first, with a cursor', async () => {
    assert.deepEqual(await walk(gw, research.key, '?limit=3'), [
      ['t:research:proj-4', 't:research:misc-1', 't:research:proj-3'],
      ['t:research:proj-2', 't:research:misc-0', 't:research:proj-1'],
      ['t:research:proj-0'],
    ]);
    const first = await page(gw, research.key, '?limit=1');
    assert.deepEqual(first.data[0], {
      id: 't:research:proj-4',
      createdAt: first.data[0]!.lastActivityAt,
      team: 'research',
      cwd: '/src/proj-4',
      eventCount: 0,
      lastActivityAt: first.data[0]!.lastActivityAt,
    });
    assert.deepEqual(await walk(gw, design.key, '?limit=50'), [
      ['t:design:d-2', 't:design:d-1', 't:design:d-0'],
    ]);
    // Another team's name as a filter finds nothing.
    assert.deepEqual((await page(gw, research.key, '?team=design')).data, []);
  });

  test('a model call moves its chat to the top; the provider got the call', async () => {
    gw.clock.advance(1000);
    const before = gw.fake.requests.length;
    const a = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${research.key}`,
        'x-session-id': 'proj-1',
      },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'wake up' }] }),
    });
    assert.equal(a.status, 200);
    assert.equal(gw.fake.requests.length, before + 1);
    assert.match(JSON.stringify(gw.fake.requests.at(-1)?.json), /wake up/);
    const top = (await page(gw, research.key, '?limit=2')).data;
    assert.deepEqual(
      top.map((s) => s.id),
      ['t:research:proj-1', 't:research:proj-4'],
    );
    assert.ok(top[0]!.eventCount > 0);
  });

  test('filters: id prefix (inside the team’s namespace), id substring, last-activity range', async () => {
    const ids = async (key: string, q: string) => (await page(gw, key, q)).data.map((s) => s.id);
    assert.deepEqual(await ids(research.key, '?id_prefix=misc'), ['t:research:misc-1', 't:research:misc-0']);
    assert.deepEqual(await ids(research.key, '?id_prefix=t:research:misc-0'), ['t:research:misc-0']);
    assert.deepEqual(await ids(admin.key, '?id_contains=-2'), ['t:design:d-2', 't:research:proj-2']);
    const all = (await page(gw, admin.key, '?limit=500')).data;
    assert.equal(all.length, 10);
    const d1 = all.find((s) => s.id === 't:design:d-1')!.lastActivityAt;
    assert.deepEqual(await ids(admin.key, `?from=${d1}&to=${d1 + 1000}`), ['t:design:d-1']);
    assert.deepEqual(await ids(admin.key, `?from=${new Date(d1).toISOString()}&team=design`), [
      't:design:d-2',
      't:design:d-1',
    ]);
    assert.deepEqual(await ids(admin.key, '?team=design&limit=1'), ['t:design:d-2']);
  });

  test('bad paging parameters are 400s that name the parameter', async () => {
    const cases: Array<[string, string]> = [
      ['?limit=0', 'limit'],
      ['?limit=501', 'limit'],
      ['?limit=abc', 'limit'],
      ['?limit=1&limit=2', 'limit'],
      ['?cursor=not-a-cursor', 'cursor'],
      [`?cursor=${Buffer.from('[1,"../x"]').toString('base64url')}`, 'cursor'],
      ['?from=yesterday', 'from'],
      [`?id_prefix=${'x'.repeat(129)}`, 'id_prefix'],
    ];
    for (const [query, param] of cases) {
      const a = await call(gw, admin.key, 'GET', `/v1/sessions${query}`);
      assert.equal(a.status, 400, query);
      const error = a.body.error as { param: string; message: string; code: string };
      assert.equal(error.param, param, query);
      assert.equal(error.code, 'ODA_ERR_INVALID_REQUEST');
      assert.ok(error.message.startsWith(param), error.message);
    }
  });

  test('after a restart the same pages come back', async () => {
    const before = await walk(gw, admin.key, '?limit=4');
    await gw.close();
    gw = await startGateway({ config: teams, dataDir });
    assert.deepEqual(await walk(gw, admin.key, '?limit=4'), before);
    assert.deepEqual(before.flat().length, 10);
  });
});

describe('GET /v1/sessions/{id}/events: bounded, streamed reads', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  const say = (text: string): NewEvent => ({
    type: 'message',
    role: 'user',
    content: [{ kind: 'text', text }],
  });

  async function events(path: string) {
    const res = await fetch(`${gw.url}${path}`);
    assert.equal(res.status, 200);
    const text = await res.text();
    const body = JSON.parse(text) as {
      events: Array<{ seq: number }>;
      next: number;
      next_offset: number | null;
    };
    return { res, text, body };
  }

  test('at most 1,000 events per call, with the next offset while more remain', async () => {
    const log = gw.gateway.context.chatLog;
    await log.createChat({ id: 'long' });
    for (let i = 0; i < 1500; i += 250) {
      await log.append(
        'long',
        Array.from({ length: 250 }, (_, k) => say(`event ${i + k}`)),
      );
    }
    const first = await events('/v1/sessions/long/events');
    assert.equal(first.body.events.length, 1000);
    assert.deepEqual(
      first.body.events.map((e) => e.seq),
      Array.from({ length: 1000 }, (_, i) => i),
    );
    assert.equal(first.body.next_offset, 1000);
    assert.equal(first.body.next, 1000);
    assert.equal(first.res.headers.get('transfer-encoding'), 'chunked', 'streamed, no length known up front');
    assert.equal(first.res.headers.get('content-length'), null);
    const rest = await events('/v1/sessions/long/events?offset=1000&length=5000');
    assert.equal(rest.body.events.length, 500);
    assert.equal(rest.body.next_offset, null);
    const some = await events('/v1/sessions/long/events?offset=10&length=3');
    assert.deepEqual(
      some.body.events.map((e) => e.seq),
      [10, 11, 12],
    );
    assert.equal(some.body.next_offset, 13);
    assert.deepEqual(await log.read('long', 10, 3), some.body.events, 'the events as stored');
  });

  test('at most 8 MB of events per call; one larger event comes alone', async () => {
    const log = gw.gateway.context.chatLog;
    await log.createChat({ id: 'heavy' });
    const mb = 1024 * 1024;
    for (let i = 0; i < 10; i++) await log.append('heavy', [say(`${i}`.padEnd(mb, 'x'))]);
    await log.append('heavy', [say('big'.padEnd(9 * mb, 'y')), say('after')]);
    const first = await events('/v1/sessions/heavy/events');
    assert.equal(first.body.events.length, 7, '7 events of just over 1 MB fit in 8 MB, 8 do not');
    assert.ok(first.text.length <= 8 * mb + 1024, `${first.text.length} bytes`);
    assert.equal(first.body.next_offset, 7);
    const second = await events('/v1/sessions/heavy/events?offset=7');
    assert.deepEqual(
      second.body.events.map((e) => e.seq),
      [7, 8, 9],
    );
    const big = await events(`/v1/sessions/heavy/events?offset=${second.body.next_offset}`);
    assert.deepEqual(
      big.body.events.map((e) => e.seq),
      [10],
    );
    assert.equal(big.body.next_offset, 11);
    const last = await events('/v1/sessions/heavy/events?offset=11');
    assert.deepEqual(last.body, {
      events: [await log.read('heavy', 11, 1)].flat(),
      next: 12,
      next_offset: null,
    });
  });
});

describe('/metrics: process and chat memory', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test('resident memory, event-loop lag and the chats held in memory are exported', async () => {
    await gw.gateway.context.chatLog.createChat({ id: 'metered' });
    await gw.gateway.context.chatLog.open('metered');
    await fetch(`${gw.url}/metrics`);
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const value = (name: string) => {
      const m = new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} ([0-9.e+-]+)$`, 'm').exec(text);
      assert.ok(m, `${name} in:\n${text.slice(0, 2000)}`);
      return Number(m[1]);
    };
    assert.ok(value('process_resident_memory_bytes') > 10 * 1024 * 1024);
    assert.ok(value('nodejs_heap_size_used_bytes') > 0);
    assert.ok(value('nodejs_eventloop_lag_seconds') >= 0);
    assert.ok(value('nodejs_eventloop_lag_p99_seconds') >= 0);
    assert.ok(value('process_cpu_seconds_total') > 0);
    assert.equal(value('oda_open_chats{kind="read_models"}'), 1);
    assert.ok(value('oda_open_chats{kind="log_state"}') >= 1);
    assert.equal(value('oda_chat_index_rebuilding'), 0);
    if (!testStoreIsRedis) assert.equal(value('oda_chat_index_chats'), 1);
  });
});
