import { createHash } from 'node:crypto';
import type { ToolResultRef } from '../../providers/request-view.ts';

/** Joins text parts for the digest; a NUL keeps part boundaries apart. */
const PART_SEPARATOR = '\u0000';

/**
 * sha256 hex of a tool result's text (its text parts joined with a NUL): how a recorded pruning
 * projection recognises the content it applies to.
 */
export function toolResultDigest(ref: ToolResultRef): string {
  return createHash('sha256')
    .update(ref.texts.map((slot) => slot.text).join(PART_SEPARATOR), 'utf8')
    .digest('hex');
}
