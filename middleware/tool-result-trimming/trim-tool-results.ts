/**
 * Tool-result trimming at the compaction point (SPEC section 5): every text part of every tool
 * result longer than the threshold is cut in place; images, structured parts, the call id and
 * the error flag stay where they are. Each cut becomes a decision the chat log records.
 */
import type { z } from 'zod';
import type { trimEvent } from '../../chat-log/format/current.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { assertCutLimits, countCodePoints, keepHeadAndTail, type CutLimits } from './cut-middle.ts';
import { sha256Hex } from '../../lib/sha256.ts';

/** A `tool-result-trimmed` event of the chat log without its envelope (seq, at, requestId, type). */
export type TrimDecision = Omit<z.infer<typeof trimEvent>, 'seq' | 'at' | 'requestId' | 'type'>;

/** Why trimming ran: the compaction threshold was crossed, or the provider refused for overflow. */
export type TrimTrigger = TrimDecision['trigger'];

/** Cuts every over-threshold tool-result text part of `view` in place; one decision per cut. */
export function trimToolResults(view: RequestView, cfg: CutLimits, trigger: TrimTrigger): TrimDecision[] {
  assertCutLimits(cfg);
  const { thresholdChars, headChars, tailChars } = cfg;
  const decisions: TrimDecision[] = [];
  for (const result of view.toolResults()) {
    result.texts.forEach((slot, part) => {
      const original = slot.text;
      // Code points never outnumber code units, so this skips most parts without counting.
      if (original.length <= thresholdChars) return;
      const originalChars = countCodePoints(original);
      if (originalChars <= thresholdChars) return;
      slot.set(keepHeadAndTail(original, headChars, tailChars));
      decisions.push({
        callId: result.callId,
        part,
        originalChars,
        headChars,
        tailChars,
        digest: sha256Hex(original),
        trigger,
      });
    });
  }
  return decisions;
}
