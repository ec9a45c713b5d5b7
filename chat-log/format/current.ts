/**
 * The format version this build writes, re-exported so the code that means "the current format"
 * names no version: the next version changes only the line below (and `index.ts`).
 */
export * from './v5.ts';
