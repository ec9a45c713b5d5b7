/**
 * An edited body written as the client's own bytes with only the edited values written again: the
 * messages and top-level members a view changed are rewritten over their bytes, where only the
 * sub-values that changed are serialised again (json-rewrite.ts); everything else goes out exactly
 * as the client sent it. A mechanism's edit touches a few messages (a breakpoint on the last one, a
 * trimmed result), and writing a long chat whole again cost more than anything else the gateway
 * did to it (2.7 ms for 1 MB).
 *
 * A top-level key the client repeats: JSON.parse keeps its last copy, so that is the value the
 * mechanisms saw and edited, and the layout places the member there. An edit is written over the
 * last copy; the earlier copies go out as the client sent them, which is faithful because the
 * provider's parser keeps the last copy too (a key repeated inside an edited value is another
 * matter: json-rewrite.ts writes that object whole).
 */
import type { EditedPlaces } from './request-view.ts';
import { rewriteJson } from './json-rewrite.ts';
import { CLOSE_OBJECT, isJsonSpace } from './wire-json.ts';

/** Where the parts of a body are in its bytes, from the body's shape scan. */
export interface BodyLayout {
  /**
   * The top-level message list (its last copy when the key repeats): element k spans `ranges[2k]`
   * to `ranges[2k + 1]`.
   */
  readonly list: { readonly key: string; readonly ranges: readonly number[] } | undefined;
  /** Each top-level member's value (start, end exclusive), its last copy when the key repeats. */
  readonly members: ReadonlyMap<string, readonly [number, number]>;
}

/**
 * `raw` with the values at `places` replaced by their JSON in `body`, and members the client did not
 * send added at the end (or left out when the body no longer has them), as the parts to send one
 * after another (slices of `raw` between new bytes: a long chat's megabyte is not copied into a new
 * buffer, it goes out from the bytes the client sent). Undefined when the layout cannot say where
 * one of them is, a value is gone, or the view names no place at all for a body it changed (the
 * caller then writes the whole body, so an edit made past the view's place tracker is never lost).
 */
export function spliceEdits(
  raw: Buffer,
  body: Readonly<Record<string, unknown>>,
  layout: BodyLayout,
  places: EditedPlaces,
): Buffer[] | undefined {
  if (places.members.size === 0 && places.messages.size === 0) return undefined;
  const cuts: Array<{ start: number; end: number; bytes: Buffer | undefined }> = [];
  let added = '';
  for (const key of places.members) {
    if (key === layout.list?.key) return undefined;
    const range = layout.members.get(key);
    if (range) {
      cuts.push({ start: range[0], end: range[1], bytes: rewriteJson(raw, range[0], range[1], body[key]) });
      continue;
    }
    const json = JSON.stringify(body[key]);
    // A member the view added and took back again (a prompt-cache key its provider refused): the
    // client never sent it and the body no longer has it, so there is nothing to write.
    if (json === undefined && !Object.hasOwn(body, key)) continue;
    if (json === undefined) return undefined;
    added += `${layout.members.size > 0 || added !== '' ? ',' : ''}${JSON.stringify(key)}:${json}`;
  }
  if (places.messages.size > 0) {
    const list = layout.list;
    if (!list || list.key !== places.list) return undefined;
    const elements = body[list.key];
    if (!Array.isArray(elements) || list.ranges.length !== 2 * elements.length) return undefined;
    for (const index of places.messages) {
      if (!(index >= 0 && index < elements.length)) return undefined;
      const start = list.ranges[2 * index]!;
      const end = list.ranges[2 * index + 1]!;
      cuts.push({ start, end, bytes: rewriteJson(raw, start, end, elements[index]) });
    }
  }
  if (added !== '') {
    // A member the client did not send goes last, before the body's closing brace.
    let close = raw.length - 1;
    while (close >= 0 && isJsonSpace(raw[close]!)) close--;
    if (raw[close] !== CLOSE_OBJECT) return undefined;
    cuts.push({ start: close, end: close, bytes: Buffer.from(added, 'utf8') });
  }
  cuts.sort((a, b) => a.start - b.start);
  const parts: Buffer[] = [];
  let at = 0;
  for (const cut of cuts) {
    // A value gone (undefined writes nothing) or ranges that overlap: only the whole body says it.
    if (cut.bytes === undefined || cut.start < at || cut.end > raw.length) return undefined;
    parts.push(raw.subarray(at, cut.start), cut.bytes);
    at = cut.end;
  }
  parts.push(raw.subarray(at));
  return parts.filter((part) => part.length > 0);
}
