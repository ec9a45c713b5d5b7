/**
 * The ordinal an image set aside is named by in its note ("Image #3").
 *
 * An image's ordinal is its 1-based position among the images of the request *as the client sent
 * it*, counted before replay or set-aside replaces any image with a note. Chat Completions and
 * Messages are stateless: clients resend the whole history with every request, and the client's
 * history keeps every image (set-aside changes only what the model receives). So the request as
 * sent lists every image of the chat so far, in chat order, and this position is the image's
 * ordinal in the chat. Counting after replacement would renumber later images each time one is set
 * aside. A client that drops or summarises its own older messages shifts the positions of later
 * images; notes already recorded keep the number they were given, since replay reuses the note.
 */
import type { ImageRef, RequestView, WirePath } from '../../providers/request-view.ts';

/** Ordinal by image path (see `pathKey`). */
export type ImageOrdinals = ReadonlyMap<string, number>;

/** A map key for a wire path; replacing an image by text keeps its path, so the key stays valid. */
export function pathKey(path: WirePath): string {
  return JSON.stringify(path);
}

/** Ordinals of every image of `view`; call it on the request as sent, before any replacement. */
export function imageOrdinals(view: RequestView): ImageOrdinals {
  const ordinals = new Map<string, number>();
  view.images().forEach((image, index) => ordinals.set(pathKey(image.path), index + 1));
  return ordinals;
}

/** The ordinal of `image`, or undefined when it was not among the images the ordinals counted. */
export function ordinalOf(ordinals: ImageOrdinals, image: Pick<ImageRef, 'path'>): number | undefined {
  return ordinals.get(pathKey(image.path));
}
