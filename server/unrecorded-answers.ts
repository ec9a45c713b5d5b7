/**
 * Answers the client got whose record failed: the chat log could not take the response (the store
 * unreachable while the provider was answering, the chat's lock held by another replica past its
 * wait) or the usage ledger could not take its tokens. The client already has its answer, so the
 * record is not thrown away with a log line: it is kept in memory and tried again in the
 * background, with a growing pause, until the store answers. Bounded: at most `maxWaiting` answers
 * wait, each at most `maxAgeMs`; one past either bound, or one the store refuses outright, is given
 * up, logged at error with its request and chat ids and counted in `oda_answers_unrecorded_total`.
 * At shutdown, what waits is tried once more (`flush`) before the chat log closes.
 */
import { isOdaError } from '../lib/errors.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';

/** One part of an answer's record, run until it succeeds, in order with the others. */
export interface RecordStep {
  /** What the step records, named in the logs (`response`, `usage`, `owners`). */
  what: string;
  /** `again`: an earlier run of this very step failed, and may have stored part of it. */
  run(again: boolean): Promise<void>;
}

/** Why an answer was given up (the `reason` label of `oda_answers_unrecorded_total`). */
export type GivenUpReason = 'expired' | 'full' | 'refused' | 'shutdown';

export interface UnrecordedAnswersOptions {
  logger: Logger;
  metrics: Metrics;
  random: () => number;
  /** Answers kept waiting at most; one more is given up at once. Default 1000. */
  maxWaiting?: number;
  /** How long an answer is tried again before it is given up. Default 10 minutes. */
  maxAgeMs?: number;
  /** Pause before the first try again, doubled after each failed one up to `maxDelayMs`. */
  firstDelayMs?: number;
  maxDelayMs?: number;
  now?: () => number;
}

interface Waiting {
  reqId: string;
  chatId: string;
  since: number;
  /** What is still to record, in order; the first one failed last time when `headFailed`. */
  steps: RecordStep[];
  headFailed: boolean;
  tries: number;
  timer?: NodeJS.Timeout;
  running?: Promise<void>;
  lastError?: unknown;
}

/** A failure no later try changes: the store refused the record itself (a 4xx: a removed chat). */
const refused = (err: unknown) => isOdaError(err) && err.status < 500;

/** The records of answers that wait for the store to answer again. */
export class UnrecordedAnswers {
  private readonly waiting = new Set<Waiting>();
  private readonly opts: Required<UnrecordedAnswersOptions>;
  private closed = false;

  constructor(opts: UnrecordedAnswersOptions) {
    this.opts = {
      maxWaiting: 1000,
      maxAgeMs: 10 * 60_000,
      firstDelayMs: 250,
      maxDelayMs: 15_000,
      now: Date.now,
      ...opts,
    };
  }

  /** Answers waiting to be recorded. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * Runs `steps` in order, once each; when one fails, it and the ones after it are tried again in
   * the background. Never throws: the answer is worth more than its record.
   */
  async record(ids: { reqId: string; chatId: string }, steps: RecordStep[]): Promise<void> {
    const entry: Waiting = { ...ids, since: this.opts.now(), steps: [...steps], headFailed: false, tries: 0 };
    await this.attempt(entry);
    if (entry.steps.length === 0) return;
    const err = entry.lastError;
    if (refused(err)) return this.giveUp(entry, 'refused');
    if (this.closed) return this.giveUp(entry, 'shutdown');
    if (this.waiting.size >= this.opts.maxWaiting) return this.giveUp(entry, 'full');
    this.opts.logger.warn(
      { err, reqId: entry.reqId, chatId: entry.chatId, missing: entry.steps.map((s) => s.what) },
      'could not append the response to the chat log; it is tried again until the store answers',
    );
    this.waiting.add(entry);
    this.opts.metrics.answersWaiting.set(this.waiting.size);
    this.schedule(entry);
  }

  /**
   * Tries once more every answer that waits, at most `maxMs` in all (shutdown, before the chat log
   * closes); what is still missing after it stays waiting, for `close` to give up.
   */
  async flush(maxMs: number): Promise<void> {
    if (this.waiting.size === 0 || maxMs <= 0) return;
    const tries = [...this.waiting].map((entry) => {
      if (entry.running) return entry.running;
      clearTimeout(entry.timer);
      entry.timer = undefined;
      return this.tryAgain(entry, false);
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(tries),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, maxMs)))),
    ]);
    clearTimeout(timer);
  }

  /** Stops trying: every answer still waiting is given up (logged and counted). */
  close(): void {
    this.closed = true;
    for (const entry of this.waiting) this.giveUp(entry, 'shutdown');
  }

  /** Runs the steps left, in order, until one fails (kept in `lastError`) or all are done. */
  private async attempt(entry: Waiting): Promise<void> {
    while (entry.steps.length > 0) {
      const step = entry.steps[0]!;
      try {
        await step.run(entry.headFailed);
      } catch (err) {
        entry.headFailed = true;
        entry.lastError = err;
        return;
      }
      entry.steps.shift();
      entry.headFailed = false;
    }
  }

  private schedule(entry: Waiting): void {
    const { firstDelayMs, maxDelayMs, random } = this.opts;
    const base = Math.min(maxDelayMs, firstDelayMs * 2 ** Math.min(entry.tries, 20));
    entry.timer = setTimeout(
      () => {
        entry.timer = undefined;
        void this.tryAgain(entry, true);
      },
      Math.ceil(base * (0.5 + random() / 2)),
    );
    // The tries never keep the process up; at shutdown `flush` gives them a last chance.
    entry.timer.unref();
  }

  /** One try in the background (`reschedule`) or at shutdown: recorded, given up, or waiting on. */
  private tryAgain(entry: Waiting, reschedule: boolean): Promise<void> {
    entry.running = (async () => {
      entry.tries++;
      await this.attempt(entry);
      entry.running = undefined;
      if (!this.waiting.has(entry)) return;
      if (entry.steps.length === 0) {
        this.waiting.delete(entry);
        this.opts.metrics.answersWaiting.set(this.waiting.size);
        this.opts.logger.info(
          {
            reqId: entry.reqId,
            chatId: entry.chatId,
            tries: entry.tries,
            waitedMs: this.opts.now() - entry.since,
          },
          'recorded the response in the chat log after the store answered again',
        );
        return;
      }
      if (refused(entry.lastError)) return this.giveUp(entry, 'refused');
      if (this.opts.now() - entry.since >= this.opts.maxAgeMs) return this.giveUp(entry, 'expired');
      if (reschedule && !this.closed) this.schedule(entry);
    })();
    return entry.running;
  }

  private giveUp(entry: Waiting, reason: GivenUpReason): void {
    clearTimeout(entry.timer);
    this.waiting.delete(entry);
    this.opts.metrics.answersWaiting.set(this.waiting.size);
    this.opts.metrics.answersUnrecorded.inc({ reason });
    this.opts.logger.error(
      {
        err: entry.lastError,
        reqId: entry.reqId,
        chatId: entry.chatId,
        reason,
        missing: entry.steps.map((s) => s.what),
        tries: entry.tries + 1,
        waitedMs: this.opts.now() - entry.since,
      },
      'an answer the client got could not be recorded: it is missing from the chat log',
    );
  }
}
