/**
 * The file store's chat index in use (`store-file.ts`): opened on first use, checked and if need be
 * rebuilt from the chat files in the background (`chat-index-rebuild.ts`), fed a row by every
 * write, read by the listings, and marked clean when the store closes. The log is the record, so
 * trouble with the index is reported once and fails only the listings, never a write.
 */
import { join } from 'node:path';
import { OdaError } from '../lib/errors.ts';
import type { ChatSummary, StoreStats } from './store.ts';
import { ChatIndex, type IndexRow } from './chat-index.ts';
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
}

/** The file store's chat index, its rebuilds and the listings served from it; see the file comment. */
export class StoreFileIndex {
  private readonly dataDir: string;
  private readonly indexCheck: 'always' | 'when-owner-exited';
  private readonly log: IndexLog | undefined;
  private readonly source: RebuildSource;
  private indexState: IndexState | undefined;
  private closed = false;
  /** True once this process took the index over (it marks it clean when it closes). */
  private ownsIndex = false;

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
    const state = this.listable();
    await state.rebuild?.done;
    const rows = state.index.page({ limit: Number.MAX_SAFE_INTEGER - 1 });
    return rows.map(summaryOf).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * One page of chats from the index, newest activity first. While the index is being rebuilt the
   * page shows the chats indexed so far (`indexing`), except that a small rebuild is waited for.
   */
  async listPage(q: ChatListQuery): Promise<ChatPage> {
    const state = this.listable();
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
  }

  /** The index's part of the store's stats: whether it is being rebuilt and its size, once opened. */
  stats(): Pick<StoreStats, 'indexing' | 'indexedChats'> {
    const stats: Pick<StoreStats, 'indexing' | 'indexedChats'> = {};
    const state = this.indexState;
    if (state) {
      stats.indexing = state.rebuild !== undefined;
      try {
        stats.indexedChats = state.index.count();
      } catch {
        // A failing index shows in the listings and the log; the metrics still answer.
      }
    }
    return stats;
  }

  /** Resolves once the chat index is open and any rebuild under way has finished. */
  async ready(): Promise<void> {
    await this.listable().rebuild?.done;
  }

  /**
   * Opens the chat index (once) and, when it was missing, of another schema or not closed cleanly,
   * starts bringing it up to date from the chat files in the background. The gateway calls it at
   * start so the rebuild begins before the first request; every listing and write calls it too.
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
      throw new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, 'the chat index is unavailable', { cause: err });
    }
  }

  /** The index state, opening the index on first use; records `row` when given. */
  private indexed(row?: IndexRow): IndexState {
    let state = this.indexState;
    if (!state) {
      if (this.closed) throw new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, 'the chat store is closed');
      const index = new ChatIndex(join(this.dataDir, 'chat-index.sqlite'), {
        onError: (err) => this.indexTrouble(err),
      });
      state = { index };
      this.indexState = state;
      const before = index.owner();
      const check =
        index.condition !== 'ready' &&
        (this.indexCheck === 'always' ||
          index.condition === 'missing' ||
          before.pid === undefined ||
          !alive(before.pid));
      if (check) this.startRebuild(state, index.condition);
      else if (this.indexCheck === 'always') {
        index.setState('open');
        this.ownsIndex = true;
      }
    }
    if (row) state.index.put(row);
    return state;
  }

  private startRebuild(state: IndexState, why: string): void {
    const { index } = state;
    index.setState('rebuilding');
    this.ownsIndex = true;
    const progress: RebuildProgress = { total: 0, done: 0, changed: 0 };
    let listed!: (n: number) => void;
    const listedP = new Promise<number>((resolve) => (listed = resolve));
    this.log?.(
      'info',
      `chat index ${why === 'missing' ? 'is missing' : 'was not closed cleanly'}: bringing it up to date from the chat files`,
      {
        index: index.path,
      },
    );
    const done = rebuildIndex(index, this.source, {
      progress,
      stopped: () => this.closed,
      log: this.log,
      onListed: listed,
    })
      .then(
        () => {
          if (!this.closed) index.setState('open');
        },
        (err: unknown) => {
          this.log?.('warn', 'chat index rebuild failed; listings may miss chats until the next start', {
            error: err instanceof Error ? err.message : String(err),
          });
        },
      )
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
    const state = this.indexState;
    if (state) {
      const rebuild = state.rebuild?.done;
      await rebuild;
      try {
        // Clean only when complete: an index whose rebuild was cut short is checked again next time.
        if (!rebuild && this.ownsIndex) state.index.setState('clean');
        state.index.close();
      } catch (err) {
        // Not marked clean: the next start checks the index against the files.
        this.indexTrouble(err);
      }
    }
  }
}

function summaryOf(r: IndexRow): ChatSummary {
  const { size: _size, ...summary } = r;
  return summary;
}
