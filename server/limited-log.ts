/**
 * Log lines a caller can cause at will (a refused connection, the 401 of a wrong key, a 429, the 400
 * of a malformed body, a 404...) are limited per kind and source, so that a flood of them cannot fill
 * the log and the disk: the first line of a kind from a source goes out at once, then at most one
 * line of that kind and source per interval (10 s), carrying `suppressed`, the number of its lines
 * left out since the one before. A source that falls quiet with lines left out gets one more line,
 * `summary: true` with that count, once its interval is over (written when the next limited line of
 * any source comes, or when the gateway closes). Only the log is limited: metrics count every event.
 *
 * Memory is bounded: a source is forgotten once its interval is over, and at most `maxSources` are
 * tracked at once; past that, the lines of new sources count against one shared source per kind
 * (its lines say `sources: "others"`), so an attacker rotating addresses cannot grow the map, nor
 * the log, without bound.
 */
import type { Request, Response } from 'express';
import type { Clock } from '../lib/clock.ts';
import type { Caller } from './auth.ts';
import { addressKey } from './connection-bounds.ts';
import type { Logger } from './logger.ts';

/** Lines of one kind and source: at most one per this interval. */
export const LIMITED_LOG_INTERVAL_MS = 10_000;
/** Sources tracked at once; further sources of a kind share one entry. */
export const LIMITED_LOG_MAX_SOURCES = 1_000;

/** Said by the lines of the entry shared by the sources past `maxSources`. */
const OTHERS = { sources: 'others' } as const;

export interface LimitedLine {
  level: 'info' | 'warn';
  /** What happened (an error code and status, a refusal's reason): lines are limited per kind and source. */
  kind: string;
  /** Who caused it, as the line names it: `{ address }`, `{ team }`, `{ provider }`, or none. */
  source: Readonly<Record<string, string>>;
  /** The request the line is about; left out of summaries, which speak for many. */
  reqId?: string;
  /** The rest of the line. */
  fields?: Readonly<Record<string, unknown>>;
  msg: string;
}

interface Entry {
  /** When the last line of this kind and source went out. */
  wroteAt: number;
  /** Its lines left out since. */
  suppressed: number;
  /** The last line left out, for the summary. */
  last?: LimitedLine;
  /** The entry shared by sources past `maxSources`. */
  others: boolean;
}

export interface LimitedLogOptions {
  intervalMs?: number;
  maxSources?: number;
}

/** Writes limited lines (see above) to `logger`, timed by `clock`. */
export class LimitedLog {
  /** Entries in the order their last line went out (oldest first): pruning walks from the front. */
  private readonly entries = new Map<string, Entry>();
  private readonly intervalMs: number;
  private readonly maxSources: number;

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    opts: LimitedLogOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? LIMITED_LOG_INTERVAL_MS;
    this.maxSources = opts.maxSources ?? LIMITED_LOG_MAX_SOURCES;
  }

  /** Writes `line` now, or counts it for the next line of its kind and source. */
  write(line: LimitedLine): void {
    const now = this.clock.now();
    let key = `${line.kind}\n${JSON.stringify(line.source)}`;
    let others = false;
    if (!this.entries.has(key)) {
      this.prune(now);
      if (this.entries.size >= this.maxSources) {
        key = `${line.kind}\n*`;
        others = true;
      }
    }
    const entry = this.entries.get(key);
    if (entry && now - entry.wroteAt < this.intervalMs) {
      entry.suppressed++;
      entry.last = line;
      return;
    }
    // Re-inserted, so the map stays in the order of the lines written.
    this.entries.delete(key);
    this.entries.set(key, { wroteAt: now, suppressed: 0, others });
    const suppressed = entry?.suppressed ?? 0;
    this.logger[line.level](
      {
        ...(line.reqId !== undefined ? { reqId: line.reqId } : {}),
        ...line.source,
        // Its `suppressed` counts the lines of every source past `maxSources`, not this one's alone.
        ...(others ? OTHERS : {}),
        ...line.fields,
        ...(suppressed > 0 ? { suppressed } : {}),
      },
      line.msg,
    );
    this.prune(now);
  }

  /** Writes the summaries of every source with lines left out (the gateway is closing). */
  flush(): void {
    for (const entry of this.entries.values()) this.summarize(entry);
    this.entries.clear();
  }

  /** Sources tracked now (tests check the bound). */
  get size(): number {
    return this.entries.size;
  }

  /** Forgets the sources whose interval is over, writing the summary of those with lines left out. */
  private prune(now: number): void {
    for (const [key, entry] of this.entries) {
      if (now - entry.wroteAt < this.intervalMs) return;
      this.entries.delete(key);
      this.summarize(entry);
    }
  }

  private summarize(entry: Entry): void {
    const last = entry.last;
    if (entry.suppressed === 0 || !last) return;
    this.logger[last.level](
      {
        ...(entry.others ? OTHERS : last.source),
        ...last.fields,
        suppressed: entry.suppressed,
        summary: true,
      },
      last.msg,
    );
  }
}

/**
 * The source a refused request's line names: its team when the key was a team's, else the client
 * address it came from (an IPv6 address by its /64, as the connection caps count it).
 */
export function requestSource(req: Request, res: Response): Record<string, string> {
  const team = (res.locals.caller as Caller | undefined)?.team;
  return team !== undefined ? { team } : { address: addressKey(req.socket.remoteAddress) };
}
