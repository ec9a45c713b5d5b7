/**
 * Cooperative slicing of long synchronous work (SPEC section 14): a large request's normalizing,
 * digesting and storing run a slice at a time, letting the event loop serve other requests (and
 * `/healthz`) between slices instead of stalling them all for the whole request. Slices are counted
 * in items, not time, so what runs when stays deterministic.
 */

/** Items handled between two yields: small enough that one slice takes a few milliseconds. */
export const ITEMS_PER_TURN = 256;

/** Resolves on a later turn of the event loop, after pending I/O callbacks have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** `items.map(fn)`, yielding to the event loop after every `every` items. */
export async function mapInTurns<T, U>(
  items: readonly T[],
  fn: (item: T, index: number) => U,
  every = ITEMS_PER_TURN,
): Promise<U[]> {
  const out: U[] = new Array<U>(items.length);
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % every === 0) await nextTurn();
    out[i] = fn(items[i]!, i);
  }
  return out;
}

/** `items.forEach(fn)`, yielding to the event loop after every `every` items. */
export async function forEachInTurns<T>(
  items: readonly T[],
  fn: (item: T, index: number) => void,
  every = ITEMS_PER_TURN,
): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % every === 0) await nextTurn();
    fn(items[i]!, i);
  }
}
