export { imageKey } from '../../lib/image-key.ts';
export { imageOrdinals, ordinalOf, pathKey, type ImageOrdinals } from './ordinals.ts';
export { setAsideNote, formatBytes, type SetAsideNoteFacts } from './set-aside-note.ts';
export { chooseImagesToSetAside, type ImageLimitRefusal } from './choose-images.ts';
export { replaySetAside, type RecordedSetAside } from './replay-set-aside.ts';
export { setAsideImages, type SetAsideDecision, type ImageFacts } from './set-aside-images.ts';
