import type { RequestView } from '../providers/request-view.ts';
import { estimateTokens } from './cache-ttl-pruning/index.ts';

/**
 * The size of what the model receives, in estimated tokens, for the compaction threshold. It uses
 * the same estimate as pruning (characters / 4 over the messages, images 8000 characters).
 */
export function estimateTokensForCompaction(view: RequestView): number {
  return estimateTokens(view);
}
