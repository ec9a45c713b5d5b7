/**
 * The file store's read-model checkpoints: one JSON file per chat and read model under
 * `dataDir/checkpoints/<chat>/<model>.json`. A checkpoint is a shortcut, not a record: it is
 * replaced whole (written beside and renamed) and not synced, since one lost to a power cut is
 * rebuilt from the log.
 */
import { promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
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
