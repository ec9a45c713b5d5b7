/**
 * The file store's chat index in use (`store-file.ts`): opened on first use, checked and if need be
 * rebuilt from the chat files in the background (`chat-index-rebuild.ts`), fed a row by every
 * write, read by the listings, and marked clean when the store closes. The log is the record, so
 * trouble with the index is reported once and fails only the listings, never a write.
 *
 * At every start the index is checked against the chat files: an index closed cleanly against the
 * names in the chats folder (files added or removed by hand while the gateway was stopped), any
 * other fully. An index SQLite finds damaged while in use (a listing, a batch of writes) is set
 * aside and rebuilt the same way; listings meanwhile answer as during any rebuild.
 */
import { join } from 'node:path';
import { OdaError } from '../lib/errors.ts';
import type { ChatSummary, StoreStats } from './store.ts';
import { ChatIndex, isIndexDamage, removeIndexFiles, type IndexRow } from './chat-index.ts';
import { liveClaim } from './data-dir-claim.ts';
import {
  rebuildIndex,
  type IndexLog,
  type RebuildProgress,
  type RebuildSource,
} from './chat-index-rebuild.ts';
import type { ChatListQuery, ChatPage } from './chat-page.ts';

export interface StoreFileIndexOptions {
  dataDir: string;
  /** See `FileLogBackendOptions.indexCheck`. */
  indexCheck: 'always' | 'when-owner-exited';
  log: IndexLog | undefined;
  /** The chat files and the store's open chats, for rebuilds. */
  source: RebuildSource;
}

/** A rebuild of at most this many chat files is waited for by a listing; a larger one is not. */
const WAIT_FOR_REBUILD_FILES = 2000;

/**
 * Damaged indexes set aside by one process at most: a disk that damages every new index too is
 * reported, and the listings fail (503), instead of rebuilding without end.
 */
const MAX_SET_ASIDE = 3;

/** Why the index is being brought up to date: the `check` of an index closed cleanly, or a rebuild. */
type RebuildReason = 'check' | 'missing' | 'unclean' | 'damaged';

const REBUILD_MESSAGES: Record<Exclude<RebuildReason, 'check'>, string> = {
  missing: 'chat index is missing: bringing it up to date from the chat files',
  unclean: 'chat index was not closed cleanly: bringing it up to date from the chat files',
  damaged: 'chat index was damaged and set aside: rebuilding it from the chat files',
};

const unavailable = (err: unknown) =>
  new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, 'the chat index is unavailable', {
    cause: err,
    headers: { 'retry-after': '1' },
  });

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The index, opened on first use, and its rebuild when one runs. */
interface IndexState {
  index: ChatIndex;
  rebuild?: { progress: RebuildProgress; listed: Promise<number>; done: Promise<void> };
  /** True once this process took the index over (it marks it clean when it closes). */
  owned: boolean;
  /** False while a check or rebuild has not gone through (one cut short leaves it false). */
  upToDate: boolean;
}

/** The file store's chat index, its rebuilds and the listings served from it; see the file comment. */
export class StoreFileIndex {
  private readonly dataDir: string;
  private readonly indexCheck: 'always' | 'when-owner-exited';
  private readonly log: IndexLog | undefined;
  private readonly source: RebuildSource;
  private indexState: IndexState | undefined;
  private closed = false;
  /** Damaged indexes this process has set aside. */
  private setAsideCount = 0;

  constructor(opts: StoreFileIndexOptions) {
    this.dataDir = opts.dataDir;
    this.indexCheck = opts.indexCheck;
    this.log = opts.log;
    this.source = opts.source;
  }

  /**
   * Every chat, in id order, from the index (never opening chat files); waits for a rebuild under
   * way. For tools and tests: the gateway lists by page.
   */
  async list(): Promise<ChatSummary[]> {
    const rows = await this.fromIndex(async (state) => {
      await state.rebuild?.done;
      return state.index.page({ limit: Number.MAX_SAFE_INTEGER - 1 });
    });
    return rows.map(summaryOf).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * One page of chats from the index, newest activity first. While the index is being rebuilt the
   * page shows the chats indexed so far (`indexing`), except that a small rebuild is waited for.
   */
  async listPage(q: ChatListQuery): Promise<ChatPage> {
    return this.fromIndex(async (state) => {
      const rebuild = state.rebuild;
      // A small rebuild is waited for; an index that already holds many chats is served as it is
      // (without waiting even for the folder listing) while it is checked.
      if (rebuild && state.index.count() <= WAIT_FOR_REBUILD_FILES) {
        if ((await rebuild.listed) <= WAIT_FOR_REBUILD_FILES) await rebuild.done;
      }
      const rows = state.index.page(q);
      const chats = rows.slice(0, q.limit).map(summaryOf);
      const page: ChatPage = { chats };
      const last = chats[chats.length - 1];
      if (rows.length > q.limit && last) page.next = { lastActivityAt: last.lastActivityAt, id: last.id };
      if (state.rebuild) page.indexing = true;
      return page;
    });
  }

  /**
   * Runs a listing on the index. A damaged index is set aside and rebuilt, and the listing runs
   * again on the new one (as any listing during a rebuild); other trouble is a 503.
   */
  private async fromIndex<T>(read: (state: IndexState) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const state = this.listable();
      try {
        return await read(state);
      } catch (err) {
        if (err instanceof OdaError) throw err;
        // The index was replaced meanwhile (a rebuild found it damaged), or this listing did.
        const replaced =
          this.indexState !== state || (isIndexDamage(err) && this.setAsideDamaged(state, err));
        if (attempt === 0 && replaced) continue;
        this.indexTrouble(err);
        throw unavailable(err);
      }
    }
  }

  /** The index's part of the store's stats: whether it is being rebuilt and its size, once opened. */
  stats(): Pick<StoreStats, 'indexing' | 'indexedChats'> {
    const stats: Pick<StoreStats, 'indexing' | 'indexedChats'> = {};
    const state = this.indexState;
    if (state) {
      stats.indexing = state.rebuild !== undefined;
      try {
        stats.indexedChats = state.index.count();
      } catch (err) {
        // A failing index shows in the listings and the log; the metrics still answer.
        this.trouble(state, err);
      }
    }
    return stats;
  }

  /** Resolves once the chat index is open and any rebuild under way has finished. */
  async ready(): Promise<void> {
    // A damaged index found by the rebuild is replaced by another, being rebuilt in turn.
    for (let state = this.listable(); state.rebuild; state = this.listable()) await state.rebuild.done;
  }

  /**
   * Opens the chat index (once) and starts bringing it up to date from the chat files in the
   * background: a check against the folder's names when it was closed cleanly, else a rebuild. The
   * gateway calls it at start so this begins before the first request; listings and writes call it too.
   */
  open(): void {
    try {
      this.indexed();
    } catch (err) {
      this.indexTrouble(err);
    }
  }

  /** Records a chat's row; the log is the record, so an index that cannot be written is only reported. */
  record(row: IndexRow): void {
    try {
      this.indexed(row);
    } catch (err) {
      this.indexTrouble(err);
    }
  }

  /** Forgets the row of a chat whose file the store found gone, if the index has one. */
  forget(id: string): void {
    const state = this.indexState;
    if (!state) return;
    try {
      if (state.index.get(id)) state.index.delete(id);
    } catch (err) {
      this.trouble(state, err);
    }
  }

  /** Trouble with `state`'s index: a damaged one is set aside and rebuilt, the rest is reported. */
  private trouble(state: IndexState, err: unknown): void {
    if (!(isIndexDamage(err) && this.setAsideDamaged(state, err))) this.indexTrouble(err);
  }

  /**
   * Sets a damaged index aside (its files removed: it is derived data) and opens a new one, rebuilt
   * from the chat files in the background. False when `state` is no longer the index in use, or
   * this process already set aside as many as it will.
   */
  private setAsideDamaged(state: IndexState, err: unknown): boolean {
    if (this.indexState !== state) return this.indexState !== undefined;
    if (this.setAsideCount >= MAX_SET_ASIDE) return false;
    this.setAsideCount++;
    this.log?.('warn', 'chat index is damaged: setting it aside', {
      index: state.index.path,
      error: err instanceof Error ? err.message : String(err),
    });
    this.indexState = undefined;
    state.index.discard();
    try {
      removeIndexFiles(state.index.path);
    } catch (rmErr) {
      this.indexTrouble(rmErr);
      return false;
    }
    if (this.closed) return false;
    try {
      this.indexed(undefined, 'damaged');
      return true;
    } catch (openErr) {
      this.indexTrouble(openErr);
      return false;
    }
  }

  private indexTroubleReported = false;

  private indexTrouble(err: unknown): void {
    if (this.indexTroubleReported) return;
    this.indexTroubleReported = true;
    this.log?.('warn', 'chat index unavailable: listings fail until it can be opened; it is rebuilt then', {
      error: err instanceof Error ? err.message : String(err),
    });
  }

  /** The index for a listing; a 503 when it cannot be opened. */
  private listable(): IndexState {
    try {
      return this.indexed();
    } catch (err) {
      this.indexTrouble(err);
      throw err instanceof OdaError ? err : unavailable(err);
    }
  }

  /**
   * The index state, opening the index on first use (and starting its check or rebuild); records
   * `row` when given. `damaged` says a damaged index was just set aside.
   */
  private indexed(row?: IndexRow, damaged?: 'damaged'): IndexState {
    let state = this.indexState;
    if (!state) {
      if (this.closed) throw new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, 'the chat store is closed');
      const index: ChatIndex = new ChatIndex(join(this.dataDir, 'chat-index.sqlite'), {
        // A batch of writes that failed (one of an index set aside since is of no concern).
        onError: (err) => {
          const current = this.indexState;
          if (current?.index === index) this.trouble(current, err);
        },
      });
      state = { index, owned: false, upToDate: true };
      this.indexState = state;
      try {
        this.bringUpToDate(state, damaged);
      } catch (err) {
        if (!(isIndexDamage(err) && this.setAsideDamaged(state, err))) throw err;
        state = this.indexState as IndexState | undefined;
        if (!state) throw err;
      }
    }
    if (row) state.index.put(row);
    return state;
  }

  /**
   * Starts what a newly opened index needs: a full rebuild when it is missing, damaged or was not
   * closed cleanly, else the check against the chat files' names. A reader beside a running gateway
   * (`when-owner-exited`) leaves an index that gateway has open alone.
   */
  private bringUpToDate(state: IndexState, damaged?: 'damaged'): void {
    const { index } = state;
    // A gateway that holds the data directory keeps its index up to date; its claim says it runs
    // even where its pid cannot (another host, a container): a rebuild here would open its older
    // chats through this store, which cuts a half-written last line off the file it appends to.
    if (this.besideLiveGateway()) return;
    if (index.condition === 'ready') return this.startRebuild(state, 'check');
    const before = index.owner();
    const rebuild =
      this.indexCheck === 'always' ||
      index.condition === 'missing' ||
      before.pid === undefined ||
      !alive(before.pid);
    if (rebuild) this.startRebuild(state, damaged ?? index.condition);
  }

  /** True for a reader (`when-owner-exited`) while a running gateway holds the data directory. */
  private besideLiveGateway(): boolean {
    return this.indexCheck === 'when-owner-exited' && liveClaim(this.dataDir) !== undefined;
  }

  private startRebuild(state: IndexState, why: RebuildReason): void {
    const { index } = state;
    index.setState('rebuilding');
    state.owned = true;
    state.upToDate = false;
    const progress: RebuildProgress = { total: 0, done: 0, changed: 0 };
    let listed!: (n: number) => void;
    const listedP = new Promise<number>((resolve) => (listed = resolve));
    if (why !== 'check') this.log?.('info', REBUILD_MESSAGES[why], { index: index.path });
    const current = () => !this.closed && this.indexState === state;
    const done = rebuildIndex(index, this.source, {
      progress,
      stopped: () => !current(),
      log: this.log,
      onListed: listed,
      unindexedOnly: why === 'check',
    })
      .then(
        (complete) => {
          state.upToDate = complete;
          if (current()) index.setState('open');
        },
        (err: unknown) => {
          // A rebuild of an index set aside meanwhile fails on its closed database: nothing to say.
          if (this.indexState !== state) return;
          if (isIndexDamage(err) && this.setAsideDamaged(state, err)) return;
          this.log?.('warn', 'chat index rebuild failed; listings may miss chats until the next start', {
            error: err instanceof Error ? err.message : String(err),
          });
        },
      )
      .catch((err: unknown) => this.trouble(state, err))
      .finally(() => {
        listed(0);
        if (state.rebuild?.done === done) delete state.rebuild;
      });
    state.rebuild = { progress, listed: listedP, done };
  }

  /**
   * Marks the store closed (no index is opened after this, a rebuild stops), waits for a rebuild
   * under way, and closes the index.
   */
  async close(): Promise<void> {
    this.closed = true;
    // The index in use may change while a rebuild is waited for (a damaged one set aside).
    for (let state = this.indexState; state?.rebuild; state = this.indexState) await state.rebuild.done;
    const state = this.indexState;
    if (!state) return;
    this.indexState = undefined;
    try {
      // Clean only when complete: an index whose rebuild was cut short is rebuilt next time. A
      // gateway that started meanwhile owns it now: marked clean, it would be trusted after a crash.
      if (state.upToDate && state.owned && !this.besideLiveGateway()) state.index.setState('clean');
      state.index.close();
    } catch (err) {
      // Not marked clean: the next start checks the index against the files; a damaged one goes.
      state.index.discard();
      if (isIndexDamage(err)) removeIndexFiles(state.index.path);
      else this.indexTrouble(err);
    }
  }
}

function summaryOf(r: IndexRow): ChatSummary {
  const { size: _size, ...summary } = r;
  return summary;
}
