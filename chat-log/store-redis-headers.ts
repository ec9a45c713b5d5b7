/**
 * The headers of the Redis chat store (`store-redis.ts`): a header never changes once its chat is
 * created, so each is read from Redis once and kept while it is among the `MAX_CACHED_HEADERS` most
 * recently used, with its stored text (a chat created anew under the same id has another).
 */
import { OdaError } from '../lib/errors.ts';
import type { Header } from './format/current.ts';
import { headerAsCurrent } from './convert.ts';
import type { RedisRun } from './redis-lock.ts';

/** Headers kept in memory (they never change; the least recently used are read again when needed). */
const MAX_CACHED_HEADERS = 10_000;

/** Headers read, least recently used first; see the file comment. */
export class RedisHeaders {
  /** Headers read, with their stored text (a chat created anew under the same id has another). */
  private readonly headers = new Map<string, { header: Header; text: string }>();

  constructor(
    private readonly run: RedisRun,
    /** The key of a chat's header. */
    private readonly headerKey: (id: string) => string,
  ) {}

  /** Chat `id`'s header, read from Redis unless held; undefined when the chat does not exist. */
  async get(id: string): Promise<Header | undefined> {
    const known = this.headers.get(id);
    if (known) {
      this.headers.delete(id);
      this.headers.set(id, known);
      return known.header;
    }
    const text = await this.run((r) => r.get(this.headerKey(id)));
    if (text === null) return undefined;
    let parsed: Header;
    try {
      // A v4 chat reads as v5 in place: its events are valid v5 events as they are.
      const upgraded = headerAsCurrent(JSON.parse(text));
      if (upgraded === undefined) throw new Error('not a header of a version that reads as the current one');
      parsed = upgraded;
    } catch (err) {
      throw new OdaError('ODA_ERR_LOG_READ', 500, `chat log ${id} has a damaged header`, { cause: err });
    }
    this.headers.set(id, { header: parsed, text });
    // Least recently used first: drop the oldest beyond the bound.
    if (this.headers.size > MAX_CACHED_HEADERS) this.headers.delete(this.headers.keys().next().value!);
    return parsed;
  }

  /** The stored text of chat `id`'s header as this process read it, if it holds it. */
  text(id: string): string | undefined {
    return this.headers.get(id)?.text;
  }

  /** Forgets chat `id`'s header (the chat is gone, or created anew). */
  forget(id: string): void {
    this.headers.delete(id);
  }

  /** How many headers are held. */
  get size(): number {
    return this.headers.size;
  }
}
