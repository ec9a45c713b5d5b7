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
 * requests when turns are given).
 */
export async function mapInTurns<T, U>(
  items: readonly T[],
  fn: (item: T, index: number) => U,
  turns?: Turns,
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
  turns?: Turns,
  every = ITEMS_PER_TURN,
): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % every === 0) await (turns ? turns.take() : nextTurn());
    fn(items[i]!, i);
  }
}

/** Turns of the event loop for one party's heavy work (see `TurnTaker.for`). */
export interface Turns {
  /** Resolves on a later turn of the event loop, when this party's turn has come. */
  take(): Promise<void>;
}

/**
 * Hands out turns of the event loop one at a time: `take()` resolves on a later turn, and no two
 * takers resume in the same turn. Requests that take a turn before each heavy stage (parsing, the
 * pipeline, serialising a large body) therefore never stack those stages into one long turn,
 * however many arrive together; `/healthz` waits for one stage at most.
 *
 * Turns go round-robin between parties (a team, or the admins and open callers as one more party),
 * first come first served within a party. One team's many heavy requests then share one turn per
 * round between them: a heavy request of another team waits at most about one turn per party ahead
 * of it, not one per request, and the team that sends more only waits longer itself.
 */
export class TurnTaker implements Turns {
  /** Each party's waiting takers, oldest first; a party is here only while one waits. */
  private readonly waiting = new Map<string | undefined, Array<() => void>>();
  /** The parties with takers waiting, in the order their next turns come. */
  private readonly rotation: Array<string | undefined> = [];
  private scheduled = false;

  /** Resolves on a later turn of the event loop, after the turns of the parties ahead of `party`. */
  take(party?: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.waiting.get(party);
      if (queue) queue.push(resolve);
      else {
        this.waiting.set(party, [resolve]);
        this.rotation.push(party);
      }
      this.schedule();
    });
  }

  /** The turns of one party: a team's name, or undefined for admins and open gateways. */
  for(party: string | undefined): Turns {
    return { take: () => this.take(party) };
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const party = this.rotation.shift();
      const queue = this.waiting.get(party);
      const next = queue?.shift();
      // The party goes to the back of the round when it has more takers waiting.
      if (queue && queue.length > 0) this.rotation.push(party);
      else this.waiting.delete(party);
      // Scheduled from inside an immediate, the next one runs on the following turn.
      if (this.rotation.length > 0) this.schedule();
      next?.();
    });
  }
}
