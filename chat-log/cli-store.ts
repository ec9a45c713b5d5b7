/**
 * Where the `log list` and `log read` commands find the chats: the store of the gateway's own config
 * (`--config FILE`, else ODA_CONFIG, with the environment's ODA_DATA_DIR, ODA_STORE and REDIS_URL,
 * as the gateway reads them), or the file store of `--data-dir DIR`, which overrides the config.
 * A Redis store is opened read-only: the commands never write there and never take a chat lock.
 */
import { resolve } from 'node:path';
import { ConfigError, loadStoreConfig } from '../config/config.ts';
import { isOdaError } from '../lib/errors.ts';
import type { CliIo } from './cli-io.ts';
import { RedisLogBackend } from './store-redis.ts';

/** The chats' place: a data directory, or a Redis store (`shown` names it without credentials). */
export type CliStore =
  { kind: 'file'; dataDir: string } | { kind: 'redis'; url: string; prefix: string; shown: string };

/** The store the commands read; undefined (the problem said on `io`) when the config is unusable. */
export function cliStore(
  configPath: string | undefined,
  dataDir: string | undefined,
  io: CliIo,
): CliStore | undefined {
  if (dataDir !== undefined) return { kind: 'file', dataDir: resolve(dataDir) };
  let config;
  try {
    config = loadStoreConfig(process.env, configPath);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(err.message);
    return undefined;
  }
  if (config.store.kind !== 'redis') return { kind: 'file', dataDir: config.dataDir };
  const { url, prefix } = config.store;
  return { kind: 'redis', url, prefix, shown: `${shownRedisUrl(url)} (prefix "${prefix}")` };
}

/** A Redis URL as messages show it: never its user name or password. */
function shownRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'redis';
  }
}

/** A read-only reader of the Redis store `where`; close it when done. */
export function redisReader(where: Extract<CliStore, { kind: 'redis' }>): RedisLogBackend {
  return new RedisLogBackend({
    url: where.url,
    prefix: where.prefix,
    readOnly: true,
    // One command, not a gateway: give the first connection a little longer.
    readyWaitMs: 3000,
    // The failure is reported once, by the command, when a call gives up.
    onError: () => undefined,
  });
}

/** What to say when a call on the Redis store `where` failed with `err`. */
export function redisTrouble(where: Extract<CliStore, { kind: 'redis' }>, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (isOdaError(err) && err.code === 'ODA_ERR_STORE_UNAVAILABLE')
    return `cannot reach the Redis store at ${where.shown}: ${message}`;
  return `Redis store at ${where.shown}: ${message}`;
}

/**
 * Runs `run` with a read-only reader of the Redis store `where`, closed after; a failure is said
 * on stderr (exit code 1).
 */
export async function withRedisReader(
  where: Extract<CliStore, { kind: 'redis' }>,
  io: CliIo,
  run: (backend: RedisLogBackend) => Promise<number>,
): Promise<number> {
  const backend = redisReader(where);
  try {
    return await run(backend);
  } catch (err) {
    io.err(redisTrouble(where, err));
    return 1;
  } finally {
    await backend.close();
  }
}
