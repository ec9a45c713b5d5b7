/**
 * One replay of the savings benchmark (bench/savings.ts): an agent session sent through a gateway
 * in this process to the fake Anthropic provider that bills like prompt caching, under one gateway
 * configuration and one client's way of marking cache breakpoints, with every warm prefix change
 * attributed to the mechanism that made it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../lib/clock.ts';
import { createApp } from '../server/app.ts';
import { parseConfig } from '../config/config.ts';
import { TRIM_MARKER } from '../lib/trim-marker.ts';
import { createLogger } from '../server/logger.ts';
import { IMAGE_REMOVED_TEXT, MEDIA_REFERENCE_REMOVED_TEXT } from '../middleware/image-replay/index.ts';
import { withMarkers, type AgentSession } from './agent-session.ts';
import { clientHeaders, MODELS, PATHS } from './bodies.ts';
import { CachingFakeAnthropic, type CachedRequest } from './caching-fake-anthropic.ts';
import { timedPost } from './http-client.ts';

type Obj = Record<string, unknown>;
/** The mechanism a warm prefix change is put down to. */
export type Cause = 'pruning' | 'trimming' | 'imageReplay' | 'other';
export const CAUSES: readonly Cause[] = ['pruning', 'trimming', 'imageReplay', 'other'];
const PRUNING_TEXTS = ['[Old tool result content cleared]', '[Tool result trimmed: kept first'];
const TRIM_TEXT = JSON.stringify(TRIM_MARKER).slice(1, -1);
const IMAGE_TEXTS = [IMAGE_REMOVED_TEXT, MEDIA_REFERENCE_REMOVED_TEXT];

/** How the client marks prompt-cache breakpoints. */
export type Client = 'marked' | 'unmarked';
export const CLIENTS: readonly Client[] = ['marked', 'unmarked'];

/** A gateway configuration the sessions are replayed under, and the clients it is priced for. */
export interface BenchConfig {
  name: string;
  label: string;
  config: Obj;
  /** The provider entry's own settings. */
  provider?: Obj;
  clients: readonly Client[];
}

export const CONFIGS: readonly BenchConfig[] = [
  {
    name: 'off',
    label: 'mechanisms off',
    config: {
      pruning: { mode: 'off', imageReplay: { enabled: false } },
      promptCaching: { mode: 'off' },
      models: { 'claude-*': { contextWindow: 100_000_000 } },
    },
    clients: CLIENTS,
  },
  { name: 'on', label: 'mechanisms on (defaults)', config: {}, clients: CLIENTS },
  {
    name: 'onNoImageReplay',
    label: 'on, image replay off',
    config: { pruning: { imageReplay: { enabled: false } } },
    clients: ['marked'],
  },
  {
    name: 'onNoPromptCaching',
    label: 'on, prompt caching off',
    config: { promptCaching: { mode: 'off' } },
    clients: ['unmarked'],
  },
  {
    name: 'onAutomatic',
    label: 'on, automatic caching',
    config: {},
    provider: { promptCaching: { style: 'automatic' } },
    clients: ['unmarked'],
  },
];

export interface CauseTally {
  /** Requests where this mechanism changed a unit inside a live (warm) cache prefix. */
  warmChanges: number;
  /** Requests where it changed the prefix while the cache was cold (free). */
  coldChanges: number;
  /** Tokens that had to be written again instead of read, for the warm changes it caused first. */
  warmTokensLost: number;
}

export interface RunResult {
  name: string;
  label: string;
  client: Client;
  requests: number;
  billed: number;
  inputTokens: number;
  cacheWriteTokens: number;
  cacheReadTokens: number;
  hitRate: number;
  /** Token-equivalents the warm changes cost: lost tokens x (write price - read price). */
  warmChangeCost: number;
  causes: Record<Cause, CauseTally>;
  headers: { prunedRequests: number; trimmedRequests: number };
  logEvents: { pruning: number; trims: number };
  branched: number;
  /** Every warm change: the step, how many steps after the last user task or idle gap, cause, tokens. */
  warmLog: Array<{
    step: number;
    afterTaskStart: number;
    afterIdle: number;
    cause: Cause;
    tokensLost: number;
  }>;
  finalPromptTokens: number;
  maxPromptTokens: number;
  idleGaps: number;
}

/** Which mechanism's text appears in `after` but not in `before`. */
function causeOf(before: string, after: string): Cause {
  const added = (t: string) => after.includes(t) && !before.includes(t);
  if (PRUNING_TEXTS.some(added)) return 'pruning';
  if (added(TRIM_TEXT)) return 'trimming';
  if (IMAGE_TEXTS.some((t) => added(JSON.stringify(t).slice(1, -1)))) return 'imageReplay';
  return 'other';
}

/** The session as a client that marks no cache breakpoint sends it: no marker anywhere. */
function unmarked(session: AgentSession): AgentSession {
  const strip = (blocks: Obj[]) => blocks.map(({ cache_control: _marker, ...rest }) => rest);
  return { ...session, system: strip(session.system), tools: strip(session.tools) };
}

/** Replays a session as `client` sends it, through a gateway set up by `cfg`: the bill and warm changes. */
export async function replay(marked: AgentSession, cfg: BenchConfig, client: Client): Promise<RunResult> {
  const session = client === 'marked' ? marked : unmarked(marked);
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
  const fake = await new CachingFakeAnthropic(clock).start();
  const dir = mkdtempSync(join(tmpdir(), 'oda-bench-savings-'));
  const config = parseConfig({
    dataDir: join(dir, 'data'),
    logLevel: 'silent',
    providers: [{ name: 'anthropic', format: 'anthropic', baseUrl: fake.url, ...cfg.provider }],
    ...cfg.config,
  });
  const gateway = createApp(config, { clock, logger: createLogger('silent') });
  const server: Server = await new Promise((resolve) => {
    const s = gateway.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${PATHS.anthropic}`;
  const chatId = `savings-${client}-${cfg.name}`;
  const headers = { ...clientHeaders('anthropic'), 'x-session-id': chatId };
  const causes = Object.fromEntries(
    CAUSES.map((c) => [c, { warmChanges: 0, coldChanges: 0, warmTokensLost: 0 }]),
  ) as Record<Cause, CauseTally>;
  const messages: Obj[] = [session.firstUser];
  let prunedRequests = 0;
  let trimmedRequests = 0;
  let branched = 0;
  let idleGaps = 0;
  let maxPromptTokens = 0;
  const warmLog: RunResult['warmLog'] = [];
  let lastTask = 0;
  let lastIdle = -1;
  try {
    for (const [n, step] of session.steps.entries()) {
      clock.advance(step.waitMs);
      if (step.idle) {
        idleGaps++;
        lastIdle = n;
      }
      fake.nextReply = step.reply;
      const body = {
        model: MODELS.anthropic,
        max_tokens: 4096,
        system: session.system,
        tools: session.tools,
        messages: client === 'marked' ? withMarkers(messages) : messages,
      };
      const res = await timedPost(url, JSON.stringify(body), headers);
      if (res.headers['x-session-id'] !== chatId) branched++;
      if (res.headers['x-oda-pruned']) prunedRequests++;
      if (res.headers['x-oda-trimmed']) trimmedRequests++;
      const rec: CachedRequest = fake.requests[fake.requests.length - 1]!;
      maxPromptTokens = Math.max(maxPromptTokens, rec.totalTokens);
      if (rec.change) {
        const seen = new Set<Cause>();
        rec.change.units.forEach((u, i) => {
          const cause = causeOf(u.before, u.after);
          if (seen.has(cause)) return;
          seen.add(cause);
          if (u.warm) {
            causes[cause].warmChanges++;
            // The earliest change decides what has to be written again.
            const lost = i === 0 ? rec.change!.warmTokensLost : 0;
            causes[cause].warmTokensLost += lost;
            warmLog.push({
              step: n,
              afterTaskStart: n - lastTask,
              afterIdle: lastIdle < 0 ? -1 : n - lastIdle,
              cause,
              tokensLost: lost,
            });
          } else causes[cause].coldChanges++;
        });
      }
      messages.push({ role: 'assistant', content: step.reply }, step.next);
      if ((step.next.content as Obj[])[0]?.type === 'text') lastTask = n + 1;
    }
    const events = await gateway.context.chatLog.read(chatId);
    const sum = (f: (r: CachedRequest) => number) => fake.requests.reduce((n, r) => n + f(r), 0);
    const input = sum((r) => r.billing.inputTokens);
    const write = sum((r) => r.billing.cacheWriteTokens);
    const read = sum((r) => r.billing.cacheReadTokens);
    return {
      name: cfg.name,
      label: cfg.label,
      client,
      requests: fake.requests.length,
      billed: sum((r) => r.billing.billed),
      inputTokens: input,
      cacheWriteTokens: write,
      cacheReadTokens: read,
      hitRate: read / (input + write + read),
      warmChangeCost: CAUSES.reduce((n, c) => n + causes[c].warmTokensLost, 0) * (1.25 - 0.1),
      causes,
      headers: { prunedRequests, trimmedRequests },
      logEvents: {
        pruning: events.filter((e) => e.type === 'pruning').length,
        trims: events.filter((e) => e.type === 'tool-result-trimmed').length,
      },
      branched,
      warmLog,
      finalPromptTokens: fake.requests[fake.requests.length - 1]!.totalTokens,
      maxPromptTokens,
      idleGaps,
    };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gateway.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
