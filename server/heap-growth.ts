/**
 * How far V8 lets the old generation grow past what survived its last full collection before it
 * collects again, for the gateway's own process (`npm start`; never for an app embedded by
 * `createApp`). With V8's default growth a gateway carrying a long chat (about 40 MB live: code, the
 * read models of the chats kept in memory, remembered histories) ran one full collection after the
 * other, each freeing 3-4 MB, some 3 ms of the main thread per 1 MB request; letting the old
 * generation grow to twice what survived halves the gateway's CPU per request there (see README
 * Performance). V8 reads the figure each time it sets the next limit, so setting it at start-up
 * takes effect; a `--heap-growing-percent` given to node (on its command line or in NODE_OPTIONS)
 * wins.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 100;

const FLAG = '--heap-growing-percent';

/** Whether node was given its own growth, on its command line or in NODE_OPTIONS. */
export function heapGrowthGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some(
    (arg) => arg === FLAG || arg.startsWith(`${FLAG}=`) || arg.startsWith('--heap_growing_percent'),
  );
}

/** Sets the growth unless node was given its own; returns the flag as set, or undefined. */
export function setHeapGrowth(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): string | undefined {
  if (heapGrowthGiven(execArgv, nodeOptions)) return undefined;
  const flag = `${FLAG}=${HEAP_GROWING_PERCENT}`;
  setFlagsFromString(flag);
  return flag;
}
