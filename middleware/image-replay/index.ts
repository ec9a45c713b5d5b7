export {
  imageReplayCleanup,
  IMAGE_REMOVED_TEXT,
  type ImageReplayCleanupResult,
} from './image-replay-cleanup.ts';
export { removeMediaReferences, MEDIA_REFERENCE_REMOVED_TEXT } from './media-references.ts';
export { replayCutoff } from './replay-cutoff.ts';
