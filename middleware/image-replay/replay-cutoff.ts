/**
 * Where the image replay clean-up stops (SPEC section 4, seed 001): the newest completed turns
 * stay byte for byte so prompt-cache prefixes of recent follow-ups stay stable.
 *
 * A turn starts at a user message with content of its own (not a message of tool results only),
 * so a tool loop (assistant tool call, tool result, assistant, ...) stays inside one turn. A turn
 * is completed once it holds an assistant message and a later turn has begun: the last turn is
 * the one the model is working on, never counted and never touched, even when it already holds
 * an assistant message (a tool loop in progress). So the window of kept turns moves once per user
 * turn, on its first call, and not again in the middle of its tool loop (which would rewrite a
 * cached prefix on every step). The count covers every completed turn, with or without images.
 *
 * Positions are also named by turn ordinal (0 = the first turn): "keep from turn k" is stable while
 * the chat grows, so a window can be recorded and replayed on later requests (replay-window.ts).
 */
import type { MessageRef } from '../../providers/request-view.ts';

/** The turns of a chat: where each starts, and which are completed. */
export interface Turns {
  /** Message index where each turn starts, in order. */
  readonly starts: readonly number[];
  /** Per turn: it holds an assistant message and a later turn has begun. */
  readonly completed: readonly boolean[];
}

export function chatTurns(messages: readonly MessageRef[]): Turns {
  const starts: number[] = [];
  const holdsAnswer: boolean[] = [];
  for (const message of messages) {
    if (message.role === 'user' && message.hasOwnContent) {
      starts.push(message.index);
      holdsAnswer.push(false);
    } else if (message.role === 'assistant' && holdsAnswer.length > 0) {
      holdsAnswer[holdsAnswer.length - 1] = true;
    }
  }
  return { starts, completed: holdsAnswer.map((answered, i) => answered && i < starts.length - 1) };
}

/**
 * Ordinal of the first turn the clean-up keeps with `keepTurns`: the `keepTurns`-th newest
 * completed turn, or the current (last) turn when that is earlier; 0 (nothing cleaned) when there
 * are not that many completed turns, or no turn at all.
 */
export function keptFromTurn(turns: Turns, keepTurns: number): number {
  const current = turns.starts.length - 1;
  if (current < 0) return 0;
  if (keepTurns <= 0) return current;
  const completed: number[] = [];
  turns.completed.forEach((done, i) => {
    if (done) completed.push(i);
  });
  // A kept turn never starts after the current one, so the current turn is kept too.
  return completed[completed.length - keepTurns] ?? 0;
}

/** Index of the first message kept when turns are kept from ordinal `from` (0: none cleaned). */
export function cutoffOfTurn(turns: Turns, from: number): number {
  if (from <= 0) return 0;
  return turns.starts[Math.min(from, turns.starts.length - 1)] ?? 0;
}

/**
 * Index of the first message the clean-up must leave alone: the start of the `keepTurns`-th
 * newest completed turn, or of the last turn if that is earlier. Messages before it may be
 * cleaned; 0 means none.
 */
export function replayCutoff(messages: readonly MessageRef[], keepTurns: number): number {
  const turns = chatTurns(messages);
  return cutoffOfTurn(turns, keptFromTurn(turns, keepTurns));
}
