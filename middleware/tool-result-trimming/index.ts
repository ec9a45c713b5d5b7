export {
  cutMiddle,
  countCodePoints,
  keepHeadAndTail,
  assertCutLimits,
  TRIM_MARKER_CHARS,
  type CutLimits,
} from './cut-middle.ts';
export { trimToolResults, type TrimDecision, type TrimTrigger } from './trim-tool-results.ts';
export { replayTrims, type OnTrimReplayed } from './replay-trims.ts';
export { cutParts, partCounts, REMOVED_PART_TEXT } from './cut-parts.ts';
export { isImageStandIn, measuredParts, type MeasuredPart } from './tool-result-text.ts';
