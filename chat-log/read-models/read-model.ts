/**
 * A read model: a small value built from a chat's log by a pure reducer, so it can be kept in
 * memory, caught up with new events, and saved as a checkpoint (its state is plain JSON).
 */
import type { z } from 'zod';
import type { Event, Header } from '../format/current.ts';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface ReadModel<S> {
  /** Stable name: the snapshot key and the checkpoint name (with the version). */
  readonly name: string;
  /** Bumped whenever `apply` or the state's shape changes, so old checkpoints are not reused. */
  readonly version: number;
  /** Internal models serve the gateway only and are left out of snapshots. */
  readonly internal: boolean;
  /** Checks a state read back from a checkpoint (an edge: the file may be anything). */
  readonly schema: z.ZodType<S>;
  /**
   * The state of a chat with no events folded yet. `header` is the chat's (absent for a state not
   * tied to one chat): a branch's header says how many of its first events it inherited.
   */
  initial(header?: Header): S;
  /** The state after `event`; must not modify `state`. */
  apply(state: S, event: Event): S;
  /**
   * The state after `events`, in order: the same result as applying them one by one, for models
   * whose state grows with the log (one copy per batch instead of one per event).
   */
  applyBatch?(state: S, events: readonly Event[]): S;
  /** The public value of a state; the state itself when absent. */
  view?(state: S): Json;
}

/** Folds events into a state, in order. */
export function fold<S>(model: ReadModel<S>, state: S, events: readonly Event[]): S {
  if (model.applyBatch) return model.applyBatch(state, events);
  let s = state;
  for (const e of events) s = model.apply(s, e);
  return s;
}
