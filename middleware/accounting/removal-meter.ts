/**
 * What each mechanism removed from one request (SPEC section 11, accounting): every edit made
 * through the request view is weighed with the size estimate pruning uses (code points, CJK
 * weighted, 8000 characters per image) and put on the mechanism that made it. Replayed decisions
 * count on every request that carries them: the numbers say how much less each request sent.
 */
import type { RequestView, ViewEdit } from '../../providers/request-view.ts';
import { IMAGE_CHARS, weightedChars } from '../cache-ttl-pruning/index.ts';

export const MECHANISMS = ['trimming', 'pruning', 'imageSetAside', 'imageReplay'] as const;
export type Mechanism = (typeof MECHANISMS)[number];

/** Estimate characters removed, per mechanism (net: a replacement text counts against its removal). */
export type RemovedChars = Record<Mechanism, number>;

export function emptyRemoved(): RemovedChars {
  return { trimming: 0, pruning: 0, imageSetAside: 0, imageReplay: 0 };
}

/** Estimate characters an edit removed (negative when the new text is longer). */
export function removedBy(edit: ViewEdit): number {
  return edit.kind === 'image'
    ? IMAGE_CHARS - weightedChars(edit.after)
    : weightedChars(edit.before) - weightedChars(edit.after);
}

/**
 * Tallies a view's edits into `removed`. While `mechanism` is set, edits go to it; otherwise (the
 * replay of recorded decisions, the repair loop) an image replaced by text is an image set aside
 * and a shortened text a trim, the only edits those make.
 */
export class RemovalMeter {
  readonly removed: RemovedChars;
  mechanism: Mechanism | undefined = undefined;

  constructor(removed: RemovedChars = emptyRemoved()) {
    this.removed = removed;
  }

  /** Starts tallying the edits made through `view`; false when the view does not report edits. */
  attach(view: RequestView): boolean {
    if (!view.onEdit) return false;
    view.onEdit((edit) => this.add(edit));
    return true;
  }

  add(edit: ViewEdit): void {
    const mechanism = this.mechanism ?? (edit.kind === 'image' ? 'imageSetAside' : 'trimming');
    this.removed[mechanism] += removedBy(edit);
  }
}

/** The non-zero removals, never negative (for the log and the accounts). */
export function positiveRemovals(removed: RemovedChars): Partial<RemovedChars> {
  const out: Partial<RemovedChars> = {};
  for (const m of MECHANISMS) {
    const chars = Math.max(0, Math.round(removed[m]));
    if (chars > 0) out[m] = chars;
  }
  return out;
}
