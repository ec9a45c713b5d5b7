/**
 * The image replay clean-up (SPEC section 4, last bullet; seed 001): images and media references
 * the model already processed in older turns are not sent again, so repeated image payloads and
 * stale references stop breaking prompt caches. View-only (the client's history and the chat log
 * keep everything), independent of the cache TTL, and idempotent.
 */
import type { ImageRef, MessageRef, RequestView, TextSlot } from '../../providers/request-view.ts';
import { hasMediaReference, removeMediaReferences } from './media-references.ts';
import { replayCutoff } from './replay-cutoff.ts';

/** What replaces an image the model already processed. */
export const IMAGE_REMOVED_TEXT = '[image data removed - already processed by model]';

export interface ImageReplayCleanupResult {
  imagesRemoved: number;
  referencesRemoved: number;
}

/**
 * Keeps the `keepTurns` newest completed turns and the current turn byte for byte; before them,
 * in user messages and tool results, replaces image parts by IMAGE_REMOVED_TEXT and media
 * references by MEDIA_REFERENCE_REMOVED_TEXT. Assistant and system messages are never touched.
 */
export function imageReplayCleanup(view: RequestView, keepTurns = 3): ImageReplayCleanupResult {
  return cleanBefore(view, replayCutoff(view.messages(), keepTurns));
}

/**
 * The clean-up of every user message and tool result before message `cutoff` (0: nothing), the
 * messages from `cutoff` on byte for byte; `cutoff` comes from the chat's window (replay-window.ts).
 * A caller that already listed the view's messages and images passes them (editing texts moves no
 * image).
 */
export function cleanBefore(
  view: RequestView,
  cutoff: number,
  listed?: { messages: readonly MessageRef[]; images: readonly ImageRef[] },
): ImageReplayCleanupResult {
  if (cutoff <= 0) return { imagesRemoved: 0, referencesRemoved: 0 };
  const messages = listed ? listed.messages : view.messages();

  // Most older texts hold no reference: they are tested, not copied, and only a hit is rewritten.
  let referencesRemoved = 0;
  const clean = (slots: readonly TextSlot[]) => {
    for (const slot of slots) {
      const before = slot.text;
      if (!hasMediaReference(before)) continue;
      const { text, removed } = removeMediaReferences(before);
      slot.set(text);
      referencesRemoved += removed;
    }
  };
  for (const message of messages) {
    if (message.index < cutoff && (message.role === 'user' || message.role === 'tool')) clean(message.texts);
  }
  for (const result of view.toolResults()) {
    if (result.messageIndex < cutoff) clean(result.texts);
  }

  let roles: Map<number, MessageRef['role']> | undefined;
  let imagesRemoved = 0;
  for (const image of listed ? listed.images : view.images()) {
    if (image.messageIndex >= cutoff) continue;
    roles ??= new Map(messages.map((message) => [message.index, message.role]));
    const role = roles.get(image.messageIndex);
    if (role !== 'user' && role !== 'tool') continue;
    image.replaceWithText(IMAGE_REMOVED_TEXT);
    imagesRemoved += 1;
  }
  return { imagesRemoved, referencesRemoved };
}
