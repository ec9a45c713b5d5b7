/**
 * Benchmark 5, savings: a generated 300-step agent session (bench/agent-session.ts) replayed
 * through the gateway to a fake Anthropic provider that bills like prompt caching
 * (bench/caching-fake-anthropic.ts). The gateway runs in this process with createApp and a
 * ManualClock, the same clock the fake's cache TTLs follow, so idle gaps of many minutes take no
 * time. Three gateway configurations:
 *
 * - off: pruning off, image replay clean-up off, and a context window so large that the compaction
 *   point is never reached: the gateway forwards the client's requests unchanged;
 * - on: the defaults (cache-TTL pruning with the TTL of the request's markers, image replay
 *   clean-up keeping 3 turns, trimming at 80% of the 200k window);
 * - on without image replay: to price the clean-up's own effect.
 *
 * For every request the fake compares the prefix with the previous request's: a change inside a
 * prefix that was still in a live cache entry is a warm prefix change, attributed to the mechanism
 * whose text appears in the changed part (pruning's placeholder or trim note, the compaction
 * trim marker, the image replay's replacement texts), cross-checked with the response headers.
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
import { agentSession, withMarkers, type AgentSession } from './agent-session.ts';
import { clientHeaders, MODELS, PATHS } from './bodies.ts';
import { CachingFakeAnthropic, type CachedRequest } from './caching-fake-anthropic.ts';
import type { BenchContext } from './context.ts';
import { timedPost } from './http-client.ts';
import type { SectionReport, TargetCheck } from './report.ts';
import { median } from './stats.ts';

type Obj = Record<string, unknown>;
type Cause = 'pruning' | 'trimming' | 'imageReplay' | 'other';
const CAUSES: readonly Cause[] = ['pruning', 'trimming', 'imageReplay', 'other'];
const PRUNING_TEXTS = ['[Old tool result content cleared]', '[Tool result trimmed: kept first'];
const TRIM_TEXT = JSON.stringify(TRIM_MARKER).slice(1, -1);
const IMAGE_TEXTS = [IMAGE_REMOVED_TEXT, MEDIA_REFERENCE_REMOVED_TEXT];

const CONFIGS: ReadonlyArray<{ name: string; label: string; config: Obj }> = [
  {
    name: 'off',
    label: 'mechanisms off',
    config: {
      pruning: { mode: 'off', imageReplay: { enabled: false } },
      models: { 'claude-*': { contextWindow: 100_000_000 } },
    },
  },
  { name: 'on', label: 'mechanisms on (defaults)', config: {} },
  {
    name: 'onNoImageReplay',
    label: 'on, image replay off',
    config: { pruning: { imageReplay: { enabled: false } } },
  },
];

interface CauseTally {
  /** Requests where this mechanism changed a unit inside a live (warm) cache prefix. */
  warmChanges: number;
  /** Requests where it changed the prefix while the cache was cold (free). */
  coldChanges: number;
  /** Tokens that had to be written again instead of read, for the warm changes it caused first. */
  warmTokensLost: number;
}

interface RunResult {
  name: string;
  label: string;
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

async function replay(session: AgentSession, cfg: (typeof CONFIGS)[number]): Promise<RunResult> {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
  const fake = await new CachingFakeAnthropic(clock).start();
  const dir = mkdtempSync(join(tmpdir(), 'oda-bench-savings-'));
  const config = parseConfig({
    dataDir: join(dir, 'data'),
    logLevel: 'silent',
    providers: [{ name: 'anthropic', format: 'anthropic', baseUrl: fake.url }],
    ...cfg.config,
  });
  const gateway = createApp(config, { clock, logger: createLogger('silent') });
  const server: Server = await new Promise((resolve) => {
    const s = gateway.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${PATHS.anthropic}`;
  const chatId = `savings-${cfg.name}`;
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
        messages: withMarkers(messages),
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

export async function savingsBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const seeds = ctx.quick ? [2026] : [2026, 7, 11];
  const bySeed: Array<{ seed: number; session: AgentSession; runs: RunResult[] }> = [];
  for (const seed of seeds) {
    const session = agentSession({ steps: 300, seed });
    const runs: RunResult[] = [];
    for (const cfg of CONFIGS) {
      runs.push(await replay(session, cfg));
      ctx.progress(`savings: session ${seed}, ${cfg.label} replayed`);
    }
    bySeed.push({ seed, session, runs });
  }
  return buildReport(bySeed, (performance.now() - t0) / 1000);
}

/** When, within a user turn, the image replay clean-up changed a warm prefix. */
function describeTiming(log: RunResult['warmLog']): string {
  if (log.length === 0) return 'never';
  const second = log.filter((w) => w.afterTaskStart === 1).length;
  const afterIdle = log.filter((w) => w.afterIdle === 1).length;
  return (
    `${second} of ${log.length} times on the 2nd model call of a new user turn (the window slides once the new turn holds an answer), ` +
    `${afterIdle} of them right after the call that followed an idle gap, i.e. just after that call re-wrote the cold cache`
  );
}

const k = (n: number) => `${(n / 1000).toFixed(0)}k`;

function buildReport(
  bySeed: Array<{ seed: number; session: AgentSession; runs: RunResult[] }>,
  seconds: number,
): SectionReport {
  const { session, runs, seed } = bySeed[0]!;
  const off = runs.find((r) => r.name === 'off')!;
  const on = runs.find((r) => r.name === 'on')!;
  const noIr = runs.find((r) => r.name === 'onNoImageReplay')!;
  const savingOf = (rs: RunResult[], name: string) =>
    1 - rs.find((r) => r.name === name)!.billed / rs.find((r) => r.name === 'off')!.billed;
  const savings = bySeed.map((s) => savingOf(s.runs, 'on'));
  const saving = median(savings);
  const pruningWarm = bySeed.reduce(
    (n, s) => n + s.runs.find((r) => r.name === 'on')!.causes.pruning.warmChanges,
    0,
  );
  const screenshots = session.steps.filter((s) => JSON.stringify(s.next).includes('"type":"image"')).length;
  const targets: TargetCheck[] = [
    {
      name: `billed input tokens, mechanisms on vs off${bySeed.length > 1 ? ` (median of ${bySeed.length} sessions)` : ''}`,
      target: '>= 40% lower',
      measured: `${(saving * 100).toFixed(1)}% lower`,
      met: saving >= 0.4,
      missedBy: `${((0.4 - saving) * 100).toFixed(1)} points`,
    },
    {
      name: 'warm cache prefixes changed by cache-TTL pruning',
      target: '0',
      measured: String(pruningWarm),
      met: pruningWarm === 0,
      missedBy: `${pruningWarm}`,
    },
  ];
  const irNet = noIr.billed - on.billed;
  return {
    name: 'Savings (300-step agent session, prompt-caching fake Anthropic)',
    seconds,
    tables: [
      {
        title: `Session ${seed}: billed input per configuration (token-equivalents: input x1, cache write x1.25, cache read x0.1; tokens = chars/4)`,
        headers: [
          'configuration',
          'billed',
          'vs off',
          'input',
          'cache write',
          'cache read',
          'hit rate',
          'last prompt',
          'largest prompt',
        ],
        rows: runs.map((r) => [
          r.label,
          k(r.billed),
          r === off ? '' : `${(((r.billed - off.billed) / off.billed) * 100).toFixed(1)}%`,
          k(r.inputTokens),
          k(r.cacheWriteTokens),
          k(r.cacheReadTokens),
          `${(r.hitRate * 100).toFixed(1)}%`,
          k(r.finalPromptTokens),
          k(r.maxPromptTokens),
        ]),
      },
      {
        title: `Session ${seed}: changes to the previous request's prefix, by cause (requests; "warm" = inside a live cache entry)`,
        headers: [
          'configuration',
          ...CAUSES.flatMap((c) => [`${c} warm`, `${c} cold`]),
          'warm cost',
          'x-oda-pruned',
          'x-oda-trimmed',
          'log pruning/trims',
        ],
        rows: runs.map((r) => [
          r.label,
          ...CAUSES.flatMap((c) => [r.causes[c].warmChanges, r.causes[c].coldChanges]),
          k(r.warmChangeCost),
          r.headers.prunedRequests,
          r.headers.trimmedRequests,
          `${r.logEvents.pruning}/${r.logEvents.trims}`,
        ]),
      },
      {
        title: 'Every session: billed input vs mechanisms off',
        headers: [
          'session',
          'off billed',
          'on',
          'on, image replay off',
          'image replay warm changes',
          'pruning passes (all cold)',
          'largest prompt off/on',
        ],
        rows: bySeed.map((s) => {
          const o = s.runs.find((r) => r.name === 'on')!;
          const f = s.runs.find((r) => r.name === 'off')!;
          return [
            String(s.seed),
            k(f.billed),
            `-${(savingOf(s.runs, 'on') * 100).toFixed(1)}%`,
            `-${(savingOf(s.runs, 'onNoImageReplay') * 100).toFixed(1)}%`,
            o.causes.imageReplay.warmChanges,
            o.headers.prunedRequests,
            `${k(f.maxPromptTokens)}/${k(o.maxPromptTokens)}`,
          ];
        }),
      },
    ],
    targets,
    notes: [
      `session ${seed}: ${session.steps.length} model calls, ${on.idleGaps} idle gaps of 6-50 min (cache TTL 5 min), ${screenshots} screenshots, tool results 200 chars-60 KB, system prompt + 8 tools with cache markers, markers on the last two user turns`,
      `image replay clean-up, session ${seed} (on vs on without it): its ${on.causes.imageReplay.warmChanges} warm prefix changes cost ${k(on.causes.imageReplay.warmTokensLost * 1.15)} (tokens written again at 1.25x instead of read at 0.1x); in all, ${k(on.cacheWriteTokens - noIr.cacheWriteTokens)} more tokens written (${k((on.cacheWriteTokens - noIr.cacheWriteTokens) * 1.25)}) and ${k(noIr.cacheReadTokens - on.cacheReadTokens)} fewer read (${k((noIr.cacheReadTokens - on.cacheReadTokens) * 0.1)} saved): the session bills ${k(Math.abs(irNet))} ${irNet >= 0 ? 'less' : 'more'} with it (${-irNet >= 0 ? '+' : ''}${((-irNet / noIr.billed) * 100).toFixed(1)}%)`,
      'warm cost = tokens of a live cache entry after the earliest change, times (1.25 - 0.1)',
      `image replay warm changes happen ${describeTiming(bySeed.flatMap((s) => s.runs.find((r) => r.name === 'on')!.warmLog.filter((w) => w.cause === 'imageReplay')))}`,
      ...(runs.some((r) => r.branched)
        ? [`branched answers: ${runs.map((r) => `${r.name} ${r.branched}`).join(', ')}`]
        : []),
    ],
    data: { steps: session.steps.length, sessions: bySeed.map((s) => ({ seed: s.seed, runs: s.runs })) },
  };
}
