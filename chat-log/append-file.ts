/**
 * An append handle on one chat's log file, kept open between appends (opening and closing a file
 * per append cost more than the write). Durability is a choice:
 * - `always`: every append waits for fdatasync before it is acknowledged (survives power loss);
 * - `batch` (default): an append is acknowledged once the bytes are written to the file (they
 *   survive the process being killed), and fdatasync runs right behind it in the background,
 *   coalesced: at most one sync in flight per file, and appends that land meanwhile share the next.
 *   A failed background sync is reported by the next append of the chat.
 */
import { promises as fsp, type promises } from 'node:fs';

export type FsyncMode = 'always' | 'batch';

export class AppendFile {
  private fh: promises.FileHandle | undefined;
  private syncing: Promise<void> | undefined;
  private dirty = false;
  private syncError: unknown;
  /** The append under way, so close() never pulls the handle from under a write. */
  private writing: Promise<void> | undefined;

  constructor(
    readonly path: string,
    private readonly mode: FsyncMode,
  ) {}

  /** Appends `data` at the end; undoes a partial write back to `rollbackTo` bytes and throws. */
  async append(data: Buffer, rollbackTo: number): Promise<void> {
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
    const fh = (this.fh ??= await fsp.open(this.path, 'a'));
    try {
      let written = 0;
      while (written < data.length) {
        const { bytesWritten } = await fh.write(data, written, data.length - written);
        written += bytesWritten;
      }
    } catch (err) {
      await fh.truncate(rollbackTo).catch(() => undefined);
      throw err;
    }
    if (this.mode === 'always') await fh.datasync();
    else this.scheduleSync();
  }

  private scheduleSync(): void {
    this.dirty = true;
    if (this.syncing) return;
    const run = async (): Promise<void> => {
      while (this.dirty && this.fh) {
        this.dirty = false;
        try {
          await this.fh.datasync();
        } catch (err) {
          this.syncError = err;
        }
      }
      this.syncing = undefined;
    };
    this.syncing = run();
  }

  /** Waits for pending syncs, then closes the handle. */
  async close(): Promise<void> {
    await this.writing;
    while (this.syncing) await this.syncing;
    const fh = this.fh;
    this.fh = undefined;
    if (fh) {
      await fh.datasync().catch(() => undefined);
      await fh.close();
    }
  }
}
