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
 * The images to set aside for `refusal`, oldest first; empty when no image is left to set aside.
 * - Counts stated ("N > M"): the oldest `max(images left, N) - M`, at least one, so one round is
 *   enough even when the provider counted more than the view sees.
 * - Otherwise at least `atLeast` (the repairs pass twice the previous round's count, so a refusal
 *   that never says how many is done in a few rounds, not one round per image): the image the
 *   refusal names (a per-image size or dimension error) first when its path matches, then the
 *   oldest.
 */
export function chooseImagesToSetAside(
  view: RequestView,
  refusal: ImageLimitRefusal,
  atLeast = 1,
): ImageRef[] {
  const images = view.images();
  if (images.length === 0) return [];
  if (refusal.count) {
    const excess = Math.max(images.length, refusal.count.sent) - refusal.count.max;
    return images.slice(0, Math.min(images.length, Math.max(1, excess)));
  }
  const want = Math.max(1, atLeast);
  const named = refusal.imagePath;
  const match = named ? images.find((image) => samePath(image.path, named)) : undefined;
  if (!match) return images.slice(0, want);
  return [match, ...images.filter((image) => image !== match).slice(0, want - 1)];
}
