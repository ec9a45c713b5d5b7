/**
 * Benchmark 5, savings: a generated 300-step agent session (bench/agent-session.ts) replayed
 * through the gateway to a fake Anthropic provider that bills like prompt caching
 * (bench/caching-fake-anthropic.ts). The gateway runs in this process with createApp and a
 * ManualClock, the same clock the fake's cache TTLs follow, so idle gaps of many minutes take no
 * time. Each session is replayed twice: as a client that marks its own cache breakpoints sends it
 * (Claude Code-like: system prompt and the last two user turns), and as one that marks none
 * (scripts, framework defaults). Gateway configurations:
 *
 * - off: pruning off, image replay clean-up off, prompt caching off, and a context window so large
 *   that the compaction point is never reached: the gateway forwards the client's requests unchanged;
 * - on: the defaults (prompt caching `auto`, cache-TTL pruning with the TTL of the request's markers,
 *   image replay clean-up keeping 3 turns and moving on cold caches or past 10 images, trimming at
 *   80% of the 200k window);
 * - on without image replay (marked client): to price the clean-up's own effect;
 * - on with prompt caching off, and with Anthropic's request-level automatic caching instead of
 *   breakpoints (unmarked client): to choose prompt caching's default.
 *
 * For every request the fake compares the prefix with the previous request's: a change inside a
 * prefix that was still in a live cache entry is a warm prefix change, attributed to the mechanism
 * whose text appears in the changed part (pruning's placeholder or trim note, the compaction
 * trim marker, the image replay's replacement texts), cross-checked with the response headers.
 */
import { agentSession, type AgentSession } from './agent-session.ts';
import type { BenchContext } from './context.ts';
import type { SectionReport, TargetCheck } from './report.ts';
import { median } from './stats.ts';
import { CAUSES, CLIENTS, CONFIGS, replay, type Client, type RunResult } from './savings-replay.ts';

export async function savingsBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const seeds = ctx.quick ? [2026] : [2026, 7, 11];
  const bySeed: SeedRuns[] = [];
  for (const seed of seeds) {
    const session = agentSession({ steps: 300, seed });
    const runs: RunResult[] = [];
    for (const client of CLIENTS) {
      for (const cfg of CONFIGS.filter((c) => c.clients.includes(client))) {
        runs.push(await replay(session, cfg, client));
        ctx.progress(`savings: session ${seed}, ${client} client, ${cfg.label} replayed`);
      }
    }
    bySeed.push({ seed, session, runs });
  }
  return buildReport(bySeed, (performance.now() - t0) / 1000);
}

interface SeedRuns {
  seed: number;
  session: AgentSession;
  runs: RunResult[];
}

/** When, within a user turn, the image replay clean-up changed a warm prefix. */
function describeTiming(log: RunResult['warmLog']): string {
  if (log.length === 0) return 'never';
  const second = log.filter((w) => w.afterTaskStart === 1).length;
  const afterIdle = log.filter((w) => w.afterIdle === 1).length;
  return (
    `${second} of ${log.length} times on the 2nd model call of a new user turn, ` +
    `${afterIdle} of them right after the call that followed an idle gap`
  );
}

const k = (n: number) => `${(n / 1000).toFixed(0)}k`;
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function run(s: SeedRuns, client: Client, name: string): RunResult {
  return s.runs.find((r) => r.client === client && r.name === name)!;
}

/** 1 - billed / billed with everything off, for one client and configuration of a session. */
function savingOf(s: SeedRuns, client: Client, name: string): number {
  return 1 - run(s, client, name).billed / run(s, client, 'off').billed;
}

const TARGET_SAVING: Record<Client, number> = { marked: 0.4, unmarked: 0.6 };
const CLIENT_LABEL: Record<Client, string> = {
  marked: 'client marks its own breakpoints',
  unmarked: 'client marks none',
};

function buildReport(bySeed: SeedRuns[], seconds: number): SectionReport {
  const first = bySeed[0]!;
  const { session, seed } = first;
  const several = bySeed.length > 1 ? ` (median of ${bySeed.length} sessions)` : '';
  const onRuns = bySeed.flatMap((s) => s.runs.filter((r) => r.name === 'on'));
  const pruningWarm = onRuns.reduce((n, r) => n + r.causes.pruning.warmChanges, 0);
  const imageReplayWarm = onRuns.reduce((n, r) => n + r.causes.imageReplay.warmChanges, 0);
  const screenshots = session.steps.filter((st) => JSON.stringify(st.next).includes('"type":"image"')).length;
  const targets: TargetCheck[] = [
    ...CLIENTS.map((client): TargetCheck => {
      const saving = median(bySeed.map((s) => savingOf(s, client, 'on')));
      const target = TARGET_SAVING[client];
      return {
        name: `billed input, defaults vs off, ${CLIENT_LABEL[client]}${several}`,
        target: `>= ${target * 100}% lower`,
        measured: `${pct(saving)} lower`,
        met: saving >= target,
        missedBy: `${((target - saving) * 100).toFixed(1)} points`,
      };
    }),
    {
      name: 'warm cache prefixes changed by cache-TTL pruning (every session, both clients)',
      target: '0',
      measured: String(pruningWarm),
      met: pruningWarm === 0,
      missedBy: `${pruningWarm}`,
    },
    {
      name: 'warm cache prefixes changed by the image replay clean-up (every session, both clients)',
      target: '0',
      measured: String(imageReplayWarm),
      met: imageReplayWarm === 0,
      missedBy: `${imageReplayWarm}`,
    },
  ];
  const firstRuns = first.runs;
  const marked = (name: string) => run(first, 'marked', name);
  const irNet = marked('onNoImageReplay').billed - marked('on').billed;
  return {
    name: 'Savings (300-step agent session, prompt-caching fake Anthropic)',
    seconds,
    tables: [
      {
        title: `Session ${seed}: billed input per client and configuration (token-equivalents: input x1, cache write x1.25, cache read x0.1; tokens = chars/4)`,
        headers: [
          'client',
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
        rows: firstRuns.map((r) => {
          const off = run(first, r.client, 'off');
          return [
            r.client,
            r.label,
            k(r.billed),
            r === off ? '' : `${(((r.billed - off.billed) / off.billed) * 100).toFixed(1)}%`,
            k(r.inputTokens),
            k(r.cacheWriteTokens),
            k(r.cacheReadTokens),
            pct(r.hitRate),
            k(r.finalPromptTokens),
            k(r.maxPromptTokens),
          ];
        }),
      },
      {
        title: `Session ${seed}: changes to the previous request's prefix, by cause (requests; "warm" = inside a live cache entry)`,
        headers: [
          'client',
          'configuration',
          ...CAUSES.flatMap((c) => [`${c} warm`, `${c} cold`]),
          'warm cost',
          'x-oda-pruned',
          'x-oda-trimmed',
          'log pruning/trims',
        ],
        rows: firstRuns.map((r) => [
          r.client,
          r.label,
          ...CAUSES.flatMap((c) => [r.causes[c].warmChanges, r.causes[c].coldChanges]),
          k(r.warmChangeCost),
          r.headers.prunedRequests,
          r.headers.trimmedRequests,
          `${r.logEvents.pruning}/${r.logEvents.trims}`,
        ]),
      },
      {
        title:
          'Every session: billed input, defaults and variants vs everything off; warm prefixes the defaults changed',
        headers: [
          'session',
          'client',
          'off billed',
          'defaults',
          'variant',
          'warm changed: pruning / image replay',
          'pruning passes',
          'largest prompt off/on',
        ],
        rows: bySeed.flatMap((s) =>
          CLIENTS.map((client) => {
            const on = run(s, client, 'on');
            const off = run(s, client, 'off');
            const variants = CONFIGS.filter(
              (c) => c.clients.includes(client) && c.name !== 'on' && c.name !== 'off',
            );
            return [
              String(s.seed),
              client,
              k(off.billed),
              `-${pct(savingOf(s, client, 'on'))}`,
              variants
                .map((v) => `${v.label.replace(/^on, /, '')}: -${pct(savingOf(s, client, v.name))}`)
                .join('; '),
              `${on.causes.pruning.warmChanges} / ${on.causes.imageReplay.warmChanges}`,
              on.headers.prunedRequests,
              `${k(off.maxPromptTokens)}/${k(on.maxPromptTokens)}`,
            ];
          }),
        ),
      },
    ],
    targets,
    notes: [
      `session ${seed}: ${session.steps.length} model calls, ${marked('on').idleGaps} idle gaps of 6-50 min (cache TTL 5 min), ${screenshots} screenshots, tool results 200 chars-60 KB; marked client: system prompt and the last two user turns carry cache_control; unmarked client: no cache_control anywhere`,
      `image replay clean-up, session ${seed}, marked client (on vs on without it): ${marked('on').causes.imageReplay.warmChanges} warm prefix changes; ${k(marked('on').cacheWriteTokens - marked('onNoImageReplay').cacheWriteTokens)} more tokens written and ${k(marked('onNoImageReplay').cacheReadTokens - marked('on').cacheReadTokens)} fewer read: the session bills ${k(Math.abs(irNet))} ${irNet >= 0 ? 'less' : 'more'} with it`,
      'warm cost = tokens of a live cache entry after the earliest change, times (1.25 - 0.1)',
      `image replay warm changes happen ${describeTiming(onRuns.flatMap((r) => r.warmLog.filter((w) => w.cause === 'imageReplay')))}`,
      ...(firstRuns.some((r) => r.branched)
        ? [`branched answers: ${firstRuns.map((r) => `${r.client}/${r.name} ${r.branched}`).join(', ')}`]
        : []),
    ],
    data: {
      steps: session.steps.length,
      sessions: bySeed.map((s) => ({ seed: s.seed, runs: s.runs })),
    },
  };
}
