/**
 * Appends a long batch of events (a new chat's whole history) a slice at a time (SPEC section 14):
 * the checking, writing and read-model folding of 10,000 messages, or of 10 MB of tool results,
 * would otherwise hold the event loop for hundreds of milliseconds, and every other request (and
 * `/healthz`) with it. Slices hold at most 500 events and about 1 MB of text. When there is more
 * than one, the whole batch is checked first, a slice per turn, so a value the log refuses still
 * stores nothing; then each slice is appended with the count it follows, under the chat's lock the
 * caller holds.
 */
import type { ChatLog } from '../chat-log/chat-log.ts';
import { checkBatch } from '../chat-log/event-batch.ts';
import type { NewEvent } from '../chat-log/format/current.ts';
import { nextTurn, type Turns } from '../lib/in-turns.ts';

/** Most events, and about the most characters of text, appended per turn of the event loop. */
export const SLICE_LIMITS = { events: 500, chars: 1 << 20 };

/** About how much text a value holds: its strings' lengths, without serialising it. */
export function approxChars(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 8;
  let n = 2;
  if (Array.isArray(value)) for (const v of value) n += approxChars(v) + 1;
  // `for...in`, not Object.entries: no pair arrays made (events are plain objects, nothing inherited).
  else for (const k in value) n += k.length + approxChars((value as Record<string, unknown>)[k]) + 4;
  return n;
}

/** [start, end) of each slice of `events`. */
function slicesOf(events: readonly NewEvent[], limits: typeof SLICE_LIMITS): Array<[number, number]> {
  const slices: Array<[number, number]> = [];
  let start = 0;
  let chars = 0;
  events.forEach((e, i) => {
    chars += approxChars(e);
    if (i + 1 - start >= limits.events || chars >= limits.chars) {
      slices.push([start, i + 1]);
      start = i + 1;
      chars = 0;
    }
  });
  if (start < events.length) slices.push([start, events.length]);
  return slices;
}

/** `chatLog.append(id, events, expectedCount)`, in slices when the batch is long. */
export async function appendInTurns(
  chatLog: ChatLog,
  id: string,
  events: readonly NewEvent[],
  expectedCount: number,
  /** Turns shared with other requests; without, a plain turn of the event loop. */
  turns?: Turns,
  limits = SLICE_LIMITS,
): Promise<void> {
  // The binder's own events (built from the parsed request): not validated against the schema again.
  const built = { built: true };
  const slices = slicesOf(events, limits);
  if (slices.length <= 1) {
    await chatLog.append(id, events, expectedCount, built);
    return;
  }
  const turn = () => (turns ? turns.take() : nextTurn());
  for (const [start, end] of slices) {
    checkBatch(events.slice(start, end), expectedCount + start, 0, true);
    await turn();
  }
  for (const [start, end] of slices) {
    await chatLog.append(id, events.slice(start, end), expectedCount + start, built);
    // The file store writes synchronously: without this the slices would run in one turn anyway.
    await turn();
  }
}
