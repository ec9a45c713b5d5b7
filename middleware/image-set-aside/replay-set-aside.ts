/**
 * Replays recorded set-aside decisions: setting an image aside is permanent for the chat, so
 * every later request carries the recorded note in its place (SPEC section 7).
 */
import type { RequestView } from '../../providers/request-view.ts';
import { imageKey } from '../../lib/image-key.ts';

/** A recorded set-aside decision as replay needs it. */
export interface RecordedSetAside {
  readonly key: string;
  readonly note: string;
}

/** Replaces, in place, every image of `view` whose key was set aside by its note; returns how many. */
export function replaySetAside(view: RequestView, decisions: readonly RecordedSetAside[]): number {
  if (decisions.length === 0) return 0;
  const notes = new Map<string, string>();
  // The first decision for a key wins: that is the note the model saw first.
  for (const { key, note } of decisions) if (!notes.has(key)) notes.set(key, note);
  let replaced = 0;
  for (const image of view.images()) {
    const note = notes.get(imageKey(image.source));
    if (note === undefined) continue;
    image.replaceWithText(note);
    replaced += 1;
  }
  return replaced;
}
