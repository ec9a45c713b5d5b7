/**
 * An append handle on one chat's log file, kept open between appends (opening and closing a file
 * per append cost more than the write). Durability is a choice:
 * - `always`: every append waits for fdatasync before it is acknowledged (survives power loss);
 * - `batch` (default): an append is acknowledged once its bytes are written to the file (they
 *   survive the process being killed), and fdatasync follows within `SYNC_DELAY_MS`, one sync
 *   for every append that landed meanwhile (a busy chat is synced at most once per delay). A
 *   failed background sync is reported by the next append of the chat.
 * The write itself is synchronous: an append is a few kilobytes into the page cache, which costs
 * less than handing it to the thread pool and waking the event loop when it is done (two context
 * switches per append on a busy machine), and no other request waits for it on a later turn. Opening,
 * syncing and closing stay asynchronous, on a plain descriptor (cheaper per call than FileHandle).
 *
 * The handle only ever appends to the file as it was created (header first): it never creates one,
 * and a file removed while the handle is open (by hand, under a running gateway) is refused with
 * ENOENT instead of taking writes no one can read again.
 */
import { close, constants, fdatasync, fstatSync, ftruncate, open, writeSync } from 'node:fs';

export type FsyncMode = 'always' | 'batch';

/** How long a written append may wait for its fdatasync in `batch` mode. */
export const SYNC_DELAY_MS = 50;

const call = <T>(fn: (cb: (err: NodeJS.ErrnoException | null, value?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));

export class AppendFile {
  private fd: Promise<number> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private dirty = false;
  private syncError: unknown;
  /** The append under way, so close() never pulls the descriptor from under a write. */
  private writing: Promise<void> | undefined;

  constructor(
    readonly path: string,
    private readonly mode: FsyncMode,
  ) {}

  /** Appends `data` at the end; undoes a partial write back to `rollbackTo` bytes and throws. */
  append(data: Buffer, rollbackTo: number): Promise<void> {
    const p = this.write(data, rollbackTo);
    this.writing = p.catch(() => undefined);
    return p;
  }

  private async write(data: Buffer, rollbackTo: number): Promise<void> {
    if (this.syncError !== undefined) {
      const err = this.syncError;
      this.syncError = undefined;
      throw err;
    }
    this.fd ??= call<number>((cb) => open(this.path, constants.O_WRONLY | constants.O_APPEND, cb));
    const fd = await this.fd;
    if (fstatSync(fd).nlink === 0) {
      throw Object.assign(new Error(`${this.path} was removed`), { code: 'ENOENT' });
    }
    try {
      let written = 0;
      while (written < data.length) {
        written += writeSync(fd, data, written, data.length - written);
      }
    } catch (err) {
      await call<void>((cb) => ftruncate(fd, rollbackTo, cb)).catch(() => undefined);
      throw err;
    }
    if (this.mode === 'always') await call<void>((cb) => fdatasync(fd, cb));
    else this.scheduleSync();
  }

  private scheduleSync(): void {
    this.dirty = true;
    if (this.timer || this.syncing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.syncing = this.sync();
    }, SYNC_DELAY_MS);
    this.timer.unref();
  }

  private async sync(): Promise<void> {
    if (this.dirty && this.fd) {
      this.dirty = false;
      const fd = await this.fd;
      await call<void>((cb) => fdatasync(fd, cb)).catch((err: unknown) => {
        this.syncError = err;
      });
    }
    this.syncing = undefined;
    // Appends that landed during the sync get the next one, after the delay again: a busy chat is
    // synced at most once per SYNC_DELAY_MS, not back to back.
    if (this.dirty && this.fd) this.scheduleSync();
  }

  /** Syncs what was written, then closes the descriptor. */
  async close(): Promise<void> {
    await this.writing;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.syncing) await this.syncing;
    const fd = this.fd;
    this.fd = undefined;
    if (fd === undefined) return;
    const n = await fd.catch(() => undefined);
    if (n === undefined) return;
    if (this.dirty) await call<void>((cb) => fdatasync(n, cb)).catch(() => undefined);
    this.dirty = false;
    await call<void>((cb) => close(n, cb));
  }
}
