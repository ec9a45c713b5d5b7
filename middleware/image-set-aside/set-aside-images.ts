/**
 * Sets chosen images aside in the request and returns the decisions to record. It applies them
 * through `replaySetAside`, so the first request and every later replay carry the same bytes.
 */
import type { z } from 'zod';
import type { imageSetAsideEvent } from '../../chat-log/format/current.ts';
import type { ImageRef, RequestView } from '../../providers/request-view.ts';
import { imageKey } from '../../lib/image-key.ts';
import { ordinalOf, type ImageOrdinals } from './ordinals.ts';
import { replaySetAside } from './replay-set-aside.ts';
import { setAsideNote } from './set-aside-note.ts';

/** An `image-set-aside` event of the chat log without its envelope (seq, at, requestId, round). */
export type SetAsideDecision = Omit<
  z.infer<typeof imageSetAsideEvent>,
  'seq' | 'at' | 'type' | 'requestId' | 'round'
>;

/** What the gateway knows of an image from its stored attachment; anything may be unknown. */
export interface ImageFacts {
  readonly mediaType?: string | undefined;
  readonly width?: number | undefined;
  readonly height?: number | undefined;
  readonly bytes?: number | undefined;
  /** Path of the read-only copy (mode 0444) under the attachments directory. */
  readonly path?: string | undefined;
}

/**
 * Replaces each chosen image (and every other copy of the same image) by its note, in place.
 * `ordinals` come from the request as sent (`imageOrdinals`); `describe` looks up the stored
 * attachment. One decision per distinct image key, in the order chosen.
 */
export function setAsideImages(
  view: RequestView,
  chosen: readonly ImageRef[],
  ordinals: ImageOrdinals,
  describe: (image: ImageRef, key: string) => ImageFacts,
): SetAsideDecision[] {
  const decisions: SetAsideDecision[] = [];
  const seen = new Set<string>();
  for (const image of chosen) {
    const key = imageKey(image.source);
    if (seen.has(key)) continue;
    seen.add(key);
    const ordinal = ordinalOf(ordinals, image);
    if (ordinal === undefined) {
      throw new Error(
        `image at ${JSON.stringify(image.path)} has no ordinal: ordinals must come from this request as sent`,
      );
    }
    const facts = describe(image, key);
    const source = image.source;
    const note = setAsideNote({
      ordinal,
      mediaType: facts.mediaType ?? (source.kind === 'base64' ? source.mediaType : undefined),
      width: facts.width,
      height: facts.height,
      bytes: facts.bytes ?? (source.kind === 'base64' ? Buffer.byteLength(source.data, 'base64') : undefined),
      path: facts.path,
      url: source.kind === 'url' ? source.url : undefined,
    });
    decisions.push({ key, ordinal, note });
  }
  replaySetAside(view, decisions);
  return decisions;
}
