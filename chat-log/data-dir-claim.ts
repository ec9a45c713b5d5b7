/**
 * A gateway's exclusive claim on the data directory of its file store. The file store serialises a
 * chat's appends inside one process only, and its chat index has one writer, so two gateways on one
 * `dataDir` would interleave appends and rebuild each other's index. The claim is the file
 * `dataDir/gateway.lock`, created whole (written aside, then linked into place, which fails when the
 * name exists) and holding who made it: pid, host name, start time, and on Linux the boot id and the
 * process's start tick, so a pid reused after a crash or reboot is not taken for the owner.
 *
 * A claim found in place is stale, and taken over with a log line, when it was made on this host and
 * its process is gone: its pid is not running, or is this very process (a container restarted: the
 * gateway is pid 1 again), or runs another program (the host rebooted since, or the pid started at
 * another time). A claim made on another host (whose processes cannot be seen from here) is stale
 * when its holder stopped renewing it: a holder touches its claim every `HEARTBEAT_MS`, and one not
 * touched for `FOREIGN_STALE_MS` belongs to a gateway that is gone (a pod killed on a shared volume,
 * its successor under another host name). Any other claim is live: the start fails naming the
 * directory and the process. The claim is removed on a clean stop, only while it is still this
 * process's.
 */
import { randomUUID } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { OdaError } from '../lib/errors.ts';

/** The claim file's name inside `dataDir`. */
export const CLAIM_FILE = 'gateway.lock';

/** How often a holder touches its claim, so a gateway on another host can tell it is alive. */
export const HEARTBEAT_MS = 10_000;

/** A claim from another host untouched for this long is stale (six heartbeats missed). */
export const FOREIGN_STALE_MS = 60_000;

/** What a claim file holds. */
export interface ClaimRecord {
  pid: number;
  hostname: string;
  /** When the claiming process started (ms since the epoch). */
  startedAt: number;
  /** `/proc/sys/kernel/random/boot_id` when readable: changes at every boot of the host. */
  bootId?: string;
  /** The process's start time in clock ticks since boot (`/proc/<pid>/stat`), when readable. */
  processStart?: number;
  /** Tells this claim from any other, so a stop removes only its own. */
  token: string;
}

/** Where this process runs; tests pass another to play a second process or host. */
export interface ClaimHost {
  pid: number;
  hostname: string;
  bootId: string | undefined;
  /** Whether process `pid` runs on this host. */
  alive(pid: number): boolean;
  /** Process `pid`'s start time in clock ticks since boot, when known. */
  processStart(pid: number): number | undefined;
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Field 22 of `/proc/<pid>/stat`, counted after the command name (which may hold spaces). */
function procStart(pid: number): number | undefined {
  const stat = readOrUndefined(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[19]);
  return Number.isSafeInteger(ticks) ? ticks : undefined;
}

function mtimeOf(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This process on this host. */
export function thisHost(): ClaimHost {
  return {
    pid: process.pid,
    hostname: osHostname(),
    bootId: readOrUndefined('/proc/sys/kernel/random/boot_id')?.trim() || undefined,
    alive: pidAlive,
    processStart: procStart,
  };
}

function parseRecord(text: string | undefined): ClaimRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const r = JSON.parse(text) as Partial<ClaimRecord>;
    if (
      Number.isSafeInteger(r.pid) &&
      typeof r.hostname === 'string' &&
      typeof r.startedAt === 'number' &&
      typeof r.token === 'string'
    )
      return r as ClaimRecord;
  } catch {
    // Not a claim this build wrote: judged below as a stale one.
  }
  return undefined;
}

/** Why a claim found in place belongs to no running process, or undefined when it may. */
function staleBecause(held: ClaimRecord, host: ClaimHost, untouchedMs: number): string | undefined {
  if (held.hostname !== host.hostname) {
    return untouchedMs > FOREIGN_STALE_MS
      ? `its holder on host ${held.hostname} stopped renewing it ${Math.round(untouchedMs / 1000)} s ago`
      : undefined;
  }
  if (held.pid === host.pid) return 'its pid is this process (a restart reusing the pid)';
  if (held.bootId !== undefined && host.bootId !== undefined && held.bootId !== host.bootId)
    return 'the host has rebooted since';
  if (!host.alive(held.pid)) return 'its process is not running';
  const start = held.processStart === undefined ? undefined : host.processStart(held.pid);
  if (start !== undefined && start !== held.processStart) return 'its pid now belongs to another process';
  return undefined;
}

function describe(r: ClaimRecord): string {
  return `pid ${r.pid} on host ${r.hostname}, started ${new Date(r.startedAt).toISOString()}`;
}

/**
 * The claim on `dataDir` of a gateway that is running (judged as `claimDataDir` judges one found in
 * place: on this host by its process, on another by its heartbeat); undefined when there is none.
 * For readers beside a gateway, which must leave what that gateway writes alone.
 */
export function liveClaim(
  dataDir: string,
  opts: { host?: ClaimHost; now?: () => number } = {},
): ClaimRecord | undefined {
  const path = join(dataDir, CLAIM_FILE);
  const held = parseRecord(readOrUndefined(path));
  if (held === undefined) return undefined;
  const untouchedMs = (opts.now ?? Date.now)() - (mtimeOf(path) ?? Number.NEGATIVE_INFINITY);
  return staleBecause(held, opts.host ?? thisHost(), untouchedMs) === undefined ? held : undefined;
}

/** Raised when another running gateway holds the data directory. */
export class DataDirInUseError extends OdaError {
  readonly holder: ClaimRecord;
  constructor(dataDir: string, path: string, holder: ClaimRecord) {
    super(
      'ODA_ERR_CONFIG',
      500,
      `dataDir ${dataDir} is in use by another gateway (${describe(holder)}): two gateways must never ` +
        `share one dataDir; stop that one or give this one another dataDir (run several replicas on ` +
        `store.kind: redis). If no gateway runs there, remove ${path}`,
    );
    this.name = 'DataDirInUseError';
    this.holder = holder;
  }
}

export interface ClaimOptions {
  /** Told when a stale claim is taken over. */
  log?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
  host?: ClaimHost;
  now?: () => number;
  /** How often the claim is touched while held (`HEARTBEAT_MS`); 0: never (tests). */
  heartbeatMs?: number;
}

/** A claim this process holds; `release` removes it while it is still this claim. */
export interface DataDirClaim {
  readonly path: string;
  readonly record: ClaimRecord;
  release(): void;
}

/**
 * Takes `dataDir` for this process (see the file comment); throws `DataDirInUseError` when a
 * running gateway holds it.
 */
export function claimDataDir(dataDir: string, opts: ClaimOptions = {}): DataDirClaim {
  const host = opts.host ?? thisHost();
  const path = join(dataDir, CLAIM_FILE);
  const record: ClaimRecord = {
    pid: host.pid,
    hostname: host.hostname,
    startedAt: (opts.now ?? Date.now)(),
    ...(host.bootId !== undefined ? { bootId: host.bootId } : {}),
    ...(host.processStart(host.pid) !== undefined ? { processStart: host.processStart(host.pid)! } : {}),
    token: randomUUID(),
  };
  const text = `${JSON.stringify(record)}\n`;
  mkdirSync(dataDir, { recursive: true });
  const tmp = `${path}.${record.token}.tmp`;
  writeFileSync(tmp, text);
  try {
    // A few rounds: a claim released or taken over by another starter meanwhile is looked at again.
    for (let round = 0; round < 5; round++) {
      try {
        linkSync(tmp, path);
        const every = opts.heartbeatMs ?? HEARTBEAT_MS;
        const heartbeat =
          every > 0
            ? setInterval(() => {
                try {
                  const at = new Date();
                  if (readOrUndefined(path) === text) utimesSync(path, at, at);
                } catch {
                  // A missed beat is no harm: six in a row are.
                }
              }, every).unref()
            : undefined;
        return {
          path,
          record,
          release: () => {
            if (heartbeat) clearInterval(heartbeat);
            if (readOrUndefined(path) === text) rmSync(path, { force: true });
          },
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const found = readOrUndefined(path);
      if (found === undefined) continue;
      const held = parseRecord(found);
      const untouchedMs = (opts.now ?? Date.now)() - (mtimeOf(path) ?? Number.NEGATIVE_INFINITY);
      const why =
        held === undefined
          ? 'it is not a claim this gateway can read'
          : staleBecause(held, host, untouchedMs);
      if (why === undefined) throw new DataDirInUseError(dataDir, path, held!);
      // Moved aside first: of two starters taking one stale claim over, only one moves it.
      const aside = `${path}.${record.token}.stale`;
      try {
        renameSync(path, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const moved = readOrUndefined(aside);
      if (moved !== found) {
        // Another starter's fresh claim was moved: put it back, and look again.
        try {
          linkSync(aside, path);
        } catch {
          // A third claim is in place; it is looked at in the next round.
        }
        rmSync(aside, { force: true });
        continue;
      }
      rmSync(aside, { force: true });
      opts.log?.('warn', `taking over the claim on dataDir ${dataDir} of a gateway no longer running`, {
        dataDir,
        previous: held ?? found.slice(0, 200),
        reason: why,
      });
    }
    const last = parseRecord(readOrUndefined(path));
    if (last) throw new DataDirInUseError(dataDir, path, last);
    throw new OdaError('ODA_ERR_CONFIG', 500, `could not claim dataDir ${dataDir}: ${path} keeps changing`);
  } finally {
    rmSync(tmp, { force: true });
  }
}
