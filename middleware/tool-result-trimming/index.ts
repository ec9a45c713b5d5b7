export {
  cutMiddle,
  countCodePoints,
  keepHeadAndTail,
  assertCutLimits,
  TRIM_MARKER_CHARS,
  type CutLimits,
} from './cut-middle.ts';
export { trimToolResults, type TrimDecision, type TrimTrigger } from './trim-tool-results.ts';
export { replayTrims } from './replay-trims.ts';
