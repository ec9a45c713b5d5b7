/**
 * Benchmark 1, overhead: autocannon against the fake provider directly, the minimal proxy and the
 * gateway, with a ~2 KB chat request in both formats, streamed and not, at 1 and 50 connections.
 *
 * Chats: every connection sends `x-session-id: <run>-c<connection>-<k>`, where k moves on every
 * 50 requests, so each chat holds at most 50 requests (like a short agent session) and no chat
 * grows without bound; the first request of each chat pays for creating its log.
 */
import autocannon, { type AutocannonResult } from 'autocannon';
import { clientHeaders, PATHS, smallChat, type Format } from './bodies.ts';
import type { BenchContext } from './context.ts';
import type { ChildHandle, ChildUsage } from './processes.ts';
import { withSpread, type SectionReport, type TargetCheck } from './report.ts';
import { startGateway, startStack, tmpfsRoot, type GatewayHandle } from './stack.ts';
import { summarize, type Summary } from './stats.ts';

/**
 * `gatewayTmpfs` is the same gateway with its data dir on tmpfs, where fsync costs nothing: the
 * difference to `gateway` is what the chat log's durable appends cost on this machine's disk.
 */
const ALL_TARGETS = ['direct', 'proxy', 'gateway', 'gatewayTmpfs'] as const;
type Target = (typeof ALL_TARGETS)[number];
const REQUESTS_PER_CHAT = 50;

interface RunFigures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time of the target's own process per request (ms), when it is a child we can ask. */
  cpuMsPerRequest: number | undefined;
}

interface CaseResult {
  format: Format;
  stream: boolean;
  connections: number;
  bytes: number;
  byTarget: Partial<Record<Target, TargetFigures>>;
}

interface TargetFigures {
  rps: Summary;
  msPerRequest: Summary;
  p50: Summary;
  p99: Summary;
  cpuMsPerRequest: Summary | undefined;
  errors: number;
}

let runCounter = 0;

async function cannon(
  target: ChildHandle,
  cpuOf: ChildHandle | undefined,
  path: string,
  body: string,
  format: Format,
  connections: number,
  seconds: number,
): Promise<RunFigures> {
  const before = cpuOf ? await cpuOf.usage() : undefined;
  const tag = `ovh-${process.pid}-${++runCounter}`;
  let conn = 0;
  const base = clientHeaders(format);
  const result: AutocannonResult = await autocannon({
    url: target.url + path,
    method: 'POST',
    connections,
    duration: seconds,
    headers: base,
    body,
    setupClient(client) {
      const c = conn++;
      let sent = 0;
      const session = () => ({
        ...base,
        'x-session-id': `${tag}-c${c}-${Math.floor(sent / REQUESTS_PER_CHAT)}`,
      });
      client.setHeaders(session());
      client.on('response', () => {
        sent++;
        if (sent % REQUESTS_PER_CHAT === 0) client.setHeaders(session());
      });
    },
  });
  const after = cpuOf ? await cpuOf.usage() : undefined;
  const cpuMs =
    before && after
      ? (after.cpuUser + after.cpuSystem - before.cpuUser - before.cpuSystem) / 1000
      : undefined;
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cpuMsPerRequest: cpuMs === undefined || result['2xx'] === 0 ? undefined : cpuMs / result['2xx'],
  };
}

export async function overheadBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const stack = await startStack();
  const shm = tmpfsRoot();
  const tmpfsGateway: GatewayHandle | undefined = shm
    ? await startGateway(stack.fake.url, { tempRoot: shm, name: 'gateway (tmpfs)' })
    : undefined;
  const handles: Partial<Record<Target, ChildHandle>> = {
    direct: stack.fake,
    proxy: stack.proxy!,
    gateway: stack.gateway!,
    ...(tmpfsGateway ? { gatewayTmpfs: tmpfsGateway } : {}),
  };
  const TARGETS = ALL_TARGETS.filter((t) => handles[t]);
  const run = (t: Target, format: Format, body: string, connections: number, secs: number) =>
    cannon(
      handles[t]!,
      t === 'direct' ? undefined : handles[t],
      PATHS[format],
      body,
      format,
      connections,
      secs,
    );
  const seconds = ctx.quick ? 1 : 1.5;
  const rounds = ctx.quick ? 2 : 3;
  const cases: Array<{ format: Format; stream: boolean; connections: number }> = [];
  for (const connections of [1, 50]) {
    for (const format of ['openai', 'anthropic'] as const) {
      for (const stream of [false, true]) cases.push({ format, stream, connections });
    }
  }
  const rssSamples: number[] = [];
  const idle = await stack.gateway!.usage();
  try {
    // Warm-up: every path of every process runs hot before anything is measured.
    for (const format of ['openai', 'anthropic'] as const) {
      for (const stream of [false, true]) {
        const body = JSON.stringify(smallChat(format, stream));
        for (const t of TARGETS) await run(t, format, body, 10, 0.5);
      }
    }
    const raw = new Map<string, Record<Target, RunFigures[]>>();
    for (let round = 0; round < rounds; round++) {
      for (const c of cases) {
        const key = `${c.format}/${c.stream}/${c.connections}`;
        const body = JSON.stringify(smallChat(c.format, c.stream));
        const per = raw.get(key) ?? { direct: [], proxy: [], gateway: [], gatewayTmpfs: [] };
        raw.set(key, per);
        // Rotate the order of the targets from round to round so drift does not favour one.
        for (let i = 0; i < TARGETS.length; i++) {
          const t = TARGETS[(i + round) % TARGETS.length]!;
          per[t].push(await run(t, c.format, body, c.connections, seconds));
          if (t === 'gateway') rssSamples.push((await stack.gateway!.usage()).rss);
        }
        ctx.progress(`overhead round ${round + 1}/${rounds} ${key}`);
      }
    }
    const peak = stack.gateway!.peakRss();
    const memory = await stack.gateway!.usage();
    const results: CaseResult[] = cases.map((c) => {
      const per = raw.get(`${c.format}/${c.stream}/${c.connections}`)!;
      const byTarget = Object.fromEntries(
        TARGETS.map((t) => {
          const runs = per[t];
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
      return { ...c, bytes: JSON.stringify(smallChat(c.format, c.stream)).length, byTarget };
    });
    return buildReport(results, rssSamples, peak, idle, memory, (performance.now() - t0) / 1000, {
      seconds,
      rounds,
    });
  } finally {
    await tmpfsGateway?.stop();
    await stack.stop();
  }
}

function label(r: CaseResult): string {
  return `${r.format} ${r.stream ? 'stream' : 'json'}`;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const p99s = (r: CaseResult) =>
  ALL_TARGETS.map((t) => r.byTarget[t]?.p99.median)
    .filter((x) => x !== undefined)
    .join('/');
const cpu = (f: TargetFigures | undefined) =>
  f?.cpuMsPerRequest ? f.cpuMsPerRequest.median.toFixed(2) : 'n/a';

function buildReport(
  results: CaseResult[],
  rssSamples: number[],
  peakRss: number | undefined,
  idle: ChildUsage,
  memory: ChildUsage,
  seconds: number,
  setup: { seconds: number; rounds: number },
): SectionReport {
  const one = results.filter((r) => r.connections === 1);
  const fifty = results.filter((r) => r.connections === 50);
  const hasTmpfs = results.some((r) => r.byTarget.gatewayTmpfs);
  const targets: TargetCheck[] = [];
  const rows1 = one.map((r) => {
    const b = r.byTarget;
    const d = b.direct!.msPerRequest.median;
    const p = b.proxy!.msPerRequest.median;
    const g = b.gateway!.msPerRequest.median;
    const added = g - d;
    targets.push({
      name: `added time per request at 1 connection, ${label(r)}`,
      target: '<= 0.5 ms',
      measured: `${added.toFixed(2)} ms`,
      met: added <= 0.5,
      missedBy: `+${(added - 0.5).toFixed(2)} ms`,
    });
    return [
      label(r),
      withSpread(d, b.direct!.msPerRequest.spread, 3),
      withSpread(p, b.proxy!.msPerRequest.spread, 3),
      withSpread(g, b.gateway!.msPerRequest.spread, 3),
      ...(b.gatewayTmpfs
        ? [withSpread(b.gatewayTmpfs.msPerRequest.median, b.gatewayTmpfs.msPerRequest.spread, 3)]
        : []),
      (p - d).toFixed(3),
      added.toFixed(3),
      ...(b.gatewayTmpfs ? [(b.gatewayTmpfs.msPerRequest.median - d).toFixed(3)] : []),
      p99s(r),
    ];
  });
  const rows50 = fifty.map((r) => {
    const b = r.byTarget;
    const d = b.direct!.rps.median;
    const p = b.proxy!.rps.median;
    const g = b.gateway!.rps.median;
    targets.push({
      name: `requests/s at 50 connections vs minimal proxy, ${label(r)}`,
      target: '>= 50%',
      measured: `${Math.round((100 * g) / p)}%`,
      met: g >= 0.5 * p,
      missedBy: `${Math.round(100 * (0.5 - g / p))} points`,
    });
    return [
      label(r),
      withSpread(d, b.direct!.rps.spread),
      withSpread(p, b.proxy!.rps.spread),
      withSpread(g, b.gateway!.rps.spread),
      ...(b.gatewayTmpfs ? [withSpread(b.gatewayTmpfs.rps.median, b.gatewayTmpfs.rps.spread)] : []),
      `${Math.round((100 * g) / p)}%`,
      ...(b.gatewayTmpfs ? [`${Math.round((100 * b.gatewayTmpfs.rps.median) / p)}%`] : []),
      `${cpu(b.proxy)}/${cpu(b.gateway)}${b.gatewayTmpfs ? `/${cpu(b.gatewayTmpfs)}` : ''}`,
      p99s(r),
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
  const errors = results.reduce(
    (n, r) => n + ALL_TARGETS.reduce((m, t) => m + (r.byTarget[t]?.errors ?? 0), 0),
    0,
  );
  const tmpfsCols = (a: string[]) => (hasTmpfs ? a : []);
  return {
    name: 'Overhead (small chat request, ~2 KB)',
    seconds,
    tables: [
      {
        title: `1 connection: time per request in ms (1000 / requests per second), median of ${setup.rounds} rounds of ${setup.seconds} s, ±half the range`,
        headers: [
          'case',
          'direct',
          'min. proxy',
          'gateway',
          ...tmpfsCols(['gw (tmpfs)']),
          'proxy adds',
          'gateway adds',
          ...tmpfsCols(['gw (tmpfs) adds']),
          `p99 ms d/p/g${hasTmpfs ? '/t' : ''}`,
        ],
        rows: rows1,
      },
      {
        title: `50 connections: requests per second, median of ${setup.rounds} rounds of ${setup.seconds} s`,
        headers: [
          'case',
          'direct',
          'min. proxy',
          'gateway',
          ...tmpfsCols(['gw (tmpfs)']),
          'gw/proxy',
          ...tmpfsCols(['gw (tmpfs)/proxy']),
          `CPU ms/req p/g${hasTmpfs ? '/t' : ''}`,
          `p99 ms d/p/g${hasTmpfs ? '/t' : ''}`,
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
      `chats: x-session-id per connection, a new chat every ${REQUESTS_PER_CHAT} requests of a connection`,
      ...(hasTmpfs
        ? [
            'gw (tmpfs): the same gateway with its data dir on tmpfs, where disk flushes cost nothing; the gap to "gateway" is what the disk adds',
          ]
        : []),
      'CPU ms/req: user+system CPU time of that process (all its threads) per completed request',
      'autocannon, the fake provider, the proxy and the gateway share the 2 cores: at 50 connections every figure is bounded by that',
      'p99 from autocannon is in whole milliseconds',
      ...(errors ? [`${errors} errors, timeouts or non-2xx answers were seen`] : []),
    ],
    data: { setup, results, rssSamples, peakRss, memoryAtStart: idle, memoryAtEnd: memory },
  };
}
