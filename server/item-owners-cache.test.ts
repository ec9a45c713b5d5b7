import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileResponseOwners } from '../chat-log/response-owners.ts';
import { ManualClock } from '../lib/clock.ts';
import { CachedItemOwners } from './item-owners-cache.ts';

const owner = { chatId: 't:research:chat', team: 'research', provider: 'openai' };

test('item owners: an owner read once is kept; an unknown id is read again after ten minutes, or once logged here', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'oda-item-owners-'));
  try {
    const clock = new ManualClock();
    const store = new FileResponseOwners(dir, 'item');
    const cached = new CachedItemOwners(store, clock);
    // Unknown, remembered as such for the typed-item check.
    assert.equal(await cached.ownerOf('rs_1'), undefined);
    // Another replica logs it (straight into the shared store): the check still says unknown for a while...
    await store.set('rs_1', owner);
    assert.equal(await cached.ownerOf('rs_1'), undefined);
    // ...but a reference (`get`) always reads what is not known.
    assert.deepEqual(await cached.get('rs_1'), owner);
    assert.deepEqual(await cached.ownerOf('rs_1'), owner, 'read once, known');

    assert.equal(await cached.ownerOf('rs_2'), undefined);
    await store.set('rs_2', owner);
    clock.advance(10 * 60_000);
    assert.deepEqual(await cached.ownerOf('rs_2'), owner, 'an unknown id is read again after ten minutes');

    assert.equal(await cached.ownerOf('rs_3'), undefined);
    await cached.set('rs_3', owner);
    assert.deepEqual(await cached.ownerOf('rs_3'), owner, 'logged by this process: known at once');

    // Known owners are answered from memory: the store's file gone, the owner is still known.
    rmSync(join(dir, 'response-item-owners'), { recursive: true, force: true });
    assert.deepEqual(await cached.ownerOf('rs_1'), owner);
    assert.deepEqual(await cached.get('rs_3'), owner);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
