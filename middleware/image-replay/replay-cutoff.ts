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
 */
import type { MessageRef } from '../../providers/request-view.ts';

/**
 * Index of the first message the clean-up must leave alone: the start of the `keepTurns`-th
 * newest completed turn, or of the last turn if that is earlier. Messages before it may be
 * cleaned; 0 means none.
 */
export function replayCutoff(messages: readonly MessageRef[], keepTurns: number): number {
  const starts: number[] = [];
  const completed: boolean[] = [];
  for (const message of messages) {
    if (message.role === 'user' && message.hasOwnContent) {
      starts.push(message.index);
      completed.push(false);
    } else if (message.role === 'assistant' && completed.length > 0) {
      completed[completed.length - 1] = true;
    }
  }
  const current = starts[starts.length - 1];
  if (current === undefined) return 0;
  if (keepTurns <= 0) return current;
  const completedStarts = starts.slice(0, -1).filter((_, i) => completed[i]);
  // A kept turn never starts after the current one, so the current turn is kept too.
  return completedStarts[completedStarts.length - keepTurns] ?? 0;
}
