/**
 * Public read model: what a chat was billed and what the gateway spared it (SPEC section 11).
 * `tokens`: the provider's usage of every logged answer, by kind (base input, cache write, cache
 * read, output; see billed-tokens.ts). `removed`: the estimate characters each mechanism removed
 * from the requests the provider answered (2xx), as logged with each response; the snapshot also
 * gives them as estimated tokens (4 characters per token, the size estimate's rule).
 */
import { z } from 'zod';
import type { Mechanisms } from '../format/current.ts';
import type { Json, ReadModel } from './read-model.ts';
import { addTokens, billedTokens, noTokens, type BilledTokens } from './billed-tokens.ts';

const int = z.number().int().nonnegative();

export const REMOVAL_MECHANISMS = ['trimming', 'pruning', 'imageSetAside', 'imageReplay'] as const;
export type RemovalMechanism = (typeof REMOVAL_MECHANISMS)[number];
export type RemovedChars = Record<RemovalMechanism, number>;

/** Characters per estimated token (the size estimate's rule). */
export const CHARS_PER_TOKEN = 4;

const tokens = z.strictObject({
  input: int,
  cacheWrite: int,
  cacheWrite1h: int,
  cacheRead: int,
  output: int,
});
const removed = z.strictObject({ trimming: int, pruning: int, imageSetAside: int, imageReplay: int });
const savingsState = z.strictObject({
  /** Requests the provider answered (2xx): their usage and removals count. */
  answered: int,
  tokens,
  removed,
  /** Wire format of the latest request (how its answer's usage counts input). */
  format: z.string().nullable(),
  /**
   * The seq of the chat's first own event: a branch begins with copies of its parent's events
   * (`inheritedEvents` in its header), whose answers the parent's bill already holds.
   */
  ownFrom: int,
});
export type SavingsState = z.infer<typeof savingsState>;

export function noRemovals(): RemovedChars {
  return { trimming: 0, pruning: 0, imageSetAside: 0, imageReplay: 0 };
}

/** The removals one response logged, each a whole number >= 0. */
export function removalsOf(mechanisms: Mechanisms | undefined): RemovedChars {
  const out = noRemovals();
  const r = mechanisms?.removed;
  if (r) for (const m of REMOVAL_MECHANISMS) out[m] = r[m] ?? 0;
  return out;
}

export function addRemovals(a: RemovedChars, b: RemovedChars): RemovedChars {
  const out = noRemovals();
  for (const m of REMOVAL_MECHANISMS) out[m] = a[m] + b[m];
  return out;
}

/** Removals as characters and estimated tokens, per mechanism and in all. */
export function removalsView(
  r: RemovedChars,
): Record<RemovalMechanism | 'total', { chars: number; tokens: number }> {
  const entry = (chars: number) => ({ chars, tokens: Math.ceil(chars / CHARS_PER_TOKEN) });
  const total = REMOVAL_MECHANISMS.reduce((n, m) => n + r[m], 0);
  return {
    trimming: entry(r.trimming),
    pruning: entry(r.pruning),
    imageSetAside: entry(r.imageSetAside),
    imageReplay: entry(r.imageReplay),
    total: entry(total),
  };
}

/** The billed tokens as the API shows them. */
export function tokensView(t: BilledTokens): Json {
  return {
    inputTokens: t.input,
    cacheWriteTokens: t.cacheWrite,
    cacheWrite1hTokens: t.cacheWrite1h,
    cacheReadTokens: t.cacheRead,
    outputTokens: t.output,
  };
}

export const savingsModel: ReadModel<SavingsState> = {
  name: 'savings',
  version: 3,
  internal: false,
  schema: savingsState,
  initial: (header) => ({
    answered: 0,
    tokens: noTokens(),
    removed: noRemovals(),
    format: null,
    ownFrom: header?.inheritedEvents ?? 0,
  }),
  apply(state, e) {
    if (e.type === 'request') return state.format === e.format ? state : { ...state, format: e.format };
    if (e.type !== 'response' || e.status < 200 || e.status >= 300 || e.seq < state.ownFrom) return state;
    return {
      ...state,
      answered: state.answered + 1,
      tokens: e.usage
        ? addTokens(state.tokens, billedTokens(state.format ?? undefined, e.usage))
        : state.tokens,
      removed: addRemovals(state.removed, removalsOf(e.mechanisms)),
    };
  },
  view(state) {
    return {
      answered: state.answered,
      usage: tokensView(state.tokens),
      removed: removalsView(state.removed),
    };
  },
};
