/**
 * Which images an image-limit refusal sets aside (SPEC section 7): nothing in advance, the
 * refusal is the signal; the oldest images still sent go first.
 */
import type { Refusal } from '../../providers/provider.ts';
import type { ImageRef, RequestView, WirePath } from '../../providers/request-view.ts';

export type ImageLimitRefusal = Extract<Refusal, { kind: 'image-limit' }>;

function samePath(a: WirePath, b: WirePath): boolean {
  return a.length === b.length && a.every((step, i) => step === b[i]);
}

/**
 * The images to set aside for `refusal`, oldest first; empty when no image is left to set aside, or
 * when setting aside cannot answer the refusal.
 * - Counts stated ("N > M"): the oldest `max(images left, N) - M`, at least one, so one round is
 *   enough even when the provider counted more than the view sees. Only images whose setting aside
 *   lowers the count are taken (a computer-use screenshot keeps a placeholder image in its place);
 *   when those are too few to get under M, none is taken: the setting aside would be permanent and
 *   the request refused all the same.
 * - An image named (a per-image size or dimension error) whose path matches: that image alone.
 * - Otherwise at least `atLeast` of the oldest (the repairs pass twice the previous round's count,
 *   so a refusal that never says how many is done in a few rounds, not one round per image).
 */
export function chooseImagesToSetAside(
  view: RequestView,
  refusal: ImageLimitRefusal,
  atLeast = 1,
): ImageRef[] {
  const images = view.images();
  if (images.length === 0) return [];
  if (refusal.count) {
    const excess = Math.max(1, Math.max(images.length, refusal.count.sent) - refusal.count.max);
    const counted = images.filter((image) => image.keepsImageSlot !== true);
    return counted.length < excess ? [] : counted.slice(0, excess);
  }
  const named = refusal.imagePath;
  const match = named ? images.find((image) => samePath(image.path, named)) : undefined;
  if (match) return [match];
  return images.slice(0, Math.max(1, atLeast));
}
