/**
 * The usage ledger (SPEC section 11): billed tokens by kind and what the mechanisms removed, summed
 * per team and UTC day as answers are logged, so `GET /v1/usage` never opens a chat. One small
 * record per day: on the file store a JSON file per day under `<dataDir>/usage/`, on Redis a hash
 * per day shared by every replica.
 *
 * The file ledger keeps the days it touched in memory and writes a changed day (whole, through a
 * temporary file and a rename) a moment after the change and on close: a crash loses at most that
 * moment of counts, never a day. Like the file store, it belongs to one process.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { KeyedMutex } from './keyed-mutex.ts';
import { RedisLogBackend } from './store-redis.ts';
import { TOKEN_KINDS, type BilledTokens } from './read-models/billed-tokens.ts';
import { REMOVAL_MECHANISMS, type RemovedChars } from './read-models/savings.ts';

/** The counters kept per team and day. */
export const COUNTERS = ['answers', ...TOKEN_KINDS, ...REMOVAL_MECHANISMS] as const;
export type Counter = (typeof COUNTERS)[number];
export type Counts = Record<Counter, number>;

export function noCounts(): Counts {
  return Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Counts;
}

/** One answer's contribution: 1 answer, its billed tokens and its removals. */
export function countsOf(tokens: BilledTokens, removed: RemovedChars): Counts {
  return { answers: 1, ...tokens, ...removed };
}

/** A team's counts on one day; `team` is null for callers without a team (open gateway, admins). */
export interface UsageRow {
  day: string;
  team: string | null;
  counts: Counts;
}

export interface UsageLedger {
  /** Adds counts to `team`'s day (the UTC day of `at`, in ms). */
  add(team: string | undefined, at: number, counts: Counts): Promise<void>;
  /** The rows of the days `from`..`to` (YYYY-MM-DD, inclusive), for `teams` (all when undefined). */
  rows(from: string, to: string, teams?: ReadonlySet<string | null>): Promise<UsageRow[]>;
  close(): Promise<void>;
}

/** The UTC day (YYYY-MM-DD) of a time in ms. */
export function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;

/** `utcDay` remembering the last day it named: every call of a day after the first costs a compare. */
export class UtcDays {
  private start = 0;
  private end = 0;
  private day = '';

  of(at: number): string {
    if (at >= this.start && at < this.end) return this.day;
    this.day = utcDay(at);
    this.start = Math.floor(at / DAY_MS) * DAY_MS;
    this.end = this.start + DAY_MS;
    return this.day;
  }
}

/**
 * Every day from `from` to `to` (YYYY-MM-DD, inclusive), in order. Compared as times, not as text:
 * the day after 9999-12-31 prints as `+010000-01-01`, which sorts before it.
 */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end; t += DAY_MS) days.push(utcDay(t));
  return days;
}

/** The ledger's name for "no team" (team names are never empty). */
const NO_TEAM = '';
const teamKey = (team: string | undefined | null): string => team ?? NO_TEAM;
const teamOf = (key: string): string | null => (key === NO_TEAM ? null : key);

function addInto(into: Counts, counts: Counts): void {
  for (const c of COUNTERS) into[c] += counts[c];
}

const count = z.number().int().nonnegative();
/** Counters added after the day file's first release: a day file written before them counts 0. */
const LATER_COUNTERS: ReadonlySet<Counter> = new Set(['cacheWrite1h']);
const dayFile = z.strictObject({
  version: z.literal(1),
  day: z.string(),
  teams: z.record(
    z.string(),
    z.strictObject(
      Object.fromEntries(COUNTERS.map((c) => [c, LATER_COUNTERS.has(c) ? count.default(0) : count])),
    ),
  ),
});

/** The ledger of the file store: `<dir>/<YYYY-MM-DD>.json`. */
export class FileUsageLedger implements UsageLedger {
  private readonly days = new Map<string, Map<string, Counts>>();
  private readonly dirty = new Set<string>();
  private readonly mutex = new KeyedMutex();
  private readonly dayOf = new UtcDays();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly dir: string,
    /** How long a changed day waits before it is written (ms). */
    private readonly flushDelayMs = 250,
  ) {}

  async add(team: string | undefined, at: number, counts: Counts): Promise<void> {
    const day = this.dayOf.of(at);
    await this.mutex.run(day, async () => {
      const teams = await this.load(day);
      const key = teamKey(team);
      const row = teams.get(key) ?? noCounts();
      addInto(row, counts);
      teams.set(key, row);
      this.dirty.add(day);
    });
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushDelayMs);
    this.timer.unref?.();
  }

  async rows(from: string, to: string, teams?: ReadonlySet<string | null>): Promise<UsageRow[]> {
    const out: UsageRow[] = [];
    for (const day of daysBetween(from, to)) {
      // A day only read is not kept: a wide query does not fill the memory with empty days.
      const byTeam = await this.mutex.run(day, async () => this.days.get(day) ?? (await this.read(day)));
      for (const [key, counts] of byTeam) {
        const team = teamOf(key);
        if (!teams || teams.has(team)) out.push({ day, team, counts: { ...counts } });
      }
    }
    return out;
  }

  /** Writes every changed day. */
  async flush(): Promise<void> {
    const run = this.flushing.then(async () => {
      const days = [...this.dirty];
      this.dirty.clear();
      if (days.length === 0) return;
      await mkdir(this.dir, { recursive: true });
      for (const day of days) {
        await this.mutex.run(day, async () => {
          const teams = Object.fromEntries(this.days.get(day) ?? []);
          const path = join(this.dir, `${day}.json`);
          const tmp = `${path}.tmp`;
          await writeFile(tmp, JSON.stringify({ version: 1, day, teams }));
          await rename(tmp, path);
        });
      }
    });
    this.flushing = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** The day's counts, read from its file the first time and kept (the caller holds the day's mutex). */
  private async load(day: string): Promise<Map<string, Counts>> {
    const held = this.days.get(day);
    if (held) return held;
    const teams = await this.read(day);
    this.days.set(day, teams);
    return teams;
  }

  /** The day's counts as its file holds them (none without a file). */
  private async read(day: string): Promise<Map<string, Counts>> {
    const teams = new Map<string, Counts>();
    let text: string | undefined;
    try {
      text = await readFile(join(this.dir, `${day}.json`), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (text !== undefined) {
      const parsed = dayFile.safeParse(JSON.parse(text));
      if (!parsed.success)
        throw new Error(`usage ledger file for ${day} is not valid: ${parsed.error.message}`);
      for (const [key, counts] of Object.entries(parsed.data.teams)) teams.set(key, counts as Counts);
    }
    return teams;
  }
}

/** The ledger of the Redis store: one hash per day, `<team>|<counter>` -> count, shared by replicas. */
export class RedisUsageLedger implements UsageLedger {
  private readonly dayOf = new UtcDays();

  constructor(
    private readonly run: <T>(op: (redis: Redis) => Promise<T>) => Promise<T>,
    private readonly prefix: string,
  ) {}

  private key(day: string): string {
    return `${this.prefix}usage:${day}`;
  }

  async add(team: string | undefined, at: number, counts: Counts): Promise<void> {
    const key = this.key(this.dayOf.of(at));
    const t = teamKey(team);
    await this.run(async (r) => {
      const tx = r.multi();
      for (const c of COUNTERS) if (counts[c] !== 0) tx.hincrby(key, `${t}|${c}`, counts[c]);
      const replies = await tx.exec();
      const failed = replies?.find(([err]) => err);
      if (failed?.[0]) throw failed[0];
    });
  }

  async rows(from: string, to: string, teams?: ReadonlySet<string | null>): Promise<UsageRow[]> {
    const days = daysBetween(from, to);
    const hashes = await this.run(async (r) => {
      const p = r.pipeline();
      for (const day of days) p.hgetall(this.key(day));
      return (await p.exec()) ?? [];
    });
    const out: UsageRow[] = [];
    days.forEach((day, i) => {
      const [err, hash] = hashes[i] ?? [null, {}];
      if (err) throw err;
      const byTeam = new Map<string, Counts>();
      for (const [field, value] of Object.entries((hash ?? {}) as Record<string, string>)) {
        const at = field.lastIndexOf('|');
        const counter = field.slice(at + 1) as Counter;
        if (at < 0 || !COUNTERS.includes(counter)) continue;
        const row = byTeam.get(field.slice(0, at)) ?? noCounts();
        row[counter] = Number(value);
        byTeam.set(field.slice(0, at), row);
      }
      for (const [key, counts] of byTeam) {
        const team = teamOf(key);
        if (!teams || teams.has(team)) out.push({ day, team, counts });
      }
    });
    return out;
  }

  async close(): Promise<void> {
    // The connection belongs to the store.
  }
}

/** The ledger that goes with a chat-log backend: in Redis beside a Redis store, else files under `dataDir/usage`. */
export function usageLedgerFor(backend: unknown, dataDir: string): UsageLedger {
  if (backend instanceof RedisLogBackend) {
    return new RedisUsageLedger((op) => backend.run(op), backend.prefix);
  }
  return new FileUsageLedger(join(dataDir, 'usage'));
}
