/**
 * Benchmark 1, overhead: autocannon against the fake provider directly, the two floors (the minimal
 * node:http proxy and the minimal Express 5 proxy) and the gateway, with a small chat request in
 * both formats, streamed and not, at 1 and 50 connections, all in the same rounds.
 *
 * Chats, as clients make them: every request continues its chat (the history it sends is the last
 * one plus the model's answer and a short user message, ~2 KB growing to ~7 KB), and a chat ends
 * after `TURNS_PER_CHAT` requests. Two ways of spreading the load:
 * - a chat per connection: each connection runs its own conversations (`x-session-id:
 *   <run>-c<connection>-<k>`), like many users or agents at once;
 * - one chat: all connections take the turns of one conversation (`<run>-one-<k>`), in whatever
 *   order the answers come back, like one agent's parallel calls. The floors do the same work
 *   either way, so only the gateway is measured this way.
 * The first request of each chat pays for creating its log.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SMALL_CHAT_ANSWER, type Format } from './bodies.ts';
import {
  conversationBodies,
  conversationLoad,
  TURNS_PER_CHAT,
  type LoadFigures,
  type Spread,
} from './conversation-load.ts';
import type { BenchContext } from './context.ts';
import type { ChildHandle, ChildUsage } from './processes.ts';
import { withSpread, type SectionReport, type TargetCheck } from './report.ts';
import { startGateway, startStack, tmpfsRoot, type GatewayHandle } from './stack.ts';
import { summarize, type Summary } from './stats.ts';
import { warmUp } from './warm-up.ts';

/**
 * `gatewayTmpfs` is the same gateway with its data dir on tmpfs, where fsync costs nothing: the
 * difference to `gateway` is what the chat log's durable appends cost on this machine's disk.
 */
const ALL_TARGETS = ['direct', 'proxy', 'express', 'gateway', 'gatewayTmpfs'] as const;
type Target = (typeof ALL_TARGETS)[number];
const GATEWAYS: readonly Target[] = ['gateway', 'gatewayTmpfs'];

/** Added time per request at 1 connection, at most this many times the Express floor's (SPEC 13). */
export const ADDED_VS_EXPRESS = 1.5;
/** Requests per second at 50 connections, at least this share of the Express floor's. */
const RATE_VS_EXPRESS: Record<Spread, number> = { perConnection: 0.6, oneChat: 0.5 };

interface TargetFigures {
  rps: Summary;
  msPerRequest: Summary;
  p50: Summary;
  p99: Summary;
  cpuMsPerRequest: Summary | undefined;
  errors: number;
}

interface CaseResult {
  format: Format;
  stream: boolean;
  connections: number;
  spread: Spread;
  /** Body bytes of the first and last turn of a chat. */
  bytes: [number, number];
  byTarget: Partial<Record<Target, TargetFigures>>;
}

/** Chat files of branches (`<id>.b<12 hex>`) under a gateway's data dir: 0 when every turn continued its chat. */
function branchFiles(dataDir: string): number {
  const walk = (dir: string): number => {
    let n = 0;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return 0;
    }
    for (const e of entries) {
      if (e.isDirectory()) n += walk(join(dir, e.name));
      else if (/\.b[0-9a-f]{12}\.[^/]*jsonl$/.test(e.name)) n++;
    }
    return n;
  };
  return walk(join(dataDir, 'chats'));
}

export async function overheadBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const stack = await startStack({ fake: { answer: SMALL_CHAT_ANSWER } });
  const shm = tmpfsRoot();
  const tmpfsGateway: GatewayHandle | undefined = shm
    ? await startGateway(stack.fake.url, { tempRoot: shm, name: 'gateway (tmpfs)' })
    : undefined;
  const handles: Partial<Record<Target, ChildHandle>> = {
    direct: stack.fake,
    proxy: stack.proxy!,
    express: stack.express!,
    gateway: stack.gateway!,
    ...(tmpfsGateway ? { gatewayTmpfs: tmpfsGateway } : {}),
  };
  const TARGETS = ALL_TARGETS.filter((t) => handles[t]);
  const run = (
    t: Target,
    format: Format,
    stream: boolean,
    connections: number,
    spread: Spread,
    seconds: number,
  ) =>
    conversationLoad(handles[t]!, {
      format,
      stream,
      connections,
      spread,
      seconds,
      ...(t === 'direct' ? {} : { cpuOf: handles[t] }),
    });
  const seconds = ctx.quick ? 1 : 1.5;
  const rounds = ctx.quick ? 2 : 3;
  const cases: Array<{ format: Format; stream: boolean; connections: number; spread: Spread }> = [];
  for (const connections of [1, 50]) {
    for (const format of ['openai', 'anthropic'] as const) {
      for (const stream of [false, true]) {
        cases.push({ format, stream, connections, spread: 'perConnection' });
        if (connections > 1) cases.push({ format, stream, connections, spread: 'oneChat' });
      }
    }
  }
  const caseKey = (c: { format: Format; stream: boolean; connections: number; spread: Spread }) =>
    `${c.format}/${c.stream}/${c.connections}/${c.spread}`;
  const targetsOf = (spread: Spread) =>
    spread === 'oneChat' ? TARGETS.filter((t) => GATEWAYS.includes(t)) : TARGETS;
  const rssSamples: number[] = [];
  const idle = await stack.gateway!.usage();
  try {
    // Warm-up: every path of every process runs hot before anything is measured, the same number
    // of requests for each (bench/warm-up.ts says why a count and not a duration).
    for (const t of TARGETS) await warmUp(handles[t]!.url, { connections: 10 });
    const raw = new Map<string, Partial<Record<Target, LoadFigures[]>>>();
    for (let round = 0; round < rounds; round++) {
      for (const c of cases) {
        const key = caseKey(c);
        const per = raw.get(key) ?? {};
        raw.set(key, per);
        const targets = targetsOf(c.spread);
        // Rotate the order of the targets from round to round so drift does not favour one.
        for (let i = 0; i < targets.length; i++) {
          const t = targets[(i + round) % targets.length]!;
          (per[t] ??= []).push(await run(t, c.format, c.stream, c.connections, c.spread, seconds));
          if (t === 'gateway') rssSamples.push((await stack.gateway!.usage()).rss);
        }
        ctx.progress(`overhead round ${round + 1}/${rounds} ${key}`);
      }
    }
    const peak = stack.gateway!.peakRss();
    const memory = await stack.gateway!.usage();
    const branches = GATEWAYS.map((t) => {
      const h = handles[t] as GatewayHandle | undefined;
      return h ? branchFiles(h.dataDir) : 0;
    }).reduce((a, b) => a + b, 0);
    const results: CaseResult[] = cases.map((c) => {
      const per = raw.get(caseKey(c))!;
      const byTarget = Object.fromEntries(
        targetsOf(c.spread).map((t) => {
          const runs = per[t]!;
          const cpu = runs.map((r) => r.cpuMsPerRequest).filter((x): x is number => x !== undefined);
          const figures: TargetFigures = {
            rps: summarize(runs.map((r) => r.rps)),
            msPerRequest: summarize(runs.map((r) => 1000 / r.rps)),
            p50: summarize(runs.map((r) => r.p50)),
            p99: summarize(runs.map((r) => r.p99)),
            cpuMsPerRequest: cpu.length ? summarize(cpu) : undefined,
            errors: runs.reduce((n, r) => n + r.errors, 0),
          };
          return [t, figures];
        }),
      ) as CaseResult['byTarget'];
      const b = conversationBodies(c.format, c.stream);
      return { ...c, bytes: [b[0]!.length, b[b.length - 1]!.length], byTarget };
    });
    return buildReport(results, rssSamples, peak, idle, memory, branches, (performance.now() - t0) / 1000, {
      seconds,
      rounds,
    });
  } finally {
    await tmpfsGateway?.stop();
    await stack.stop();
  }
}

function label(r: { format: Format; stream: boolean }): string {
  return `${r.format} ${r.stream ? 'stream' : 'json'}`;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const pct = (x: number) => `${Math.round(100 * x)}%`;
const cpu = (f: TargetFigures | undefined) =>
  f?.cpuMsPerRequest ? f.cpuMsPerRequest.median.toFixed(2) : 'n/a';

function buildReport(
  results: CaseResult[],
  rssSamples: number[],
  peakRss: number | undefined,
  idle: ChildUsage,
  memory: ChildUsage,
  branches: number,
  seconds: number,
  setup: { seconds: number; rounds: number },
): SectionReport {
  const one = results.filter((r) => r.connections === 1);
  const fifty = results.filter((r) => r.connections === 50 && r.spread === 'perConnection');
  const oneChat = (r: CaseResult) =>
    results.find(
      (o) => o.connections === 50 && o.spread === 'oneChat' && o.format === r.format && o.stream === r.stream,
    );
  const hasTmpfs = results.some((r) => r.byTarget.gatewayTmpfs);
  const targets: TargetCheck[] = [];
  const rows1 = one.map((r) => {
    const b = r.byTarget;
    const d = b.direct!.msPerRequest.median;
    const added = (t: Target) => b[t]!.msPerRequest.median - d;
    const ratio = added('gateway') / added('express');
    targets.push({
      name: `added time per request at 1 connection vs the Express floor's, ${label(r)}`,
      target: `<= ${ADDED_VS_EXPRESS}x`,
      measured: `${ratio.toFixed(2)}x (${added('gateway').toFixed(3)} vs ${added('express').toFixed(3)} ms)`,
      met: ratio <= ADDED_VS_EXPRESS,
      missedBy: `+${(added('gateway') - ADDED_VS_EXPRESS * added('express')).toFixed(3)} ms`,
    });
    return [
      label(r),
      withSpread(d, b.direct!.msPerRequest.spread, 3),
      withSpread(b.proxy!.msPerRequest.median, b.proxy!.msPerRequest.spread, 3),
      withSpread(b.express!.msPerRequest.median, b.express!.msPerRequest.spread, 3),
      withSpread(b.gateway!.msPerRequest.median, b.gateway!.msPerRequest.spread, 3),
      ...(b.gatewayTmpfs
        ? [withSpread(b.gatewayTmpfs.msPerRequest.median, b.gatewayTmpfs.msPerRequest.spread, 3)]
        : []),
      added('proxy').toFixed(3),
      added('express').toFixed(3),
      added('gateway').toFixed(3),
      ...(b.gatewayTmpfs ? [added('gatewayTmpfs').toFixed(3)] : []),
      `${ratio.toFixed(2)}x`,
      ALL_TARGETS.map((t) => b[t]?.p99.median)
        .filter((x) => x !== undefined)
        .join('/'),
    ];
  });
  const rows50 = fifty.map((r) => {
    const b = r.byTarget;
    const o = oneChat(r)?.byTarget ?? {};
    const e = b.express!.rps.median;
    const share = (f: TargetFigures | undefined) => (f ? f.rps.median / e : NaN);
    for (const spread of ['perConnection', 'oneChat'] as const) {
      const g = spread === 'oneChat' ? o.gateway : b.gateway;
      if (!g) continue;
      const want = RATE_VS_EXPRESS[spread];
      targets.push({
        name: `requests/s at 50 connections vs the Express floor, ${spread === 'oneChat' ? 'one chat' : 'a chat per connection'}, ${label(r)}`,
        target: `>= ${pct(want)}`,
        measured: pct(share(g)),
        met: share(g) >= want,
        missedBy: `${Math.round(100 * (want - share(g)))} points`,
      });
    }
    return [
      label(r),
      withSpread(b.direct!.rps.median, b.direct!.rps.spread),
      withSpread(b.proxy!.rps.median, b.proxy!.rps.spread),
      withSpread(e, b.express!.rps.spread),
      withSpread(b.gateway!.rps.median, b.gateway!.rps.spread),
      o.gateway ? withSpread(o.gateway.rps.median, o.gateway.rps.spread) : 'n/a',
      pct(share(b.gateway)),
      pct(share(o.gateway)),
      ...(hasTmpfs ? [`${pct(share(b.gatewayTmpfs))} / ${pct(share(o.gatewayTmpfs))}`] : []),
      `${cpu(b.proxy)}/${cpu(b.express)}/${cpu(b.gateway)}/${cpu(o.gateway)}`,
    ];
  });
  const maxRss = Math.max(...rssSamples);
  const peak = peakRss ?? maxRss;
  targets.push({
    name: 'gateway RSS (peak over the whole benchmark)',
    target: '< 150 MB',
    measured: `${mb(peak)} MB`,
    met: peak < 150 * 2 ** 20,
    missedBy: `+${mb(peak - 150 * 2 ** 20)} MB`,
  });
  targets.push({
    name: 'every turn continued its chat (no branch chats made)',
    target: '0 branches',
    measured: String(branches),
    met: branches === 0,
    missedBy: String(branches),
  });
  const errors = results.reduce(
    (n, r) => n + ALL_TARGETS.reduce((m, t) => m + (r.byTarget[t]?.errors ?? 0), 0),
    0,
  );
  const tmpfsCols = (a: string[]) => (hasTmpfs ? a : []);
  const [first, last] = results[0]?.bytes ?? [0, 0];
  return {
    name: `Overhead (a small chat request, ${(first / 1024).toFixed(1)}-${(last / 1024).toFixed(1)} KB)`,
    seconds,
    tables: [
      {
        title: `1 connection: time per request in ms (1000 / requests per second), median of ${setup.rounds} rounds of ${setup.seconds} s, ±half the range; adds = minus direct`,
        headers: [
          'case',
          'direct',
          'node proxy',
          'Express proxy',
          'gateway',
          ...tmpfsCols(['gw (tmpfs)']),
          'node adds',
          'Express adds',
          'gateway adds',
          ...tmpfsCols(['gw (tmpfs) adds']),
          'gateway / Express',
          `p99 ms d/n/e/g${hasTmpfs ? '/t' : ''}`,
        ],
        rows: rows1,
      },
      {
        title: `50 connections: requests per second, median of ${setup.rounds} rounds of ${setup.seconds} s; gateway with a chat per connection, and with all connections in one chat`,
        headers: [
          'case',
          'direct',
          'node proxy',
          'Express proxy',
          'gateway',
          'gateway, one chat',
          'gw / Express',
          'one chat / Express',
          ...tmpfsCols(['gw (tmpfs) / Express, per conn / one chat']),
          'CPU ms/req n/e/g/g1',
        ],
        rows: rows50,
      },
      {
        title: 'Gateway memory (MB)',
        headers: ['what', 'MB'],
        rows: [
          ['RSS at start, idle (V8 heap used)', `${mb(idle.rss)} (${mb(idle.heapUsed)})`],
          ['RSS after each run, median', mb(summarize(rssSamples).median)],
          ['RSS after each run, max', mb(maxRss)],
          ['RSS peak (VmHWM)', peakRss === undefined ? 'n/a' : mb(peakRss)],
          ['at the end: V8 heap used / total', `${mb(memory.heapUsed)} / ${mb(memory.heapTotal)}`],
          ['at the end: external (buffers)', mb(memory.external)],
        ],
      },
    ],
    targets,
    notes: [
      `chats: every request continues its chat (the last history, the answer, a short user message); a new chat every ${TURNS_PER_CHAT} turns`,
      'node proxy: node:http + JSON.parse/stringify + undici; Express proxy: the same behind one Express 5 route with express.raw (the Express floor)',
      ...(hasTmpfs
        ? [
            'gw (tmpfs): the same gateway with its data dir on tmpfs, where disk flushes cost nothing; the gap to "gateway" is what the disk adds',
          ]
        : []),
      'CPU ms/req: user+system CPU time of that process (all its threads) per completed request; g1 = the gateway with one chat',
      'autocannon, the fake provider, the proxies and the gateway share the machine: at 50 connections every figure is bounded by that',
      'p99 from autocannon is in whole milliseconds',
      ...(errors ? [`${errors} errors, timeouts or non-2xx answers were seen`] : []),
    ],
    data: { setup, results, rssSamples, peakRss, branches, memoryAtStart: idle, memoryAtEnd: memory },
  };
}
