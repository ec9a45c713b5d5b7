/**
 * The file store's chat index at the HTTP surface across restarts (SPEC sections 6 and 13): an
 * index damaged after a clean stop, chat files added and removed by hand while the gateway was
 * stopped, and a chat whose id is an older log's id plus `.v5` (the name earlier builds gave the
 * older log's converted copy).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';
import { copyChat, damageChatRows } from '../../chat-log/test-index-files.ts';

const dirs: string[] = [];
const running = new Set<TestGateway>();
after(async () => {
  await Promise.all([...running].map((gw) => gw.close().catch(() => undefined)));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'oda-index-e2e-'));
  dirs.push(dir);
  return dir;
}

async function start(dir: string): Promise<TestGateway> {
  const gw = await startGateway({ dataDir: dir });
  running.add(gw);
  return gw;
}

async function stop(gw: TestGateway): Promise<void> {
  running.delete(gw);
  await gw.close();
}

/** The ids of the first page of `GET /v1/sessions`, asserting a 200. */
async function listed(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/sessions?limit=50`);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return (JSON.parse(text) as { data: Array<{ id: string }> }).data.map((c) => c.id);
}

async function createChats(gw: TestGateway, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const res = await fetch(`${gw.url}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id }),
    });
    assert.equal(res.status, 201, await res.text());
    gw.clock.advance(1000);
  }
}

async function chatTurn(gw: TestGateway, session: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: `hello ${session}` }] }),
  });
  await res.text();
  return res.status;
}

const skip = testStoreIsRedis && 'the file store';

describe('the chat index across restarts (file store)', { skip, timeout: 120_000 }, () => {
  test('an index damaged after a clean stop is rebuilt: GET /v1/sessions answers 200 at every start', async () => {
    const dir = dataDir();
    let gw = await start(dir);
    await createChats(gw, ['a', 'b', 'c']);
    await stop(gw);
    damageChatRows(dir);
    for (let restart = 0; restart < 3; restart++) {
      gw = await start(dir);
      const expected = restart === 0 ? ['c', 'b', 'a'] : ['a', 'c', 'b'];
      assert.deepEqual(await listed(gw), expected, `restart ${restart}`);
      // Every gateway's clock starts at the same time: later than the chats, this turn is newest.
      gw.clock.advance(10_000);
      assert.equal(await chatTurn(gw, 'a'), 200);
      assert.equal((await listed(gw))[0], 'a', 'the model call moved its chat to the top');
      await stop(gw);
    }
  });

  test('chat files added and removed by hand while the gateway was stopped are listed as they are', async () => {
    const dir = dataDir();
    let gw = await start(dir);
    await createChats(gw, ['c1', 'c2', 'c3']);
    assert.deepEqual(await listed(gw), ['c3', 'c2', 'c1']);
    await stop(gw);
    copyChat(join(dir, 'chats'), 'c1', 'c9');
    rmSync(join(dir, 'chats', 'c2.jsonl'));
    gw = await start(dir);
    // c9 is a copy of c1: the same last activity, ordered by id.
    assert.deepEqual(await listed(gw), ['c3', 'c9', 'c1']);
    assert.equal((await fetch(`${gw.url}/v1/sessions/c2`)).status, 404);
    assert.equal((await fetch(`${gw.url}/v1/sessions/c9`)).status, 200);
    await stop(gw);
  });

  test('chat <older log>.v5 is a chat of its own; the older log, converted, is listed once', async () => {
    const dir = dataDir();
    const chats = join(dir, 'chats');
    mkdirSync(chats, { recursive: true });
    const v4 = readFileSync(new URL('../../chat-log/__fixtures__/v4.jsonl', import.meta.url), 'utf8');
    writeFileSync(join(chats, 'fixture-v4.jsonl'), v4);
    // The converted copy an earlier build left, under the name of chat fixture-v4.v5.
    writeFileSync(join(chats, 'fixture-v4.v5.jsonl'), v4.replace(/^\{"version":4,/, '{"version":5,'));
    const gw = await start(dir);
    assert.equal(await chatTurn(gw, 'fixture-v4.v5'), 200);
    const res = await fetch(`${gw.url}/v1/sessions/fixture-v4.v5`);
    const body = await res.text();
    assert.equal(res.status, 200, body);
    assert.equal((JSON.parse(body) as { header: { id: string } }).header.id, 'fixture-v4.v5');
    assert.deepEqual((await listed(gw)).sort(), ['fixture-v4', 'fixture-v4.v5']);
    const older = await fetch(`${gw.url}/v1/sessions/fixture-v4/events`);
    assert.equal(older.status, 200);
    assert.equal(
      ((await older.json()) as { events: unknown[] }).events.length,
      v4.trimEnd().split('\n').length - 1,
    );
    await stop(gw);
  });
});
