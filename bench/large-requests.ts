/**
 * Benchmark 3, large requests: 1, 10 and 30 MB Anthropic requests (long tool results, a screenshot
 * in every tenth result) through the whole pipeline, next to JSON.parse + JSON.stringify of the same
 * body in this process, the floor of any gateway that reads the body, and the two minimal proxies.
 *
 * Two models of the gateway's config: `bench-roomy` has a context window far above any body (no
 * pruning or trimming threshold is crossed), `bench-tight` one of 100k tokens (every threshold is
 * crossed: pruning soft-trims and clears, the compaction point trims every long result). The image
 * replay clean-up runs in both (it does not depend on size). Each body is sent twice in its own
 * chat: first sight (the whole history goes into the chat log, images into attachments) and the
 * next turn (the same history, the model's answer and a short user message, as a client continues:
 * the history is already logged, recorded decisions are replayed). Sending the same body twice would
 * be a regenerated answer, logged in a branch with the whole history.
 *
 * Then the two passes alone, in this process, over parsed bodies: trimming over 10 MB with 500 tool
 * results, and pruning over a 2,000-message request.
 */
import { parseConfig } from '../config/config.ts';
import { createAnthropicRequestView } from '../providers/anthropic/request-view.ts';
import { trimToolResults } from '../middleware/tool-result-trimming/index.ts';
import { prunePass, resolvePruningSettings } from '../middleware/cache-ttl-pruning/index.ts';
import { clientHeaders, largeAnthropicBody, PATHS, SMALL_CHAT_ANSWER } from './bodies.ts';
import type { BenchContext } from './context.ts';
import { timedPost } from './http-client.ts';
import { warmUp } from './warm-up.ts';
import { withSpread, type SectionReport, type TargetCheck } from './report.ts';
import { startStack } from './stack.ts';
import { summarize, type Summary } from './stats.ts';

const MB = 2 ** 20;
/** A new chat's added time, at most this many times JSON.parse+stringify of its body (SPEC section 13). */
const NEW_CHAT_BUDGET = 3;
const MODELS = { roomy: 'bench-roomy', tight: 'bench-tight' } as const;
type Mode = keyof typeof MODELS;

interface SizeResult {
  mb: number;
  bytes: number;
  toolResults: number;
  images: number;
  parseStringifyMs: Summary;
  directMs: Summary;
  proxyMs: Summary;
  expressMs: Summary;
  gateway: Record<Mode, { firstMs: Summary; repeatMs: Summary; trimmed: number; pruned: string }>;
}

interface PassResult {
  name: string;
  mb: number;
  passMs: Summary;
  parseStringifyMs: Summary;
  changed: number;
}

/** Median time of `fn` over `n` runs, after one unmeasured run. */
function timeIt(n: number, fn: () => void): number[] {
  fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    out.push(performance.now() - t);
  }
  return out;
}

export async function largeRequestsBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const sizes = [1, 10, 30];
  const reps = ctx.quick ? 1 : 3;
  const stack = await startStack({
    gateway: {
      config: {
        models: {
          [MODELS.roomy]: { contextWindow: 1_000_000_000 },
          [MODELS.tight]: { contextWindow: 100_000 },
        },
        pruning: { mode: 'cache-ttl' },
      },
    },
  });
  const results: SizeResult[] = [];
  let chat = 0;
  let peakRss: number | undefined;
  try {
    for (const h of [stack.fake, stack.proxy!, stack.express!, stack.gateway!]) await warmUp(h.url);
    for (const mb of sizes) {
      const big = largeAnthropicBody({ bytes: mb * MB, seed: mb });
      const bodies: Record<Mode, string> = {
        roomy: JSON.stringify({ ...big.body, model: MODELS.roomy }),
        tight: JSON.stringify({ ...big.body, model: MODELS.tight }),
      };
      const nextMessages = [
        ...(big.body.messages as unknown[]),
        { role: 'assistant', content: SMALL_CHAT_ANSWER },
        { role: 'user', content: 'Go on.' },
      ];
      const nextTurn: Record<Mode, string> = {
        roomy: JSON.stringify({ ...big.body, model: MODELS.roomy, messages: nextMessages }),
        tight: JSON.stringify({ ...big.body, model: MODELS.tight, messages: nextMessages }),
      };
      const headers = clientHeaders('anthropic');
      const parseStringify = timeIt(Math.max(3, reps), () => JSON.stringify(JSON.parse(bodies.roomy)));
      const direct: number[] = [];
      const proxy: number[] = [];
      const express: number[] = [];
      const gw: Record<Mode, { first: number[]; repeat: number[]; trimmed: number; pruned: string }> = {
        roomy: { first: [], repeat: [], trimmed: 0, pruned: '' },
        tight: { first: [], repeat: [], trimmed: 0, pruned: '' },
      };
      // Warm-up of each path with this size (not measured).
      await timedPost(stack.fake.url + PATHS.anthropic, bodies.roomy, headers);
      await timedPost(stack.proxy!.url + PATHS.anthropic, bodies.roomy, headers);
      await timedPost(stack.express!.url + PATHS.anthropic, bodies.roomy, headers);
      for (const mode of ['roomy', 'tight'] as const) {
        const h = { ...headers, 'x-session-id': `large-warm-${process.pid}-${chat++}` };
        await timedPost(stack.gateway!.url + PATHS.anthropic, bodies[mode], h);
        await timedPost(stack.gateway!.url + PATHS.anthropic, nextTurn[mode], h);
      }
      for (let r = 0; r < reps; r++) {
        direct.push((await timedPost(stack.fake.url + PATHS.anthropic, bodies.roomy, headers)).lastByteMs);
        proxy.push((await timedPost(stack.proxy!.url + PATHS.anthropic, bodies.roomy, headers)).lastByteMs);
        express.push(
          (await timedPost(stack.express!.url + PATHS.anthropic, bodies.roomy, headers)).lastByteMs,
        );
        for (const mode of ['roomy', 'tight'] as const) {
          const h = { ...headers, 'x-session-id': `large-${process.pid}-${chat++}` };
          const first = await timedPost(stack.gateway!.url + PATHS.anthropic, bodies[mode], h);
          const again = await timedPost(stack.gateway!.url + PATHS.anthropic, nextTurn[mode], h);
          if (again.headers['x-session-id'] !== h['x-session-id']) {
            throw new Error(
              `the next turn was logged in ${String(again.headers['x-session-id'])}, not its chat`,
            );
          }
          gw[mode].first.push(first.lastByteMs);
          gw[mode].repeat.push(again.lastByteMs);
          gw[mode].trimmed = Number(first.headers['x-oda-trimmed'] ?? 0);
          gw[mode].pruned = String(first.headers['x-oda-pruned'] ?? '');
        }
      }
      ctx.progress(`large requests ${mb} MB done`);
      results.push({
        mb,
        bytes: Buffer.byteLength(bodies.roomy),
        toolResults: big.toolResults,
        images: big.images,
        parseStringifyMs: summarize(parseStringify),
        directMs: summarize(direct),
        proxyMs: summarize(proxy),
        expressMs: summarize(express),
        gateway: {
          roomy: {
            firstMs: summarize(gw.roomy.first),
            repeatMs: summarize(gw.roomy.repeat),
            trimmed: gw.roomy.trimmed,
            pruned: gw.roomy.pruned,
          },
          tight: {
            firstMs: summarize(gw.tight.first),
            repeatMs: summarize(gw.tight.repeat),
            trimmed: gw.tight.trimmed,
            pruned: gw.tight.pruned,
          },
        },
      });
    }
  } finally {
    peakRss = stack.gateway!.peakRss();
    await stack.stop();
  }
  const passes = [trimmingPassAlone(ctx), pruningPassAlone(ctx)];
  return buildReport(results, passes, peakRss, (performance.now() - t0) / 1000, reps);
}

/** The trimming pass alone over a 10 MB request with 500 tool results of ~20,000 characters. */
function trimmingPassAlone(ctx: BenchContext): PassResult {
  const big = largeAnthropicBody({
    bytes: 10 * MB,
    toolResultChars: [20_700, 20_700],
    imageEvery: 0,
    seed: 11,
  });
  const cfg = parseConfig({}).toolResultTrimming;
  const n = ctx.quick ? 3 : 7;
  const times: number[] = [];
  let changed = 0;
  for (let i = 0; i <= n; i++) {
    const body = JSON.parse(big.json) as Record<string, unknown>;
    const t = performance.now();
    const view = createAnthropicRequestView(body);
    changed = trimToolResults(view, cfg, 'threshold').length;
    if (i > 0) times.push(performance.now() - t);
  }
  return {
    name: `trimming pass, ${big.toolResults} tool results`,
    mb: big.json.length / MB,
    passMs: summarize(times),
    parseStringifyMs: summarize(timeIt(n, () => JSON.stringify(JSON.parse(big.json)))),
    changed,
  };
}

/** The pruning pass alone over a 2,000-message request (1,000 tool calls and their results). */
function pruningPassAlone(ctx: BenchContext): PassResult {
  // The first user message, 999 call/result pairs, a last answer and question: 2,001 messages.
  const big = largeAnthropicBody({
    bytes: Infinity,
    maxToolResults: 999,
    toolResultChars: [200, 8_000],
    imageEvery: 0,
    seed: 12,
  });
  const settings = resolvePruningSettings(parseConfig({}).pruning, true, undefined);
  const n = ctx.quick ? 3 : 7;
  const times: number[] = [];
  let changed = 0;
  for (let i = 0; i <= n; i++) {
    const body = JSON.parse(big.json) as Record<string, unknown>;
    const t = performance.now();
    const view = createAnthropicRequestView(body);
    const pass = prunePass(view, settings, 200_000);
    changed = pass.soft + pass.cleared;
    if (i > 0) times.push(performance.now() - t);
  }
  return {
    name: `pruning pass, ${big.messages} messages`,
    mb: big.json.length / MB,
    passMs: summarize(times),
    parseStringifyMs: summarize(timeIt(n, () => JSON.stringify(JSON.parse(big.json)))),
    changed,
  };
}

function buildReport(
  results: SizeResult[],
  passes: PassResult[],
  peakRss: number | undefined,
  seconds: number,
  reps: number,
): SectionReport {
  const targets: TargetCheck[] = [];
  const rows = results.flatMap((r) =>
    (['roomy', 'tight'] as const).map((mode) => {
      const g = r.gateway[mode];
      const ps = r.parseStringifyMs.median;
      const added = g.firstMs.median - r.directMs.median;
      const addedRepeat = g.repeatMs.median - r.directMs.median;
      const ratio = added / ps;
      // The budget is for a new chat with a 10-30 MB history (SPEC section 13); 1 MB is shown.
      if (r.mb >= 10) {
        targets.push({
          name: `${r.mb} MB, ${mode === 'roomy' ? 'under' : 'over'} thresholds, new chat: gateway added time vs JSON.parse+stringify`,
          target: `<= ${NEW_CHAT_BUDGET}x`,
          measured: `${ratio.toFixed(1)}x (next turn ${(addedRepeat / ps).toFixed(1)}x)`,
          met: ratio <= NEW_CHAT_BUDGET,
          missedBy: `x${(ratio / NEW_CHAT_BUDGET).toFixed(1)} over`,
        });
      }
      return [
        `${r.mb} MB ${mode === 'roomy' ? 'under' : 'over'}`,
        r.parseStringifyMs.median.toFixed(1),
        r.directMs.median.toFixed(1),
        r.proxyMs.median.toFixed(1),
        r.expressMs.median.toFixed(1),
        withSpread(g.firstMs.median, g.firstMs.spread, 1),
        withSpread(g.repeatMs.median, g.repeatMs.spread, 1),
        added.toFixed(1),
        (added / (r.bytes / MB)).toFixed(1),
        `${ratio.toFixed(1)}x / ${(addedRepeat / ps).toFixed(1)}x`,
        mode === 'tight' ? `${g.trimmed} / ${g.pruned || '-'}` : `${g.trimmed || '-'} / ${g.pruned || '-'}`,
      ];
    }),
  );
  const passRows = passes.map((p) => [
    p.name,
    p.mb.toFixed(1),
    p.passMs.median.toFixed(1),
    (p.passMs.median / p.mb).toFixed(2),
    (p.parseStringifyMs.median / p.mb).toFixed(2),
    `${(p.passMs.median / p.parseStringifyMs.median).toFixed(2)}x`,
    p.changed,
  ]);
  for (const p of passes) {
    const ratio = p.passMs.median / p.parseStringifyMs.median;
    targets.push({
      name: `${p.name}: time per MB vs JSON.parse+stringify`,
      target: '<= 2x',
      measured: `${ratio.toFixed(2)}x`,
      met: ratio <= 2,
      missedBy: `x${(ratio / 2).toFixed(1)} over`,
    });
  }
  return {
    name: 'Large requests (Anthropic format, long tool results and screenshots)',
    seconds,
    tables: [
      {
        title: `Time per request in ms, median of ${reps} (gateway ±half the range); added = gateway first sight - direct`,
        headers: [
          'body',
          'parse+stringify',
          'direct',
          'node proxy',
          'Express proxy',
          'gateway 1st',
          'gateway next turn',
          'added',
          'added/MB',
          'added/(p+s) 1st/next',
          'trimmed / pruned',
        ],
        rows,
      },
      {
        title: 'One pass alone over a parsed body (view creation included), ms',
        headers: ['pass', 'MB', 'ms', 'ms/MB', 'parse+stringify ms/MB', 'ratio', 'results changed'],
        rows: passRows,
      },
    ],
    targets,
    notes: [
      'under = context window far above the body (no pruning/trimming threshold crossed); over = 100k-token window (pruning and compaction trimming run)',
      '1st = the chat is new, so the whole history is appended to the chat log and its images stored; next = the next turn of the same chat (the history, the answer and a short user message)',
      'direct and the minimal proxies include the fake provider parsing the body; parse+stringify is measured in the benchmark process',
      ...(peakRss ? [`gateway peak RSS during this benchmark: ${(peakRss / MB).toFixed(0)} MB`] : []),
    ],
    data: { results, passes, peakRss },
  };
}
