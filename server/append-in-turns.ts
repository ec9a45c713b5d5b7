/**
 * Appends a long batch of events (a new chat's whole history) a slice at a time (SPEC section 14):
 * the checking, writing and read-model folding of 10,000 messages would otherwise hold the event
 * loop for hundreds of milliseconds, and every other request (and `/healthz`) with it. The whole
 * batch is checked first, a slice per turn, so a value the log refuses still stores nothing; then
 * each slice is appended with the count it follows, under the chat's lock the caller holds.
 */
import type { ChatLog } from '../chat-log/chat-log.ts';
import { prepareBatch } from '../chat-log/event-batch.ts';
import type { NewEvent } from '../chat-log/format/current.ts';
import { nextTurn, type TurnTaker } from '../lib/in-turns.ts';

/** Events checked or appended per turn of the event loop. */
export const EVENTS_PER_SLICE = 500;

/** `chatLog.append(id, events, expectedCount)`, in slices when the batch is long. */
export async function appendInTurns(
  chatLog: ChatLog,
  id: string,
  events: readonly NewEvent[],
  expectedCount: number,
  /** Turns shared with other requests; without, a plain turn of the event loop. */
  turns?: TurnTaker,
  slice = EVENTS_PER_SLICE,
): Promise<void> {
  const turn = () => (turns ? turns.take() : nextTurn());
  if (events.length <= slice) {
    await chatLog.append(id, events, expectedCount);
    return;
  }
  for (let i = 0; i < events.length; i += slice) {
    prepareBatch(events.slice(i, i + slice), expectedCount + i, 0);
    await turn();
  }
  for (let i = 0; i < events.length; i += slice) {
    await chatLog.append(id, events.slice(i, i + slice), expectedCount + i);
    // The file store writes synchronously: without this the slices would run in one turn anyway.
    await turn();
  }
}
