/**
 * The file store's read-model checkpoints: one JSON file per chat and read model under
 * `dataDir/checkpoints/<chat>/<model>.json`. A checkpoint is a shortcut, not a record: it is
 * replaced whole (written beside and renamed) and not synced, since one lost to a power cut is
 * rebuilt from the log. A read model's name carries its version (`messages.v8`): once a chat has
 * a checkpoint of a version, the files of that model's older versions, which no build reads again,
 * are removed.
 */
import { promises as fsp } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathInside } from './chat-id.ts';
import { writeTemp } from './file-write-temp.ts';
import { parseStoredCheckpoint, type StoredCheckpoint } from './store.ts';

function checkpointPath(dir: string, id: string, model: string): string {
  return pathInside(pathInside(dir, id), model, '.json', 'read model name');
}

/** Chat `id`'s checkpoint of read model `model` under `dir`, or undefined when there is none. */
export async function readCheckpointFile(
  dir: string,
  id: string,
  model: string,
): Promise<StoredCheckpoint | undefined> {
  let text: string;
  try {
    text = await fsp.readFile(checkpointPath(dir, id, model), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return parseStoredCheckpoint(text, model);
}

/** Replaces chat `id`'s checkpoint of `checkpoint.model` under `dir`. */
export async function writeCheckpointFile(
  dir: string,
  id: string,
  checkpoint: StoredCheckpoint,
): Promise<void> {
  const path = checkpointPath(dir, id, checkpoint.model);
  await fsp.mkdir(dirname(path), { recursive: true });
  const tmp = await writeTemp(path, JSON.stringify(checkpoint), false);
  try {
    await fsp.rename(tmp, path);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
}

/** A checkpoint name: the read model's name and version (`checkpointName`), such as `messages.v8`. */
const VERSIONED = /^(.+)\.v(\d+)$/;

/**
 * Removes chat `id`'s checkpoint files under `dir` of the same read model as `model` at an older
 * version: a checkpoint is looked up by the current version only, so they would stay for ever. Best
 * effort: a file that cannot be removed (or a folder that cannot be listed: no `file`) is reported
 * to `failed` and left.
 */
export async function removeOlderCheckpointFiles(
  dir: string,
  id: string,
  model: string,
  failed: (err: unknown, file?: string) => void,
): Promise<void> {
  const current = VERSIONED.exec(model);
  if (!current) return;
  const [, name, version] = current;
  const chatDir = pathInside(dir, id);
  let files: string[];
  try {
    files = await fsp.readdir(chatDir);
  } catch (err) {
    failed(err);
    return;
  }
  for (const file of files) {
    const other = file.endsWith('.json') ? VERSIONED.exec(file.slice(0, -'.json'.length)) : null;
    if (!other || other[1] !== name || Number(other[2]) >= Number(version)) continue;
    try {
      await fsp.unlink(join(chatDir, file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') failed(err, file);
    }
  }
}
