/**
 * Checks that the activity sets and the id set of the Redis chat store (`store-redis.ts`) hold every
 * chat, and rebuilds them in the background when they do not: chats created by a gateway before
 * paged listing have no activity member, and chats created before the id set no member there,
 * until this adds one. Kept apart from the store because it is its
 * own small state machine (started once, restarted after a failure) that listing and stats only
 * read.
 */
import { isChatId } from './chat-id.ts';
import type { RedisRun } from './redis-lock.ts';
import type { RedisLogBackendOptions } from './store-redis.ts';
import { REINDEX } from './store-redis-scripts.ts';
import { results } from './store-redis-replies.ts';

/** What the rebuild needs from the store. */
export interface RedisActivityRebuildOptions {
  run: RedisRun;
  /** The store's key prefix, from which the rebuild script names each chat's keys. */
  prefix: string;
  /** The set of every chat id. */
  chatsKey: string;
  /** The activity set of all chats (team sets are rebuilt along with it). */
  activityKey: string;
  /** The id set (every chat id, ordered by text). */
  idsKey: string;
  log: RedisLogBackendOptions['log'];
  /** Whether the store was closed: the rebuild stops before its next script. */
  closed: () => boolean;
}

/** The activity index check of one store, run once per process (again after a failure). */
export class RedisActivityRebuild {
  private readonly opts: RedisActivityRebuildOptions;
  private activityCheck: { small: Promise<boolean | undefined>; done: Promise<void> } | undefined;
  private activityRebuilding = false;

  constructor(opts: RedisActivityRebuildOptions) {
    this.opts = opts;
  }

  /** Whether missing chats are being added right now (listings may miss them meanwhile). */
  get rebuilding(): boolean {
    return this.activityRebuilding;
  }

  /**
   * Once per process: when the activity set does not hold every chat (chats created by a gateway
   * before paged listing), adds the missing ones in the background, 500 chats per script. `small`
   * resolves true when few enough are missing for a listing to wait, undefined when none are.
   */
  start(): { small: Promise<boolean | undefined>; done: Promise<void> } {
    if (this.activityCheck) return this.activityCheck;
    const { run, prefix, chatsKey, activityKey, idsKey, log, closed } = this.opts;
    let small!: (v: boolean | undefined) => void;
    const smallP = new Promise<boolean | undefined>((resolve) => (small = resolve));
    const done = (async () => {
      const [chats, indexed, ids] = await run(async (r) =>
        results(await r.multi().scard(chatsKey).zcard(activityKey).zcard(idsKey).exec()),
      );
      if (chats === indexed && chats === ids) return small(undefined);
      this.activityRebuilding = true;
      small((chats as number) <= 2000);
      log?.('info', 'chat activity index or id set is incomplete: adding the missing chats', {
        chats,
        indexed,
        ids,
      });
      let cursor = '0';
      let done = 0;
      do {
        const [next, ids] = await run((r) => r.sscan(chatsKey, cursor, 'COUNT', 500));
        cursor = next;
        const valid = ids.filter(isChatId);
        if (valid.length) await run((r) => r.eval(REINDEX, 0, prefix, ...valid));
        done += ids.length;
      } while (cursor !== '0' && !closed());
      log?.('info', 'chat activity index and id set are up to date', { chats: done });
    })()
      .catch((err: unknown) => {
        small(undefined);
        // Checked again by the next process (or a later listing after a failure).
        this.activityCheck = undefined;
        log?.('warn', 'chat activity index check failed', {
          error: err instanceof Error ? err.message : String(err),
        });
      })
      .finally(() => {
        this.activityRebuilding = false;
      });
    this.activityCheck = { small: smallP, done };
    return this.activityCheck;
  }
}
