// @ts-check
/**
 * The figures and lines of a model call's turn in the timeline: its tokens as billed, what a trim
 * removed, what the mechanisms decided this turn and what they removed from what the model received.
 */
import { num } from './format.js';

/**
 * @typedef {import('./event-reads.js').LogEvent} LogEvent
 * @typedef {{ trims: number, trimChars: number, soft: number, cleared: number, prunedChars: number, setAside: number }} Savings
 */

/**
 * Code points of the marker a trim puts between the kept head and tail (lib/trim-marker.ts), and of
 * the text a part wholly inside the removed middle keeps (REMOVED_PART_TEXT in
 * middleware/cache-ttl-pruning/soft-trim.ts).
 */
const TRIM_MARKER_CHARS = Array.from('\n\n[... tool result middle pruned ...]\n\n').length;
const REMOVED_PART_CHARS = Array.from('[...]').length;

/**
 * Characters a trim removed from what the model received: the original less what it kept, the
 * head, the marker and the tail (and the stand-in of each part wholly inside the cut), as the
 * response's `mechanisms.removed.trimming` counts them.
 * @param {LogEvent} e a `tool-result-trimmed` event
 */
export function trimRemovedChars(e) {
  const original = Number(e.originalChars) || 0;
  const head = Number(e.headChars) || 0;
  const tail = Number(e.tailChars) || 0;
  let standIns = 0;
  if (Array.isArray(e.parts)) {
    const cutEnd = original - tail;
    let start = 0;
    for (const part of e.parts) {
      const n = Number(part?.chars) || 0;
      const end = start + n;
      if (n > 0 && start > head && end <= cutEnd) standIns += REMOVED_PART_CHARS;
      start = end;
    }
  }
  return Math.max(0, original - head - TRIM_MARKER_CHARS - tail - standIns);
}

/**
 * A response's tokens as billed (chat-log/read-models/billed-tokens.ts, as the session summary
 * counts them): `in` is the base input at the full price. Anthropic's input leaves out the cached
 * tokens; every other format (OpenAI's prompt tokens, the Responses API's input tokens) includes
 * them, so they are taken off.
 * @param {any} usage the response's `usage`
 * @param {string | undefined} format the wire format of the request it answers
 */
export function usageText(usage, format) {
  const u = usage ?? {};
  const input = u.inputTokens ?? 0;
  const cacheRead = u.cacheReadTokens ?? 0;
  const base = format === 'anthropic' ? input : Math.max(0, input - cacheRead);
  return [
    `in ${num(base)}`,
    cacheRead ? `cache read ${num(cacheRead)}` : '',
    u.cacheWriteTokens
      ? `cache write ${num(u.cacheWriteTokens)}${u.cacheWrite1hTokens ? ` (1h ${num(u.cacheWrite1hTokens)})` : ''}`
      : '',
    `out ${num(u.outputTokens)}`,
  ]
    .filter(Boolean)
    .join(' · ');
}

/** @returns {Savings} */
export const noSavings = () => ({ trims: 0, trimChars: 0, soft: 0, cleared: 0, prunedChars: 0, setAside: 0 });

/** @param {Savings} s */
export function savingsText(s) {
  const parts = [];
  if (s.trims > 0)
    parts.push(`${s.trims} tool result${s.trims === 1 ? '' : 's'} trimmed (−${num(s.trimChars)} chars)`);
  if (s.soft + s.cleared > 0)
    parts.push(`pruning: ${s.soft} soft-trimmed, ${s.cleared} cleared (−${num(s.prunedChars)} chars)`);
  if (s.setAside > 0) parts.push(`${s.setAside} image${s.setAside === 1 ? '' : 's'} set aside`);
  return parts.length > 0 ? `Decided this turn: ${parts.join('; ')}` : '';
}

const MECHANISM_NAMES = /** @type {Record<string, string>} */ ({
  trimming: 'trimming',
  pruning: 'pruning',
  imageSetAside: 'images set aside',
  imageReplay: 'image replay',
});

/**
 * What the mechanisms removed from this request, as its response records it (estimate
 * characters, replayed decisions included); empty when the response has no such record.
 * @param {LogEvent} response
 */
export function removedText(response) {
  const removed = response.mechanisms?.removed;
  if (!removed || typeof removed !== 'object') return '';
  let total = 0;
  const parts = [];
  for (const [k, v] of Object.entries(removed)) {
    if (typeof v !== 'number' || v <= 0) continue;
    total += v;
    parts.push(`${MECHANISM_NAMES[k] ?? k} ${num(v)}`);
  }
  return parts.length > 0
    ? `Removed from what the model received: ${parts.join(' · ')} chars (≈ ${num(Math.round(total / 4))} tokens)`
    : '';
}
