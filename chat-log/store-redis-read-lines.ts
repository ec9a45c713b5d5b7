/**
 * Streamed reads of the Redis chat store (`store-redis.ts`): a chat's stored event lines, fetched by
 * LRANGE windows of READ_WINDOW events and each checked before it is passed on.
 */
import { parseEventLine } from './event-batch.ts';
import type { RedisRun } from './redis-lock.ts';

/** Events fetched in one LRANGE of a streamed read. */
const READ_WINDOW = 100;

/**
 * Event lines `offset` to `end` (exclusive) of chat `id` from its events list `key`, each checked:
 * no more than `maxBytes` of lines unless the first line alone is larger. A list found shorter
 * (the chat's keys lost meanwhile) ends the lines early.
 */
export async function* eventLineWindows(
  run: RedisRun,
  key: string,
  id: string,
  offset: number,
  end: number,
  maxBytes: number,
): AsyncGenerator<string> {
  let bytes = 0;
  for (let from = offset; from < end; from += READ_WINDOW) {
    const to = Math.min(end, from + READ_WINDOW) - 1;
    const window = await run((r) => r.lrange(key, from, to));
    for (let i = 0; i < window.length; i++) {
      const line = window[i]!;
      bytes += Buffer.byteLength(line) + 1;
      if (from + i > offset && bytes > maxBytes) return;
      parseEventLine(line, id, from + i);
      yield line;
    }
    if (window.length < to - from + 1) return;
  }
}
