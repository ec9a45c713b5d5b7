/**
 * The file store's crash-safe writes: a whole file is written beside its final name and synced
 * before it is linked or renamed into place, and the folder is synced after so the new name lasts.
 * Chat creation, checkpoints and the health probe of `store-file.ts` all write this way.
 */
import { promises as fsp } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Writes `data` to a temporary file beside `path` and syncs it; returns the temporary path. */
export async function writeTemp(path: string, data: string | Buffer, sync = true): Promise<string> {
  const tmp = join(dirname(path), `.${randomBytes(8).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, 'wx');
  try {
    await fh.writeFile(data);
    if (sync) await fh.datasync();
  } catch (err) {
    await fh.close();
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  return tmp;
}

/**
 * Creates the file `path` holding `data` whole (written beside it, synced when `sync`, then linked
 * in): false when the name is taken. link() fails on an existing name, so two creators (even in two
 * processes) never clobber each other; a reader never sees the file partly written.
 */
export async function createWhole(path: string, data: Buffer, sync: boolean): Promise<boolean> {
  const tmp = await writeTemp(path, data, sync);
  try {
    await fsp.link(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

/** Syncs a folder so a name just linked into it survives a crash; best effort. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r').catch(() => undefined);
  if (!fh) return;
  await fh.sync().catch(() => undefined);
  await fh.close();
}

/** Syncs a file's data to the disk; best effort (a file removed meanwhile has nothing to keep). */
export async function syncFile(path: string): Promise<void> {
  const fh = await fsp.open(path, 'r').catch(() => undefined);
  if (!fh) return;
  await fh.datasync().catch(() => undefined);
  await fh.close();
}
