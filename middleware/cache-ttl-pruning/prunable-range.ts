/**
 * The safety rules of cache-TTL pruning (SPEC section 4): only tool results after the first user
 * message and before the `keepLastAssistants`-th last assistant message may change, and only
 * those of allowed tools. Plain conversation text is never a candidate.
 */
import type { MessageRef, RequestView, ToolResultRef } from '../../providers/request-view.ts';
import { toolNameAllowed, type ToolNameRules } from './tool-name-filter.ts';
import { toolResultDigest } from './tool-result-digest.ts';

/** Message indices a prunable tool result must lie strictly between. */
export interface PrunableRange {
  /** Index of the first real user message (one with content of its own, not only tool results). */
  readonly firstUserIndex: number;
  /** Index of the `keepLastAssistants`-th last assistant message; Infinity when that number is 0. */
  readonly cutoffIndex: number;
}

/** A tool result and its position in `view.toolResults()`, which names it within one request. */
export interface PlacedToolResult {
  readonly ref: ToolResultRef;
  readonly index: number;
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
 * Positions of the results that share both their call id and their text with another result. A
 * projection entry names its result by call id and digest, and such results cannot be told apart
 * by it: after one of them is pruned, a second replay would find the other. So none of them is
 * pruned. A call id a server hands out again with other output is no obstacle.
 */
function repeatedResults(all: readonly ToolResultRef[]): Set<number> {
  const uses = new Map<string, number>();
  for (const ref of all) uses.set(ref.callId, (uses.get(ref.callId) ?? 0) + 1);
  const byKey = new Map<string, number[]>();
  all.forEach((ref, index) => {
    if ((uses.get(ref.callId) ?? 0) < 2) return;
    const key = `${ref.callId}\u0000${toolResultDigest(ref)}`;
    const at = byKey.get(key);
    if (at) at.push(index);
    else byKey.set(key, [index]);
  });
  const repeated = new Set<number>();
  for (const at of byKey.values()) if (at.length > 1) for (const index of at) repeated.add(index);
  return repeated;
}

/**
 * The tool results pruning may change, oldest first, with their positions: inside the prunable
 * range, of an allowed tool, and not sharing its call id and text with another result.
 */
export function placedPrunableToolResults(
  view: RequestView,
  settings: { readonly keepLastAssistants: number; readonly tools: ToolNameRules },
): PlacedToolResult[] {
  const range = prunableRange(view.messages(), settings.keepLastAssistants);
  if (!range) return [];
  const all = view.toolResults();
  const repeated = repeatedResults(all);
  const out: PlacedToolResult[] = [];
  all.forEach((ref, index) => {
    if (
      !repeated.has(index) &&
      inPrunableRange(range, ref.messageIndex) &&
      toolNameAllowed(ref.toolName, settings.tools)
    )
      out.push({ ref, index });
  });
  return out;
}

/** The tool results pruning may change, oldest first (see `placedPrunableToolResults`). */
export function prunableToolResults(
  view: RequestView,
  settings: { readonly keepLastAssistants: number; readonly tools: ToolNameRules },
): ToolResultRef[] {
  return placedPrunableToolResults(view, settings).map((placed) => placed.ref);
}
