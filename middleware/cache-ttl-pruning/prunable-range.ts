/**
 * The safety rules of cache-TTL pruning (SPEC section 4): only tool results after the first user
 * message and before the `keepLastAssistants`-th last assistant message may change, and only
 * those of allowed tools. Plain conversation text is never a candidate.
 */
import type { MessageRef, RequestView, ToolResultRef } from '../../providers/request-view.ts';
import { toolNameAllowed, type ToolNameRules } from './tool-name-filter.ts';

/** Message indices a prunable tool result must lie strictly between. */
export interface PrunableRange {
  /** Index of the first real user message (one with content of its own, not only tool results). */
  readonly firstUserIndex: number;
  /** Index of the `keepLastAssistants`-th last assistant message; Infinity when that number is 0. */
  readonly cutoffIndex: number;
}

/**
 * The prunable range of a chat, or undefined when nothing may be pruned: no user message, or fewer
 * assistant messages than `keepLastAssistants`.
 */
export function prunableRange(
  messages: readonly MessageRef[],
  keepLastAssistants: number,
): PrunableRange | undefined {
  const firstUser = messages.find((m) => m.role === 'user' && m.hasOwnContent);
  if (!firstUser) return undefined;
  if (keepLastAssistants <= 0)
    return { firstUserIndex: firstUser.index, cutoffIndex: Number.POSITIVE_INFINITY };
  let seen = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role !== 'assistant') continue;
    seen += 1;
    if (seen === keepLastAssistants) return { firstUserIndex: firstUser.index, cutoffIndex: message.index };
  }
  return undefined;
}

/** True when `messageIndex` lies inside the range. */
export function inPrunableRange(range: PrunableRange, messageIndex: number): boolean {
  return messageIndex > range.firstUserIndex && messageIndex < range.cutoffIndex;
}

/**
 * The tool results pruning may change, oldest first: inside the prunable range, of an allowed
 * tool, and with a call id no other result of the request shares (a projection is keyed by call
 * id, so an ambiguous id is never touched).
 */
export function prunableToolResults(
  view: RequestView,
  settings: { readonly keepLastAssistants: number; readonly tools: ToolNameRules },
): ToolResultRef[] {
  const range = prunableRange(view.messages(), settings.keepLastAssistants);
  if (!range) return [];
  const all = view.toolResults();
  const seen = new Map<string, number>();
  for (const ref of all) seen.set(ref.callId, (seen.get(ref.callId) ?? 0) + 1);
  return all.filter(
    (ref) =>
      seen.get(ref.callId) === 1 &&
      inPrunableRange(range, ref.messageIndex) &&
      toolNameAllowed(ref.toolName, settings.tools),
  );
}
