/**
 * Starts a real gateway (createApp on an ephemeral port) in front of a real fake provider, with its
 * data in a fresh temp dir. Tests assert on what the client got and on what the provider received.
 * With ODA_TEST_STORE=redis (and REDIS_URL) the chat log lives in Redis under a prefix of its own,
 * removed on close: `npm test` runs the e2e suite once per store.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, type AppDeps, type Gateway } from '../../server/app.ts';
import { parseConfig, type ConfigInput } from '../../config/config.ts';
import { ManualClock } from '../../lib/clock.ts';
import { FakeProvider, type FakeProviderOptions } from '../fake-provider/fake-provider.ts';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';
import { dropPrefix, uniquePrefix } from './redis-test.ts';

/** True when this run keeps the e2e gateways' chat logs in Redis. */
export const testStoreIsRedis = process.env.ODA_TEST_STORE === 'redis' && Boolean(process.env.REDIS_URL);

/**
 * The Redis key prefix of the gateways started on `dataDir` (a restart finds the same chats). They
 * leave it in place when they close: a test that restarts drops it with `dropPrefix` at its end.
 */
export function sharedRedisPrefix(dataDir: string): string {
  return `oda-test:e2e:${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}:`;
}

export interface TestGateway {
  /** Base URL of the gateway, e.g. http://127.0.0.1:40123 */
  url: string;
  fake: FakeProvider;
  gateway: Gateway;
  clock: ManualClock;
  dataDir: string;
  /** Sleeps requested by the retry logic (ms), recorded instead of waited. */
  sleeps: number[];
  close(): Promise<void>;
}

export interface StartOptions {
  config?: Partial<ConfigInput>;
  fake?: FakeProviderOptions;
  deps?: AppDeps;
  /** Use an existing fake provider instead of starting one. */
  fakeProvider?: FakeProvider;
  dataDir?: string;
}

/**
 * A gateway whose chat log is in Redis (at `REDIS_URL`) under `prefix`, whichever store the run
 * tests: gateways given one prefix are replicas sharing their chats. The prefix stays when it
 * closes (drop it with `dropPrefix`).
 */
export function startGatewayOnRedis(prefix: string, opts: StartOptions = {}): Promise<TestGateway> {
  const url = process.env.REDIS_URL!;
  return startGateway({
    ...opts,
    config: { store: { kind: 'redis', url }, ...opts.config },
    deps: { backend: new RedisLogBackend({ url, prefix }), ...opts.deps },
  });
}

export async function startGateway(opts: StartOptions = {}): Promise<TestGateway> {
  const fake = opts.fakeProvider ?? (await new FakeProvider(opts.fake).start());
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'oda-test-'));
  const clock = new ManualClock();
  const sleeps: number[] = [];
  const config = parseConfig({
    dataDir,
    logLevel: 'silent',
    providers: [
      { name: 'fake-openai', format: 'openai', baseUrl: `${fake.url}/v1` },
      { name: 'fake-anthropic', format: 'anthropic', baseUrl: fake.url },
    ],
    retries: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 4 },
    // Prompt caching adds markers or a key to nearly every request; tests of other mechanisms assert
    // byte-for-byte forwarding, so it is on only where a test asks for it (prompt-caching tests).
    promptCaching: { mode: 'off' },
    ...opts.config,
  });
  // Gateways given the same dataDir share their chats (a restart); each other gateway has its own.
  const redisPrefix =
    testStoreIsRedis && !opts.deps?.backend
      ? opts.dataDir
        ? sharedRedisPrefix(opts.dataDir)
        : uniquePrefix('e2e')
      : undefined;
  const gateway = createApp(config, {
    ...(redisPrefix
      ? { backend: new RedisLogBackend({ url: process.env.REDIS_URL!, prefix: redisPrefix }) }
      : {}),
    clock,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0,
    ...opts.deps,
  });
  const server: Server = await new Promise((resolve) => {
    const s = gateway.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    fake,
    gateway,
    clock,
    dataDir,
    sleeps,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
      if (!opts.fakeProvider) await fake.close();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
      if (redisPrefix && !opts.dataDir) await dropPrefix(redisPrefix);
    },
  };
}
