import type { ToolResultRef } from '../../providers/request-view.ts';
import { IMAGE_REMOVED_TEXT, removeMediaReferences } from '../image-replay/index.ts';
import { sha256Hex } from '../../lib/sha256.ts';

/** Joins text parts for the digest; a NUL keeps part boundaries apart. */
const PART_SEPARATOR = '\u0000';

/**
 * sha256 hex of a tool result's text (its text parts joined with a NUL): how a recorded pruning
 * projection recognises the content it applies to.
 *
 * The image replay clean-up runs before pruning and reaches a result only once its turn has aged
 * out of the newest completed turns, usually after the pass that pruned it. So the digest is taken
 * over the text as that clean-up leaves it (media references replaced, the text parts that stand
 * for removed images left out): cleaned or not, the result keeps its digest and its projection,
 * and the model never gets the pruned text back.
 */
export function toolResultDigest(ref: ToolResultRef): string {
  const texts = ref.texts
    .map((slot) => slot.text)
    .filter((text) => text !== IMAGE_REMOVED_TEXT)
    .map((text) => removeMediaReferences(text).text);
  return sha256Hex(texts.join(PART_SEPARATOR));
}
