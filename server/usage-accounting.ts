/**
 * The accounts of an answered model call (SPEC section 11): what the mechanisms did goes into the
 * response event (so the chat's read models count it and later requests replay the image replay
 * window), and the billed tokens and removals go into the team's day in the usage ledger and into
 * `oda_tokens_total{kind}`.
 */
import type { Mechanisms, NewEvent } from '../chat-log/format/current.ts';
import { billedTokens } from '../chat-log/read-models/billed-tokens.ts';
import { removalsOf, removalsView, savingsModel } from '../chat-log/read-models/savings.ts';
import { countsOf, type Counts } from '../chat-log/usage-ledger.ts';
import { positiveRemovals } from '../middleware/accounting/removal-meter.ts';
import type { CallContext } from '../middleware/call-context.ts';
import { mayHaveBeenApplied } from '../chat-log/store-redis-replies.ts';
import type { AppContext } from './app-context.ts';
import type { Logger } from './logger.ts';
import type { RecordStep } from './unrecorded-answers.ts';

type Usage = NonNullable<Extract<NewEvent, { type: 'response' }>['usage']>;

/** What the response event records of the mechanisms; undefined when they did nothing to note. */
export function loggedMechanisms(effects: CallContext['effects']): Mechanisms | undefined {
  const removed = effects.removed ? positiveRemovals(effects.removed) : {};
  const out: Mechanisms = {
    ...(Object.keys(removed).length > 0 ? { removed } : {}),
    ...(effects.imageReplayFrom !== undefined ? { imageReplayFrom: effects.imageReplayFrom } : {}),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}

const METRIC_KIND = {
  input: 'input',
  cacheWrite: 'cache_write',
  cacheWrite1h: 'cache_write_1h',
  cacheRead: 'cache_read',
  output: 'output',
  trimming: 'removed_by_trimming',
  pruning: 'removed_by_pruning',
  imageSetAside: 'removed_by_image_set_aside',
  imageReplay: 'removed_by_image_replay',
} as const;

/**
 * Counts one answer the provider gave (2xx) for `team` in `oda_tokens_total`: its usage by kind and
 * what the mechanisms removed from its request (estimated tokens). Returns what the usage ledger is
 * to add for it (characters removed, as the ledger keeps them).
 */
export function accountAnswer(
  app: AppContext,
  format: string,
  usage: Usage | undefined,
  mechanisms: Mechanisms | undefined,
): Counts {
  const tokens = billedTokens(format, usage ?? {});
  const removed = removalsOf(mechanisms);
  for (const [kind, n] of Object.entries(tokens)) {
    if (n > 0) app.metrics.tokens.inc({ kind: METRIC_KIND[kind as keyof typeof tokens] }, n);
  }
  for (const [mechanism, chars] of Object.entries(removed)) {
    if (chars > 0)
      app.metrics.tokens.inc({ kind: METRIC_KIND[mechanism as keyof typeof removed] }, Math.ceil(chars / 4));
  }
  return countsOf(tokens, removed);
}

/** A chat's `usage` and `savings`, as `GET /v1/sessions/{id}` shows them, from its read models. */
export async function chatAccounts(
  app: AppContext,
  chatId: string,
): Promise<{ usage: Record<string, number>; savings: ReturnType<typeof removalsView> }> {
  const state = await app.chatLog.open(chatId);
  const s = state?.savings ?? savingsModel.initial();
  return {
    usage: {
      answered: s.answered,
      inputTokens: s.tokens.input,
      cacheWriteTokens: s.tokens.cacheWrite,
      cacheWrite1hTokens: s.tokens.cacheWrite1h,
      cacheReadTokens: s.tokens.cacheRead,
      outputTokens: s.tokens.output,
    },
    savings: removalsView(s.removed),
  };
}

/**
 * The step of an answer's record that adds its counts to `team`'s day of `at` in the usage ledger.
 * A lost reply is not tried again: the tokens may be counted already, and an increment tried again
 * would count them twice (at most once, as a rate-limit count).
 */
export function usageStep(
  app: AppContext,
  team: string | undefined,
  at: number,
  counts: Counts,
  log: Logger,
): RecordStep {
  return {
    what: 'usage',
    async run() {
      try {
        await app.usage.add(team, at, counts);
      } catch (err) {
        if (!mayHaveBeenApplied(err)) throw err;
        log.warn({ err }, 'the usage ledger may or may not have taken this answer; it is not tried again');
      }
    },
  };
}
