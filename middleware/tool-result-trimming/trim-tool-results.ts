/**
 * Tool-result trimming at the compaction point (SPEC section 5): every tool result whose text is
 * longer than the threshold is cut in place. A result's text is the whole of its text parts
 * (tool-result-text.ts): a result of ten 6,000-character blocks is 60,000 characters, cut once,
 * the head from its first blocks and the tail from its last. Images, structured parts, the call id
 * and the error flag stay where they are. Each trimmed result becomes one decision the chat log
 * records, which names the trimmed text by digest so replay finds it wherever its parts sit.
 */
import type { z } from 'zod';
import type { trimEvent } from '../../chat-log/format/current.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { assertCutLimits, type CutLimits } from './cut-middle.ts';
import { cutParts, partCounts } from './cut-parts.ts';
import { measuredParts } from './tool-result-text.ts';
import { countCodePoints } from '../../lib/code-points.ts';
import { sha256Hex } from '../../lib/sha256.ts';

/** A `tool-result-trimmed` event of the chat log without its envelope (seq, at, requestId, type). */
export type TrimDecision = Omit<z.infer<typeof trimEvent>, 'seq' | 'at' | 'requestId' | 'type'>;

/** Why trimming ran: the compaction threshold was crossed, or the provider refused for overflow. */
export type TrimTrigger = TrimDecision['trigger'];

/** Cuts every over-threshold tool result of `view` in place; one decision per result cut. */
export function trimToolResults(view: RequestView, cfg: CutLimits, trigger: TrimTrigger): TrimDecision[] {
  assertCutLimits(cfg);
  const { thresholdChars, headChars, tailChars } = cfg;
  const decisions: TrimDecision[] = [];
  for (const result of view.toolResults()) {
    const parts = measuredParts(result);
    if (parts.length === 0) continue;
    const texts = parts.map((p) => p.slot.text);
    // Code points never outnumber code units, so this skips most results without counting.
    if (texts.reduce((n, t) => n + t.length, 0) <= thresholdChars) continue;
    const counts = partCounts(texts);
    const originalChars = counts.reduce((a, b) => a + b, 0);
    if (originalChars <= thresholdChars) continue;
    const cut = cutParts(texts, counts, headChars, tailChars);
    // Many parts wholly in the cut, each holding the removed-part mark, could outweigh what the
    // cut saves: such a result stays as it is rather than grow.
    if (cut.reduce((n, t) => n + countCodePoints(t), 0) >= originalChars) continue;
    parts.forEach((p, i) => p.slot.set(cut[i] ?? ''));
    decisions.push({
      callId: result.callId,
      part: parts[0]!.index,
      originalChars,
      headChars,
      tailChars,
      digest: sha256Hex(texts.join('')),
      trigger,
      ...(parts.length > 1 && {
        parts: texts.map((text, i) => ({ chars: counts[i] ?? 0, digest: sha256Hex(text) })),
      }),
    });
  }
  return decisions;
}
