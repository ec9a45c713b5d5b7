import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../lib/sha256.ts';
import { FileLogBackend } from './store-file.ts';
import { RedisLogBackend } from './store-redis.ts';
import {
  FileResponseOwners,
  RedisResponseOwners,
  responseOwnersFor,
  type ResponseOwners,
} from './response-owners.ts';
import { dropPrefix, keysUnder, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';

const dirs: string[] = [];
const prefixes: string[] = [];
const backends: RedisLogBackend[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'oda-owners-'));
  dirs.push(d);
  return d;
}

after(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await Promise.all(prefixes.map((p) => dropPrefix(p)));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The contract both stores keep. `reopen` gives a second instance on the same storage (a restart). */
function contract(name: string, open: () => { first: ResponseOwners; reopen: () => ResponseOwners }) {
  test(`${name}: an id never set is undefined; a set owner reads back, also after a restart`, async () => {
    const { first, reopen } = open();
    assert.equal(await first.get('resp_unknown'), undefined);
    await first.set('resp_a1', { chatId: 't:research:c1', team: 'research', provider: 'openai' });
    await first.set('resp_b2', { chatId: 'open-chat', provider: 'local' });
    assert.deepEqual(await first.get('resp_a1'), {
      chatId: 't:research:c1',
      team: 'research',
      provider: 'openai',
    });
    const again = reopen();
    assert.deepEqual(await again.get('resp_a1'), {
      chatId: 't:research:c1',
      team: 'research',
      provider: 'openai',
    });
    assert.deepEqual(await again.get('resp_b2'), { chatId: 'open-chat', provider: 'local' });
    assert.equal(await again.get('resp_unknown'), undefined);
  });

  test(`${name}: set replaces; only the owner's fields are kept; ids differing in case are two ids`, async () => {
    const { first } = open();
    await first.set('resp_x', { chatId: 'c1', team: 'a', provider: 'p' });
    await first.set('resp_x', { chatId: 'c2', provider: 'q', ...{ extra: 1 } });
    await first.set('RESP_X', { chatId: 'c3', provider: 'p' });
    assert.deepEqual(await first.get('resp_x'), { chatId: 'c2', provider: 'q' });
    assert.deepEqual(await first.get('RESP_X'), { chatId: 'c3', provider: 'p' });
  });

  test(`${name}: an empty chat id or provider is refused and stores nothing`, async () => {
    const { first } = open();
    await assert.rejects(first.set('resp_bad', { chatId: '', provider: 'p' }));
    await assert.rejects(first.set('resp_bad', { chatId: 'c', provider: '' }));
    await assert.rejects(first.set('', { chatId: 'c', provider: 'p' }), /response id must be/);
    assert.equal(await first.get('resp_bad'), undefined);
  });
}

describe('FileResponseOwners', () => {
  contract('file', () => {
    const dir = tempDir();
    return { first: new FileResponseOwners(dir), reopen: () => new FileResponseOwners(dir) };
  });

  test('one small file per id in a directory sharded by the id digest; any id is a safe name', async () => {
    const dir = tempDir();
    const owners = new FileResponseOwners(dir);
    await owners.set('../../etc/passwd', { chatId: 'c', provider: 'p' });
    const digest = sha256Hex('../../etc/passwd');
    assert.deepEqual(readdirSync(join(dir, 'response-owners')), [digest.slice(0, 2)]);
    assert.deepEqual(readdirSync(join(dir, 'response-owners', digest.slice(0, 2))), [`${digest}.json`]);
    assert.deepEqual(await owners.get('../../etc/passwd'), { chatId: 'c', provider: 'p' });
  });

  test('a damaged record, or one written for another id, reads as absent', async () => {
    const dir = tempDir();
    const owners = new FileResponseOwners(dir);
    await owners.set('resp_1', { chatId: 'c', provider: 'p' });
    await owners.set('resp_2', { chatId: 'c', provider: 'p' });
    const file = (id: string) => {
      const d = sha256Hex(id);
      return join(dir, 'response-owners', d.slice(0, 2), `${d}.json`);
    };
    writeFileSync(file('resp_1'), '{"responseId":"resp_1","chatId":');
    writeFileSync(file('resp_2'), JSON.stringify({ responseId: 'resp_other', chatId: 'c', provider: 'p' }));
    assert.equal(await owners.get('resp_1'), undefined);
    assert.equal(await owners.get('resp_2'), undefined);
  });

  test('item owners live apart from response owners: the same id is two records', async () => {
    const dir = tempDir();
    const items = responseOwnersFor(new FileLogBackend({ dataDir: dir }), '/elsewhere', 'item');
    const responses = new FileResponseOwners(dir);
    await items.set('msg_1', { chatId: 'c', team: 'research', provider: 'p' });
    assert.equal(await responses.get('msg_1'), undefined);
    assert.deepEqual(await new FileResponseOwners(dir, 'item').get('msg_1'), {
      chatId: 'c',
      team: 'research',
      provider: 'p',
    });
    assert.deepEqual(readdirSync(dir), ['response-item-owners']);
    await assert.rejects(items.set('', { chatId: 'c', provider: 'p' }), /item id must be/);
  });

  test('responseOwnersFor: files beside the file store', async () => {
    const dir = tempDir();
    const owners = responseOwnersFor(new FileLogBackend({ dataDir: dir }), '/elsewhere');
    assert.ok(owners instanceof FileResponseOwners, 'owners instanceof FileResponseOwners');
    await owners.set('resp_f', { chatId: 'c', provider: 'p' });
    assert.deepEqual(await new FileResponseOwners(dir).get('resp_f'), { chatId: 'c', provider: 'p' });
  });
});

describe('RedisResponseOwners', { skip: redisSkip }, () => {
  function redisBackend(prefix: string): RedisLogBackend {
    const b = new RedisLogBackend({ url: redisUrl!, prefix });
    backends.push(b);
    return b;
  }

  contract('redis', () => {
    const prefix = uniquePrefix('owners');
    prefixes.push(prefix);
    const open = () => responseOwnersFor(redisBackend(prefix), tempDir());
    return { first: open(), reopen: open };
  });

  test('one key per id under the store prefix, on the chat log connection', async () => {
    const prefix = uniquePrefix('owners');
    prefixes.push(prefix);
    const owners = responseOwnersFor(redisBackend(prefix), tempDir());
    assert.ok(owners instanceof RedisResponseOwners, 'owners instanceof RedisResponseOwners');
    await owners.set('resp_k', { chatId: 'c', team: 't', provider: 'p' });
    assert.deepEqual(await keysUnder(prefix), [`${prefix}response:resp_k`]);
    const items = responseOwnersFor(redisBackend(prefix), tempDir(), 'item');
    await items.set('msg_k', { chatId: 'c', team: 't', provider: 'p' });
    assert.deepEqual((await keysUnder(prefix)).sort(), [
      `${prefix}response-item:msg_k`,
      `${prefix}response:resp_k`,
    ]);
    assert.equal(await owners.get('msg_k'), undefined);
  });
});
