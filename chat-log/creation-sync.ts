/**
 * Background syncing of chat files the file store created in `batch` mode: each new file's data,
 * then the folder (one folder sync for every chat created meanwhile), within a delay, as `batch`
 * appends are synced (`append-file.ts`). A killed process loses nothing (the bytes and the name
 * are in the page cache); a crash of the machine before the sync can leave a chat file without
 * its bytes, which the next opening sets aside (`chat-file.ts`).
 */
import { syncDir, syncFile } from './file-write-temp.ts';

export class CreationSync {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly dir: string,
    private readonly delayMs: number,
    /** How a file and the folder are synced (the tests watch the calls). */
    private readonly sync: { file(path: string): Promise<void>; dir(path: string): Promise<void> } = {
      file: syncFile,
      dir: syncDir,
    },
  ) {}

  /** Syncs the file at `path`, and the folder's entry for it, within the delay. */
  add(path: string): void {
    this.pending.add(path);
    if (!this.timer && !this.running) this.schedule();
  }

  /** Syncs everything added so far now; resolves once it is on the disk. */
  async flush(): Promise<void> {
    for (;;) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      if (this.running) {
        await this.running;
        continue;
      }
      if (this.pending.size === 0) return;
      this.running = this.run();
    }
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.run();
    }, this.delayMs);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    const paths = [...this.pending];
    this.pending.clear();
    await Promise.all(paths.map((p) => this.sync.file(p)));
    await this.sync.dir(this.dir);
    this.running = undefined;
    // Chats created during the sync get the next one, after the delay again.
    if (this.pending.size > 0) this.schedule();
  }
}
