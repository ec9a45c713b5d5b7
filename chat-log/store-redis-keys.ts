/**
 * Where the Redis chat store (`store-redis.ts`) keeps everything a chat has. Keys (all under
 * `prefix`, default `oda:`):
 *   chats                   set of every chat id (for `list()` and rebuilding the activity index)
 *   ids                     every chat id again, as a sorted set (all score 0, ordered by text), so
 *                           the ids under a prefix (a session's chats) are one ZRANGEBYLEX
 *   activity                chats by last activity, for paged listing: a sorted set of members
 *                           `<last activity, 16 digits> <id>` (all score 0, ordered by text)
 *   activity:team:<team>    the same, for one team's chats
 *   chat:<id>:header        the header, as its JSON line
 *   chat:<id>:events        list of event JSON lines; index = seq, so LLEN is the count
 *   chat:<id>:last          time of the last append (lastActivityAt)
 *   chat:<id>:checkpoints   hash: read model name -> checkpoint JSON
 *   chat:<id>:lock          the cross-replica chat lock (see redis-lock.ts)
 */
import { OdaError } from '../lib/errors.ts';

/** The keys of one chat. */
export type ChatPart = 'header' | 'events' | 'last' | 'checkpoints' | 'lock';

const PREFIX_RE = /^[A-Za-z0-9._:{}-]{0,64}$/;

/** The store's keys under one prefix; see the file comment. */
export class RedisKeys {
  /** Refuses a prefix that is not 0-64 of A-Za-z0-9._:{}- (a config error). */
  constructor(readonly prefix: string) {
    if (!PREFIX_RE.test(prefix)) {
      throw new OdaError('ODA_ERR_CONFIG', 500, 'redis key prefix must be 0-64 of A-Za-z0-9._:{}-');
    }
  }

  chat(id: string, part: ChatPart): string {
    return `${this.prefix}chat:${id}:${part}`;
  }

  get chats(): string {
    return `${this.prefix}chats`;
  }

  get ids(): string {
    return `${this.prefix}ids`;
  }

  activity(team?: string): string {
    return team === undefined ? `${this.prefix}activity` : `${this.prefix}activity:team:${team}`;
  }
}
