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

/**
 * `items.map(fn)`, yielding to the event loop after every `every` items (taking turns with other
 * requests when a TurnTaker is given).
 */
export async function mapInTurns<T, U>(
  items: readonly T[],
  fn: (item: T, index: number) => U,
  turns?: TurnTaker,
  every = ITEMS_PER_TURN,
): Promise<U[]> {
  const out: U[] = new Array<U>(items.length);
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % every === 0) await (turns ? turns.take() : nextTurn());
    out[i] = fn(items[i]!, i);
  }
  return out;
}

/** `items.forEach(fn)`, yielding like `mapInTurns`. */
export async function forEachInTurns<T>(
  items: readonly T[],
  fn: (item: T, index: number) => void,
  turns?: TurnTaker,
  every = ITEMS_PER_TURN,
): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % every === 0) await (turns ? turns.take() : nextTurn());
    fn(items[i]!, i);
  }
}

/**
 * Hands out turns of the event loop one at a time, in order: `take()` resolves on a later turn,
 * and no two takers resume in the same turn. Requests that take a turn before each heavy stage
 * (parsing, the pipeline, serialising a large body) therefore never stack those stages into one
 * long turn, however many arrive together; `/healthz` waits for one stage at most.
 */
export class TurnTaker {
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  /** Resolves on a later turn of the event loop than any earlier taker's. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const next = this.waiting.shift();
      // Scheduled from inside an immediate, the next one runs on the following turn.
      if (this.waiting.length > 0) this.schedule();
      next?.();
    });
  }
}
