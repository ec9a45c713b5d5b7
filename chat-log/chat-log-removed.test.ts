/**
 * A chat whose log disappears while the gateway has it in memory (its Redis keys deleted or lost,
 * its file removed by hand): it is forgotten and, absent, can be created anew, as on a gateway that
 * never saw it; nothing is acknowledged that was not stored, and no headerless file is made.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ChatLog } from './chat-log.ts';
import { FileLogBackend } from './store-file.ts';
import { RedisLogBackend } from './store-redis.ts';
import { AttachmentStore } from './attachments.ts';
import { ManualClock } from '../lib/clock.ts';
import type { Event } from './format/current.ts';
import type { LogBackend } from './store.ts';
import { T0, say, rejectsWith } from './test-batches.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';

const textOf = (e: Event) =>
  e.type === 'message' && e.content[0]?.kind === 'text' ? e.content[0].text : undefined;

const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers) await close();
});

function chatLogOn(backend: LogBackend): ChatLog {
  const dir = tempDir('oda-removed-att-');
  return new ChatLog({
    backend,
    attachments: new AttachmentStore({ dir }),
    clock: new ManualClock(T0),
    build: 'test',
  });
}

describe('a chat whose log disappears under a running gateway', () => {
  test(
    'Redis: its keys gone, the chat reads as absent and is created anew',
    { skip: redisSkip },
    async () => {
      const prefix = uniquePrefix('removed');
      const backend = new RedisLogBackend({ url: redisUrl!, prefix });
      closers.push(async () => {
        await backend.close();
        await dropPrefix(prefix);
      });
      const log = chatLogOn(backend);
      await log.createChat({ id: 'x', cwd: '/before' });
      await log.append('x', [say('old'), say('reply', 'model')]);
      assert.equal((await log.open('x'))?.count, 2, 'in memory, header cached');

      await dropPrefix(prefix); // Redis lost its data (a restart without persistence, a failover)
      assert.equal(await log.open('x'), undefined, 'absent, not a 404 until restart');
      await assert.rejects(log.append('x', [say('lost')]), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
      const created = await log.createChat({ id: 'x', cwd: '/after' });
      assert.equal(created.status, 'created');
      assert.equal(created.header.cwd, '/after');
      assert.equal((await backend.header('x'))?.cwd, '/after', 'the old header is not served from memory');
      await log.append('x', [say('new')]);
      const state = await log.open('x');
      assert.equal(state?.count, 1);
      assert.deepEqual(state?.messages.messages.length, 1);
      assert.deepEqual((await backend.read('x', 0)).map(textOf), ['new']);
    },
  );

  test('file store: its file removed, no write is acknowledged, then it is created anew', async () => {
    const dataDir = tempDir('oda-removed-');
    const backend = new FileLogBackend({ dataDir });
    closers.push(() => backend.close());
    const log = chatLogOn(backend);
    await log.createChat({ id: 'x' });
    await log.append('x', [say('old')]);
    assert.equal((await log.open('x'))?.count, 1);

    const file = join(dataDir, 'chats', 'x.jsonl');
    rmSync(file);
    // The append handle is open on the removed file: the append is refused, not written there.
    await assert.rejects(log.append('x', [say('lost')]), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    assert.equal(existsSync(file), false, 'no file made without its header');
    assert.equal(await log.open('x'), undefined);
    assert.equal((await log.createChat({ id: 'x' })).status, 'created');
    await log.append('x', [say('new')]);
    assert.equal((await log.open('x'))?.count, 1);
    assert.deepEqual((await backend.read('x', 0)).map(textOf), ['new']);

    // Removed while known, then read at its end (a range that holds no event, as a live tail
    // reads): a 404, not an empty read for ever, and the chat is forgotten.
    rmSync(file);
    await assert.rejects(backend.read('x', 1), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    assert.equal(await log.open('x'), undefined);
    assert.equal((await log.createChat({ id: 'x' })).status, 'created');
    await log.append('x', [say('new')]);

    // Removed while known, then its header asked for with the check a session read makes: none
    // (`header` alone still answers from memory), and the chat is forgotten.
    rmSync(file);
    assert.equal((await backend.header('x'))?.id, 'x', 'held in memory');
    assert.equal(await log.checkedHeader('x'), undefined);
    assert.equal(await log.open('x'), undefined);
    assert.equal((await log.createChat({ id: 'x' })).status, 'created');
    assert.equal((await log.checkedHeader('x'))?.id, 'x');
    await log.append('x', [say('new')]);

    // Removed again and read first: a 404 (not a 500), and the chat is forgotten.
    rmSync(file);
    await assert.rejects(backend.read('x', 0), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    await assert.rejects(backend.readLines('x', 0, 10, 1000), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    assert.equal(await log.open('x'), undefined);
    assert.equal((await log.createChat({ id: 'x' })).status, 'created');
    assert.equal(readFileSync(file, 'utf8').split('\n').length, 2, 'a header line and nothing else');
  });
});
