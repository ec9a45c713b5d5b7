export {
  cleanBefore,
  imageReplayCleanup,
  IMAGE_REMOVED_TEXT,
  type ImageReplayCleanupResult,
} from './image-replay-cleanup.ts';
export { removeMediaReferences, MEDIA_REFERENCE_REMOVED_TEXT } from './media-references.ts';
export { chatTurns, cutoffOfTurn, keptFromTurn, replayCutoff, type Turns } from './replay-cutoff.ts';
export {
  replayWindow,
  type ReplayWindow,
  type ReplayWindowInput,
  type ReplayWindowReason,
} from './replay-window.ts';
export { cacheIsCold } from './cache-cold.ts';
