/**
 * The Redis chat store's read-model checkpoints (`store-redis.ts`): one hash per chat,
 * `chat:<id>:checkpoints`, read model name -> checkpoint JSON. A read model's name carries its
 * version (`messages.v8`): a checkpoint of a version drops the fields of that model's older
 * versions, which no build reads again, in the same transaction.
 */
import { parseStoredCheckpoint, type StoredCheckpoint } from './store.ts';
import { assertChatId } from './chat-id.ts';
import { olderCheckpointNames } from './checkpoints.ts';
import type { RedisRun } from './redis-lock.ts';
import { results } from './store-redis-replies.ts';

/** Chat `id`'s checkpoint of read model `model` in hash `key`, or undefined when there is none. */
export async function getRedisCheckpoint(
  run: RedisRun,
  key: string,
  id: string,
  model: string,
): Promise<StoredCheckpoint | undefined> {
  assertChatId(id);
  assertChatId(model, 'read model name');
  const text = await run((r) => r.hget(key, model));
  if (text === null) return undefined;
  return parseStoredCheckpoint(text, model);
}

/** Stores `checkpoint` of chat `id` in hash `key`, dropping the model's older versions. */
export async function putRedisCheckpoint(
  run: RedisRun,
  key: string,
  id: string,
  checkpoint: StoredCheckpoint,
): Promise<void> {
  assertChatId(id);
  assertChatId(checkpoint.model, 'read model name');
  // The model's checkpoints of older versions go with it (no build reads them again).
  const older = olderCheckpointNames(checkpoint.model);
  await run(async (r) => {
    const write = r.multi().hset(key, checkpoint.model, JSON.stringify(checkpoint));
    results(await (older.length > 0 ? write.hdel(key, ...older) : write).exec());
  });
}
