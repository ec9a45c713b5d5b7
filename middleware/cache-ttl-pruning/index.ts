/** Cache-TTL pruning (SPEC section 4): pure functions over the request view. */
export {
  CHARS_PER_TOKEN,
  IMAGE_CHARS,
  WIDE_CHAR_WEIGHT,
  charsToTokens,
  estimateChars,
  estimateTokens,
  weightedChars,
} from './estimate.ts';
export {
  DEFAULT_TTL_MS,
  EXTENDED_TTL_MS,
  isPruningOffOverride,
  pruningGate,
  resolvePruningSettings,
  type PruningGateInput,
  type PruningGateReason,
  type PruningGateResult,
  type PruningMode,
  type PruningSettings,
} from './gate.ts';
export { toolNameAllowed, type ToolNameRules } from './tool-name-filter.ts';
export {
  placedPrunableToolResults,
  prunableRange,
  prunableToolResults,
  type PlacedToolResult,
  type PrunableRange,
} from './prunable-range.ts';
export { SOFT_TRIM_SEPARATOR, softTrimNote, softTrimParts, type SoftTrimLimits } from './soft-trim.ts';
export { IMAGE_PRUNED_TEXT } from './edit-tool-result.ts';
export { toolResultDigest } from './tool-result-digest.ts';
export type { PruningAction, PruningProjectionEntry } from './projection-entry.ts';
export { mergeProjections, unplaced, type PlacedProjectionEntry } from './merge-projections.ts';
export { applyProjection, replayProjection, type ReplaySettings } from './replay-projection.ts';
export { prunePass, type PrunePassResult } from './prune-pass.ts';
