/**
 * Folds a streamed Responses answer (SSE events, each with a `type` and a `sequence_number`) into
 * the response the non-streamed call would give. The closing event (`response.completed`,
 * `response.failed`, `response.incomplete`) carries the whole response; a stream cut before it is
 * rebuilt from the output items and deltas seen so far. Unknown events are ignored.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
import type { StreamAccumulator } from '../provider.ts';
import { TextBuilder } from '../../lib/text-builder.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import { normalizeResponsesResponse } from './normalize.ts';

/** Events after which the stream says no more: the answer is over. */
const CLOSING = new Set(['response.completed', 'response.failed', 'response.incomplete']);

/** The list at `holder[key]`, created when missing. */
function listAt(holder: Obj, key: string): unknown[] {
  const value = holder[key];
  if (Array.isArray(value)) return value;
  const list: unknown[] = [];
  holder[key] = list;
  return list;
}

/** The object at `list[index]`, when there is one. */
function objAt(list: unknown, index: unknown): Obj | undefined {
  if (!Array.isArray(list) || typeof index !== 'number') return undefined;
  const value: unknown = list[index];
  return isObj(value) ? value : undefined;
}

/**
 * The deltas added to each holder's keys (a part's `text`, an item's `arguments`), assembled apart
 * and written into their holders when the answer is read (`write`), so the text costs its length.
 */
class Deltas {
  private texts = new Map<Obj, Map<string, TextBuilder>>();

  /** Appends `delta` to `holder[key]` (a delta names its part by index; a missing part is skipped). */
  append(holder: Obj | undefined, key: string, delta: unknown): number {
    if (!holder || typeof delta !== 'string') return 0;
    let keys = this.texts.get(holder);
    if (!keys) this.texts.set(holder, (keys = new Map()));
    let text = keys.get(key);
    if (!text) {
      keys.set(key, (text = new TextBuilder()));
      text.append(str(holder[key]) ?? '');
    }
    text.append(delta);
    return delta.length;
  }

  /** Sets `holder[key]` to a `*.done` event's whole value. */
  settle(holder: Obj | undefined, key: string, value: unknown): void {
    if (!holder || typeof value !== 'string') return;
    this.texts.get(holder)?.delete(key);
    holder[key] = value;
  }

  /** Writes the assembled texts into their holders. */
  write(): void {
    for (const [holder, keys] of this.texts) for (const [key, text] of keys) holder[key] = text.toString();
  }

  /** Lets go of what was assembled for `item` and its parts (a whole item replaced it). */
  forget(item: Obj | undefined): void {
    if (!item) return;
    this.texts.delete(item);
    for (const key of ['content', 'summary'])
      for (const part of Array.isArray(item[key]) ? item[key] : []) if (isObj(part)) this.texts.delete(part);
  }

  clear(): void {
    this.texts = new Map();
  }
}

export function createResponsesStreamAccumulator(): StreamAccumulator {
  /** The response as the lifecycle events (`created`, `in_progress`) and the closing event gave it. */
  let response: Obj = {};
  const items: Array<Obj | undefined> = [];
  let closed = false;
  let errored = false;
  let failure: string | undefined;
  let failureType: string | undefined;
  const deltas = new Deltas();
  /**
   * Characters kept: per output item (its events kept whole and its deltas; a whole item replaces
   * what its deltas built), and of the last response event kept whole.
   */
  const itemChars = new Map<number, number>();
  let heldChars = 0;
  let responseChars = 0;
  let dropped = false;
  const addTo = (index: unknown, chars: number): void => {
    if (typeof index !== 'number') return;
    itemChars.set(index, (itemChars.get(index) ?? 0) + chars);
    heldChars += chars;
  };
  const resetItem = (index: number): void => {
    heldChars -= itemChars.get(index) ?? 0;
    itemChars.delete(index);
  };
  const resetItems = (): void => {
    itemChars.clear();
    heldChars = 0;
  };
  let current: Obj = {};
  const append = (holder: Obj | undefined, key: string, delta: unknown): void => {
    if (!dropped) addTo(current.output_index, deltas.append(holder, key, delta));
  };
  const settle = (holder: Obj | undefined, key: string, value: unknown): void =>
    deltas.settle(holder, key, value);
  /** The response an event carries, without its output when the content is dropped. */
  const kept = (value: Obj): Obj => (dropped ? { ...value, output: [] } : value);

  const item = (event: Obj): Obj | undefined => objAt(items, event.output_index);
  const part = (event: Obj): Obj | undefined => objAt(item(event)?.content, event.content_index);
  /**
   * The part a delta adds to; a part never announced (no `content_part.added`, as some compatible
   * servers stream) is created with `type`, so the text so far is not lost when the stream is cut.
   */
  const deltaPart = (event: Obj, type: string, key: string): Obj | undefined => {
    const known = part(event);
    const holder = item(event);
    if (known || !holder || typeof event.content_index !== 'number') return known;
    const created: Obj = { type, [key]: '' };
    listAt(holder, 'content')[event.content_index] = created;
    return created;
  };
  const summary = (event: Obj): Obj | undefined => objAt(item(event)?.summary, event.summary_index);

  function apply(type: string, event: Obj, size: number): void {
    switch (type) {
      case 'response.created':
      case 'response.queued':
      case 'response.in_progress':
        if (isObj(event.response)) {
          response = kept(event.response);
          responseChars = dropped ? 0 : size;
        }
        return;
      case 'response.output_item.added':
      case 'response.output_item.done':
        if (typeof event.output_index === 'number' && isObj(event.item) && !dropped) {
          deltas.forget(items[event.output_index]);
          items[event.output_index] = event.item;
          resetItem(event.output_index);
          addTo(event.output_index, size);
        }
        return;
      case 'response.content_part.added':
      case 'response.content_part.done': {
        const holder = item(event);
        if (holder && typeof event.content_index === 'number' && isObj(event.part)) {
          addTo(event.output_index, size);
          listAt(holder, 'content')[event.content_index] = event.part;
        }
        return;
      }
      case 'response.output_text.delta':
        return append(deltaPart(event, 'output_text', 'text'), 'text', event.delta);
      case 'response.reasoning_text.delta':
        return append(deltaPart(event, 'reasoning_text', 'text'), 'text', event.delta);
      case 'response.output_text.done':
      case 'response.reasoning_text.done':
        return settle(part(event), 'text', event.text);
      case 'response.refusal.delta':
        return append(deltaPart(event, 'refusal', 'refusal'), 'refusal', event.delta);
      case 'response.refusal.done':
        return settle(part(event), 'refusal', event.refusal);
      case 'response.function_call_arguments.delta':
        return append(item(event), 'arguments', event.delta);
      case 'response.function_call_arguments.done':
        return settle(item(event), 'arguments', event.arguments);
      case 'response.custom_tool_call_input.delta':
        return append(item(event), 'input', event.delta);
      case 'response.custom_tool_call_input.done':
        return settle(item(event), 'input', event.input);
      case 'response.reasoning_summary_part.added':
      case 'response.reasoning_summary_part.done': {
        const holder = item(event);
        if (holder && typeof event.summary_index === 'number' && isObj(event.part)) {
          addTo(event.output_index, size);
          listAt(holder, 'summary')[event.summary_index] = event.part;
        }
        return;
      }
      case 'response.reasoning_summary_text.delta':
        return append(summary(event), 'text', event.delta);
      case 'response.reasoning_summary_text.done':
        return settle(summary(event), 'text', event.text);
      case 'error':
        errored = true;
        if (failure === undefined) {
          const error = isObj(event.error) ? event.error : event;
          failure = str(event.message) ?? str(error.message) ?? 'error';
          failureType = str(error.code) ?? (error === event ? undefined : str(error.type));
        }
        return;
      default:
        if (CLOSING.has(type)) {
          closed = true;
          if (isObj(event.response)) {
            response = kept(event.response);
            responseChars = dropped ? 0 : size;
            // The closing response holds every output item: the ones built from events can go.
            if (Array.isArray(response.output) && response.output.length > 0) {
              items.length = 0;
              deltas.clear();
              resetItems();
            }
          }
          if (type === 'response.failed') {
            const error = isObj(response.error) ? response.error : undefined;
            if (failure === undefined) {
              failure = str(error?.message) ?? 'response.failed';
              failureType = str(error?.code);
            }
          }
        }
    }
  }

  return {
    push(event, data) {
      const text = data.trim();
      if (text === '' || text === '[DONE]') return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return;
      }
      if (!isObj(parsed)) return;
      const type = str(parsed.type) ?? event;
      if (type === undefined) return;
      current = parsed;
      apply(type, parsed, text.length);
    },
    held() {
      return heldChars + responseChars;
    },
    dropContent() {
      dropped = true;
      items.length = 0;
      deltas.clear();
      resetItems();
      responseChars = 0;
      response = kept(response);
    },
    ended() {
      return closed;
    },
    failure() {
      return failure;
    },
    failureType() {
      return failureType;
    },
    responseId() {
      return str(response.id);
    },
    result() {
      deltas.write();
      // The closing event's response holds every output item; before it, the items seen so far.
      const output =
        Array.isArray(response.output) && response.output.length > 0 ? response.output : items.filter(isObj);
      const normalized = normalizeResponsesResponse({ ...response, output });
      if (!closed && errored) return { ...normalized, stopReason: 'error' };
      if (!closed) return { ...normalized, stopReason: undefined };
      return normalized;
    },
  };
}
