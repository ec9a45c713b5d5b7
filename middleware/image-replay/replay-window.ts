/**
 * Where the image replay clean-up's kept window stands on this request (SPEC section 11). Moving
 * the window rewrites the prompt from the first image it replaces on, which a warm prompt cache
 * then has to write again (1.25x) instead of reading (0.1x); so the window moves only when the
 * chat's cache is cold anyway (the pruning gate), or when more than `chunkImages` images have piled
 * up behind it, worth one rewrite. Otherwise it stays where the chat's last request had it, so a
 * warm prefix is sent byte for byte. The window is named by turn ordinal (see replay-cutoff.ts) and
 * recorded with each response, so every replica replays it identically.
 */
import type { MessageRef } from '../../providers/request-view.ts';
import { chatTurns, cutoffOfTurn, keptFromTurn } from './replay-cutoff.ts';

export interface ReplayWindowInput {
  readonly messages: readonly MessageRef[];
  /** Message index of every image the clean-up could replace (user and tool-result images). */
  readonly imageMessageIndexes: readonly number[];
  readonly keepTurns: number;
  readonly chunkImages: number;
  /** The first kept turn of the chat's last logged request; undefined when none is recorded. */
  readonly recordedFrom: number | undefined;
  /** True when the chat's prompt cache has expired (or was never written). */
  readonly cold: boolean;
}

export type ReplayWindowReason =
  /** The window is where `keepTurns` puts it (nothing recorded, or nothing moved). */
  | 'current'
  /** Moved on a cold cache. */
  | 'cold'
  /** Moved on a warm cache: more than `chunkImages` images were behind it. */
  | 'chunk'
  /** Kept where it was recorded: the cache is warm and few images are behind it. */
  | 'kept';

export interface ReplayWindow {
  /** Ordinal of the first kept turn; turns before it are cleaned. */
  readonly from: number;
  /** Index of the first message kept byte for byte (0: nothing is cleaned). */
  readonly cutoff: number;
  /** Images behind the window that the clean-up leaves in place (kept windows only). */
  readonly imagesBehind: number;
  readonly reason: ReplayWindowReason;
}

/**
 * The window for this request. A chat with no recorded window gets the current one (what the
 * clean-up always did before windows were recorded). A recorded window past the current one (the
 * history got shorter, e.g. compacted) is brought back to it.
 */
export function replayWindow(input: ReplayWindowInput): ReplayWindow {
  const turns = chatTurns(input.messages);
  const current = keptFromTurn(turns, input.keepTurns);
  const currentCutoff = cutoffOfTurn(turns, current);
  const at = (from: number, reason: ReplayWindowReason, imagesBehind = 0): ReplayWindow => ({
    from,
    cutoff: cutoffOfTurn(turns, from),
    imagesBehind,
    reason,
  });
  const recorded = input.recordedFrom;
  if (recorded === undefined || recorded >= current) return at(current, 'current');
  if (input.cold) return at(current, 'cold');
  const recordedCutoff = cutoffOfTurn(turns, recorded);
  const behind = input.imageMessageIndexes.filter((i) => i >= recordedCutoff && i < currentCutoff).length;
  if (behind > input.chunkImages) return at(current, 'chunk');
  return at(recorded, 'kept', behind);
}
