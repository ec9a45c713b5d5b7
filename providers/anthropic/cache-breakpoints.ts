/**
 * Anthropic prompt-caching breakpoints in a request body: which `cache_control` markers a body
 * carries, and where the gateway puts one of its own (the last block that accepts it).
 * https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
 */
import { isObj, type Obj } from '../wire-json.ts';

/**
 * What the `cache_control` markers anywhere in a body say: whether any is set (`present`), whether
 * any is a marker object (`any`), and whether one asks for the one-hour TTL (`hour`).
 */
export interface CacheMarkers {
  present: boolean;
  any: boolean;
  hour: boolean;
}

/**
 * Members whose values are the client's own JSON, never content blocks: a tool's input schema, a
 * tool call's input, the request's metadata, a structured-output schema. A `cache_control` key there
 * (a tool parameter of that name, an argument a call passed) is data, not a marker.
 */
const FREE_FORM_MEMBERS = new Set(['input_schema', 'input', 'metadata', 'schema']);

/** Walks `value` for its `cache_control` markers (not into a marker's own value, nor free-form JSON). */
export function findCacheMarkers(value: unknown, found: CacheMarkers): void {
  if (found.hour) return;
  if (Array.isArray(value)) {
    for (const item of value) findCacheMarkers(item, found);
    return;
  }
  if (!isObj(value)) return;
  const marker = value.cache_control;
  if (marker !== undefined && marker !== null) found.present = true;
  if (isObj(marker)) {
    found.any = true;
    if (marker.ttl === '1h') {
      found.hour = true;
      return;
    }
  }
  // `for...in`, not Object.keys: the walk covers the whole body on every request, and a parsed
  // body's objects have no inherited members, so no array of keys needs making per object.
  for (const key in value) {
    if (key !== 'cache_control' && !FREE_FORM_MEMBERS.has(key)) findCacheMarkers(value[key], found);
  }
}

/** True when `block` may carry a `cache_control` marker (thinking blocks and empty texts may not). */
function acceptsBreakpoint(block: unknown): block is Obj {
  if (!isObj(block) || typeof block.type !== 'string') return false;
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return false;
  return block.type !== 'text' || (typeof block.text === 'string' && block.text !== '');
}

/**
 * Marks the last block of `holder[key]` that accepts a breakpoint; a non-empty string becomes one
 * text block. False when there is no such block or it is marked already.
 */
export function markLastBlock(holder: Obj, key: string): boolean {
  const value = holder[key];
  if (typeof value === 'string') {
    if (value === '') return false;
    holder[key] = [{ type: 'text', text: value, cache_control: { type: 'ephemeral' } }];
    return true;
  }
  if (!Array.isArray(value)) return false;
  for (let i = value.length - 1; i >= 0; i--) {
    const block: unknown = value[i];
    if (!acceptsBreakpoint(block)) continue;
    if (block.cache_control !== undefined && block.cache_control !== null) return false;
    block.cache_control = { type: 'ephemeral' };
    return true;
  }
  return false;
}

/** Index of the message a breakpoint at `place` goes on; undefined when there is none. */
export function breakpointMessage(
  messages: unknown[],
  place: 'last-message' | 'previous-turn',
): number | undefined {
  const last = messages.length - 1;
  if (place === 'last-message') return last >= 0 ? last : undefined;
  // Where the previous request ended: the message before the newest assistant message.
  for (let i = last; i > 0; i--) {
    const message = messages[i];
    if (isObj(message) && message.role === 'assistant') return i - 1;
  }
  return undefined;
}
