/**
 * The Redis chat store's listings (`store-redis.ts`), as `store-file-index.ts` is the file store's:
 * every chat from the chat set, or one page from an activity set (`store-redis-listing.ts`), once
 * the sets were checked to hold every chat (`store-redis-activity-rebuild.ts`). A read-only store
 * leaves that check to the gateways.
 */
import type { ChatSummary, LogBackend } from './store.ts';
import type { ChatListQuery, ChatPage } from './chat-page.ts';
import type { RedisRun } from './redis-lock.ts';
import { results } from './store-redis-replies.ts';
import { allSummaries, listedSummaries, scanActivity, scanIdPrefix } from './store-redis-listing.ts';
import { RedisActivityRebuild, type RedisActivityRebuildOptions } from './store-redis-activity-rebuild.ts';
import type { RedisKeys } from './store-redis-keys.ts';

export interface RedisChatIndexOptions {
  run: RedisRun;
  keys: RedisKeys;
  /** A reader beside running gateways: its listings never check the activity sets. */
  readOnly: boolean;
  log: RedisActivityRebuildOptions['log'];
  /** Whether the store was closed: a rebuild under way stops. */
  closed: () => boolean;
}

/** The listings of one Redis store and the activity-set check they rest on; see the file comment. */
export class RedisChatIndex implements Pick<LogBackend, 'list' | 'listPage' | 'openIndex'> {
  private readonly run: RedisRun;
  private readonly keys: RedisKeys;
  private readonly readOnly: boolean;
  private readonly activity: RedisActivityRebuild;

  constructor(opts: RedisChatIndexOptions) {
    this.run = opts.run;
    this.keys = opts.keys;
    this.readOnly = opts.readOnly;
    this.activity = new RedisActivityRebuild({
      run: opts.run,
      prefix: opts.keys.prefix,
      chatsKey: opts.keys.chats,
      activityKey: opts.keys.activity(),
      idsKey: opts.keys.ids,
      log: opts.log,
      closed: opts.closed,
    });
  }

  /** Whether missing chats are being added to the activity sets right now. */
  get rebuilding(): boolean {
    return this.activity.rebuilding;
  }

  list(): Promise<ChatSummary[]> {
    return allSummaries(this.run, (id, part) => this.keys.chat(id, part), this.keys.chats);
  }

  /**
   * One page of chats, newest activity first, from the activity sets: one ZREVRANGEBYLEX window
   * (an id filter reads further windows, at most LIST_SCAN_BUDGET members, then answers with what
   * it found and a cursor where it stopped), then the page's headers and counts in one pipeline. A
   * narrow id prefix (a session's chats) is read from the id set instead, wherever its chats are in
   * the activity order.
   */
  async listPage(q: ChatListQuery): Promise<ChatPage> {
    if (!this.readOnly) {
      const indexing = this.activity.start(); // a first listing checks the sets against the chat set
      if ((await indexing.small) === true) await indexing.done;
    }
    const key = (id: string, part: 'header' | 'events' | 'last') => this.keys.chat(id, part);
    const narrow =
      q.idPrefix === undefined
        ? undefined
        : await scanIdPrefix(this.run, key, this.keys, { ...q, idPrefix: q.idPrefix });
    const { shown, next } = narrow ?? (await scanActivity(this.run, this.keys.activity(q.team), q));
    const chats = await listedSummaries(this.run, key, shown);
    const page: ChatPage = { chats };
    if (next) page.next = next;
    if (this.activity.rebuilding) page.indexing = true;
    return page;
  }

  /** Starts the activity-set check in the background (the gateway calls it at start). */
  openIndex(): void {
    if (!this.readOnly) void this.activity.start();
  }

  /**
   * Chats not yet in the activity set (created by a gateway before paged listing): listings miss
   * them until a gateway's check adds them. Read only.
   */
  async unindexedChats(): Promise<number> {
    const [chats, indexed] = await this.run(async (r) =>
      results(await r.multi().scard(this.keys.chats).zcard(this.keys.activity()).exec()),
    );
    return Math.max(0, (chats as number) - (indexed as number));
  }
}
