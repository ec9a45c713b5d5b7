/**
 * Checkpoints of read-model states (seed 002, "Read models and checkpoints"). A checkpoint is only
 * a shortcut: one that no longer fits the log (another format version or build, a read model
 * version that changed, a position at or past the log's end, or a log whose event at that position
 * is not the one the state was built from) is never served; the caller rebuilds from the log.
 */
import { z } from 'zod';
import type { LogBackend } from './store.ts';
import { VERSION, type Event } from './format/current.ts';
import type { ReadModel } from './read-models/read-model.ts';
import { canonicalJson } from './canonical-json.ts';
import { sha256Hex } from '../lib/sha256.ts';

/** Why a checkpoint was not used. */
export type CheckpointMiss = 'missing' | 'format' | 'build' | 'ahead' | 'replaced' | 'invalid';

export type LoadedCheckpoint<S> =
  { ok: true; position: number; state: S } | { ok: false; reason: CheckpointMiss };

/** The checkpoint name of a read model: its name and version (a new version ignores old states). */
export const checkpointName = (model: ReadModel<unknown>): string => `${model.name}.v${model.version}`;

/**
 * The checkpoint names of the same read model at the versions before `name`'s (`messages.v8`:
 * `messages.v0` to `messages.v7`): a checkpoint is looked up by the current version only, so a
 * store drops these when it writes the new one. Empty for a name without a version.
 */
export function olderCheckpointNames(name: string): string[] {
  const versioned = /^(.+)\.v(\d+)$/.exec(name);
  if (!versioned) return [];
  const version = Math.min(Number(versioned[2]), 1000);
  return Array.from({ length: version }, (_, v) => `${versioned[1]}.v${v}`);
}

/** Identifies the event a state was built up to, so a replaced log of the same length is noticed. */
export const eventAnchor = (event: Event): string => sha256Hex(canonicalJson(event));

const wrapper = z.strictObject({ anchor: z.string().nullable(), value: z.unknown() });

/** Saves `state`, which accounts for every event up to `last` (undefined: an empty log). */
export async function saveCheckpoint<S>(
  backend: LogBackend,
  id: string,
  model: ReadModel<S>,
  build: string,
  state: S,
  last: Event | undefined,
): Promise<void> {
  await backend.putCheckpoint(id, {
    model: checkpointName(model),
    formatVersion: VERSION,
    build,
    position: last ? last.seq : -1,
    state: { anchor: last ? eventAnchor(last) : null, value: state },
  });
}

/**
 * Loads a read model's checkpoint when it fits a log of `count` events written with this format
 * version and `build`; otherwise says why not.
 */
export async function loadCheckpoint<S>(
  backend: LogBackend,
  id: string,
  model: ReadModel<S>,
  build: string,
  count: number,
): Promise<LoadedCheckpoint<S>> {
  const cp = await backend.getCheckpoint(id, checkpointName(model));
  if (!cp) return { ok: false, reason: 'missing' };
  if (cp.formatVersion !== VERSION) return { ok: false, reason: 'format' };
  if (cp.build !== build) return { ok: false, reason: 'build' };
  if (!Number.isSafeInteger(cp.position) || cp.position < -1) return { ok: false, reason: 'invalid' };
  if (cp.position >= count) return { ok: false, reason: 'ahead' };
  const stored = wrapper.safeParse(cp.state);
  if (!stored.success) return { ok: false, reason: 'invalid' };
  const state = model.schema.safeParse(stored.data.value);
  if (!state.success) return { ok: false, reason: 'invalid' };
  if (cp.position >= 0) {
    const [at] = await backend.read(id, cp.position, 1);
    if (!at || stored.data.anchor !== eventAnchor(at)) return { ok: false, reason: 'replaced' };
  } else if (stored.data.anchor !== null) {
    return { ok: false, reason: 'invalid' };
  }
  return { ok: true, position: cp.position, state: state.data };
}
