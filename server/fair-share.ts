/**
 * Fair share of a shared gateway (SPEC section 14): at most `teams[].maxConcurrent` calls of one
 * team and `server.maxConcurrent` calls in all are in flight at once. A call over either cap is a
 * 429 in the endpoint's format with `retry-after: 1` (the SDKs wait and try again), before its body
 * is read: one team holding hundreds of slow streams cannot take every upstream connection from the
 * others, and at most `server.maxConcurrent` bodies of up to `server.bodyLimit` are held in memory.
 *
 * A call is a request that changes something (every method but GET, HEAD and OPTIONS), a read that
 * carries a body (held in memory like a call's, so it is bounded the same way), or a read the
 * gateway forwards to a provider (a stored response, its stream, its input items: each holds an
 * upstream connection for as long as the provider takes). A live tail of a chat's log
 * (`GET /v1/sessions/{id}/tail`) stays open as long as its viewer and reads the log while it does:
 * tails have caps of their own, the same numbers, so a team's viewers never take its call slots and
 * one team's tails cannot hold every connection the gateway accepts. Other reads (sessions, models,
 * health) are not counted. The counts are per process. A model call keeps its slot until its work
 * is over (`holdCallSlot`), also when its client leaves earlier: one team cannot pile up abandoned
 * calls, each still parsing and logging a large body, beyond its share.
 */
import type { RequestHandler } from 'express';
import type { IncomingHttpHeaders } from 'node:http';
import { OdaError } from '../lib/errors.ts';
import type { Config } from '../config/config.ts';
import type { Caller } from './auth.ts';
import { hasBody } from './content-type-guard.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The reads the gateway forwards to a provider: `GET /v1/responses/{id}` and its `/input_items`. */
const FORWARDED_READ = /^\/v1\/responses\/[^/]+(?:\/input_items)?\/?$/i;

/** A live tail of a chat's log. */
const TAIL = /^\/v1\/sessions\/[^/]+\/tail\/?$/i;

/** Whether a request is a live tail (counted apart from calls). */
export function isTail(req: { method: string; path: string }): boolean {
  return READS.has(req.method) && TAIL.test(req.path);
}

/** Whether a request takes a slot (see above). */
export function isCall(req: { method: string; path: string; headers: IncomingHttpHeaders }): boolean {
  if (!READS.has(req.method)) return true;
  return hasBody(req.headers) || FORWARDED_READ.test(req.path);
}

/** Counts of calls in flight, in all and per team. */
export class InFlight {
  private total = 0;
  private readonly perTeam = new Map<string, number>();

  constructor(
    private readonly maxTotal: number,
    private readonly teamLimits: ReadonlyMap<string, number>,
  ) {}

  /** Takes a slot for `team` (undefined: admins and open gateways), or says which cap is full. */
  acquire(team: string | undefined): 'ok' | 'team' | 'gateway' {
    const teamLimit = team === undefined ? undefined : this.teamLimits.get(team);
    const teamCount = team === undefined ? 0 : (this.perTeam.get(team) ?? 0);
    if (teamLimit !== undefined && teamCount >= teamLimit) return 'team';
    if (this.total >= this.maxTotal) return 'gateway';
    this.total++;
    if (team !== undefined) this.perTeam.set(team, teamCount + 1);
    return 'ok';
  }

  release(team: string | undefined): void {
    this.total--;
    if (team === undefined) return;
    const n = (this.perTeam.get(team) ?? 1) - 1;
    if (n <= 0) this.perTeam.delete(team);
    else this.perTeam.set(team, n);
  }

  /** Calls in flight now: in all, or of one team. */
  count(team?: string): number {
    return team === undefined ? this.total : (this.perTeam.get(team) ?? 0);
  }
}

/** Express middleware (after `authenticate`, before the body is read): a slot per call, or a 429. */
export function fairShare(config: Pick<Config, 'teams' | 'server'>, inFlight?: InFlight): RequestHandler {
  const limits = new Map((config.teams ?? []).map((t) => [t.name, t.maxConcurrent] as const));
  const counts = inFlight ?? new InFlight(config.server.maxConcurrent, limits);
  const tails = new InFlight(config.server.maxConcurrent, limits);
  return function takeCallSlot(req, res, next) {
    const tail = isTail(req);
    if (!tail && !isCall(req)) return next();
    const team = (res.locals.caller as Caller | undefined)?.team;
    const slots = tail ? tails : counts;
    const got = slots.acquire(team);
    if (got !== 'ok') {
      const what = tail ? 'live tails open' : 'calls in flight';
      const message =
        got === 'team'
          ? `team "${team}" has ${limits.get(team!)} ${what}, its limit (teams[].maxConcurrent); retry when one has finished`
          : `the gateway has ${config.server.maxConcurrent} ${what}, its limit (server.maxConcurrent); retry shortly`;
      throw new OdaError('ODA_ERR_TOO_MANY_CALLS', 429, message, { headers: { 'retry-after': '1' } });
    }
    // The slot is free once the answer is finished or the connection is gone ('close', whichever
    // comes first) and the work the route holds it for is over: a call whose client left still
    // parses, logs and answers into nothing, and must keep counting until it has.
    let closed = false;
    let holds = 0;
    let released = false;
    const releaseWhenDone = () => {
      if (released || !closed || holds > 0) return;
      released = true;
      slots.release(team);
    };
    res.on('close', () => {
      closed = true;
      releaseWhenDone();
    });
    res.locals[SLOT_WORK] = (): (() => void) => {
      holds++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        holds--;
        releaseWhenDone();
      };
    };
    next();
  };
}

/** `res.locals` key of the call slot's work hold (see `holdCallSlot`). */
const SLOT_WORK = 'callSlotWork';

/**
 * Keeps the call slot `res` took counted until the function returned is called, also after its
 * client has gone (a model call's work outlives its connection); a no-op without a slot.
 */
export function holdCallSlot(res: { locals: Record<string, unknown> }): () => void {
  const hold = res.locals[SLOT_WORK] as (() => () => void) | undefined;
  return hold ? hold() : () => {};
}
