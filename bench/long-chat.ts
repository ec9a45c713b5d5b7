/**
 * Benchmark 4, long chats: one 500-turn chat where every request carries the whole history (as
 * clients do), sent turn by turn directly, through a byte pipe (the node proxy without its parse:
 * what carrying the body one more hop costs, with no work on it), through the two minimal proxies
 * (node:http and Express), and through the gateway with the file store and with the Redis store.
 * The figure is the time per request around turns 10, 100 and 500 (the median of the 10 turns of a
 * window), and the gateway's overhead over the direct path at the same body size, so the growth of
 * the body itself is not counted against the gateway.
 *
 * Each turn adds a ~1 KB user message and the model's ~1 KB answer (the fake provider answers the
 * same text the client then sends back, so the gateway sees one straight chat, never a branch).
 */
import { clientHeaders, LONG_CHAT_ANSWER, longChat, PATHS } from './bodies.ts';
import type { BenchContext } from './context.ts';
import { timedPost } from './http-client.ts';
import { warmUp } from './warm-up.ts';
import { hasRedisServer, startChild, startRedis, type ChildHandle, type RedisHandle } from './processes.ts';
import { withSpread, type SectionReport, type TargetCheck } from './report.ts';
import { startGateway, startStack, type GatewayHandle } from './stack.ts';
import { median, summarize, type Summary } from './stats.ts';

const TURNS = 500;
/** Windows of 10 turns around the turns we report. */
const WINDOWS: ReadonlyArray<{ turn: number; from: number; to: number }> = [
  { turn: 10, from: 6, to: 15 },
  { turn: 100, from: 96, to: 105 },
  { turn: 500, from: 491, to: 500 },
];
const TARGETS = ['direct', 'pipe', 'proxy', 'express', 'gatewayFile', 'gatewayRedis'] as const;
/** Added time at the last turn over the first window's, at most (SPEC section 13). */
const FLAT = 2;
type Target = (typeof TARGETS)[number];

interface WindowFigures {
  turn: number;
  bodyBytes: number;
  byTarget: Partial<Record<Target, Summary>>;
}

export async function longChatBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const rounds = ctx.quick ? 1 : 2;
  const notes: string[] = [];
  const stack = await startStack({ fake: { answer: LONG_CHAT_ANSWER } });
  const pipe = await startChild('byte pipe', './minimal-proxy.ts', {
    target: stack.fake.url,
    pipe: true,
  }).catch(async (e: unknown) => {
    await stack.stop();
    throw e;
  });
  let redis: RedisHandle | undefined;
  let redisGateway: GatewayHandle | undefined;
  if (hasRedisServer()) {
    redis = await startRedis();
    redisGateway = await startGateway(stack.fake.url, {
      name: 'gateway (redis)',
      config: { store: { kind: 'redis', url: redis.url } },
    });
  } else {
    notes.push('redis-server is not installed here: the Redis store was not measured');
  }
  const handles: Partial<Record<Target, ChildHandle>> = {
    direct: stack.fake,
    pipe,
    proxy: stack.proxy!,
    express: stack.express!,
    gatewayFile: stack.gateway!,
    ...(redisGateway ? { gatewayRedis: redisGateway } : {}),
  };
  const targets = TARGETS.filter((t) => handles[t]);
  const chat = longChat(TURNS);
  const headers = clientHeaders('anthropic');
  // samples[target][window] = per-round medians
  const samples = new Map<Target, number[][]>(targets.map((t) => [t, WINDOWS.map(() => [])]));
  const bodyBytes = WINDOWS.map(() => 0);
  let branched = 0;
  const peaks: Partial<Record<Target, number>> = {};
  try {
    for (const t of targets) await warmUp(handles[t]!.url);
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(k + round) % targets.length]!;
        const id = `long-${process.pid}-${round}-${t}`;
        const inWindow: number[][] = WINDOWS.map(() => []);
        for (let turn = 1; turn <= TURNS; turn++) {
          const body = JSON.stringify(chat.body(turn));
          const r = await timedPost(handles[t]!.url + PATHS.anthropic, body, {
            ...headers,
            'x-session-id': id,
          });
          if (t.startsWith('gateway') && r.headers['x-session-id'] !== id) branched++;
          WINDOWS.forEach((w, i) => {
            if (turn >= w.from && turn <= w.to) {
              inWindow[i]!.push(r.lastByteMs);
              if (turn === w.turn) bodyBytes[i] = body.length;
            }
          });
        }
        inWindow.forEach((v, i) => samples.get(t)![i]!.push(median(v)));
        const peak = handles[t]!.peakRss();
        if (t.startsWith('gateway') && peak !== undefined) peaks[t] = peak;
        ctx.progress(`long chat round ${round + 1}/${rounds} ${t} done`);
      }
    }
  } finally {
    await redisGateway?.stop();
    await redis?.stop();
    await pipe.stop();
    await stack.stop();
  }
  if (branched)
    notes.push(
      `${branched} gateway answers named another chat (a branch): the history did not match the log`,
    );
  const windows: WindowFigures[] = WINDOWS.map((w, i) => ({
    turn: w.turn,
    bodyBytes: bodyBytes[i]!,
    byTarget: Object.fromEntries(targets.map((t) => [t, summarize(samples.get(t)![i]!)])),
  }));
  return buildReport(windows, targets, peaks, notes, (performance.now() - t0) / 1000, rounds);
}

function buildReport(
  windows: WindowFigures[],
  targets: Target[],
  peaks: Partial<Record<Target, number>>,
  notes: string[],
  seconds: number,
  rounds: number,
): SectionReport {
  const names: Record<Target, string> = {
    direct: 'direct',
    pipe: 'byte pipe',
    proxy: 'node proxy',
    express: 'Express proxy',
    gatewayFile: 'gateway, file store',
    gatewayRedis: 'gateway, Redis store',
  };
  const gws = targets.filter((t) => t.startsWith('gateway'));
  const added = (w: WindowFigures, t: Target) => w.byTarget[t]!.median - w.byTarget.direct!.median;
  const overProxy = (w: WindowFigures, t: Target) => w.byTarget[t]!.median - w.byTarget.proxy!.median;
  const rows = windows.map((w) => [
    String(w.turn),
    (w.bodyBytes / 1024).toFixed(0),
    ...targets.map((t) => withSpread(w.byTarget[t]!.median, w.byTarget[t]!.spread, 2)),
    added(w, 'pipe').toFixed(2),
    ...gws.map((t) => added(w, t).toFixed(2)),
    ...gws.map((t) => overProxy(w, t).toFixed(2)),
  ]);
  const first = windows[0]!;
  const last = windows[windows.length - 1]!;
  const targetsOut: TargetCheck[] = gws.map((t) => {
    const ratio = added(last, t) / added(first, t);
    return {
      name: `${names[t]}: added time at turn ${last.turn} vs turn ${first.turn} (over direct, same body)`,
      target: `<= ${FLAT}x`,
      measured: `${ratio.toFixed(2)}x (${added(first, t).toFixed(2)} -> ${added(last, t).toFixed(2)} ms)`,
      met: ratio <= FLAT,
      missedBy: `x${(ratio / FLAT).toFixed(1)} over`,
    };
  });
  return {
    name: `Long chat (${TURNS} turns, whole history in every request, Anthropic format)`,
    seconds,
    tables: [
      {
        title: `Time per request in ms around a turn (median of the 10 turns of a window; median of ${rounds} round(s), ±half the range)`,
        headers: [
          'turn',
          'body KB',
          ...targets.map((t) => names[t]),
          'pipe adds',
          ...gws.map((t) => `${t === 'gatewayFile' ? 'file' : 'Redis'} adds`),
          ...gws.map((t) => `${t === 'gatewayFile' ? 'file' : 'Redis'} over proxy`),
        ],
        rows,
      },
    ],
    targets: targetsOut,
    notes: [
      'adds = gateway (or pipe) - direct at the same turn (same body); over proxy = gateway - minimal node proxy (which also parses and re-serialises the body)',
      `the byte pipe (the node proxy without its parse) adds ${added(first, 'pipe').toFixed(2)} ms at turn ${first.turn} and ${added(last, 'pipe').toFixed(2)} ms at turn ${last.turn}: carrying ${(last.bodyBytes / 2 ** 20).toFixed(1)} MB one more hop, with no work on it, takes ${(added(last, 'pipe') - added(first, 'pipe')).toFixed(2)} ms of what the 2x target allows the gateway`,
      ...Object.entries(peaks).map(
        ([t, p]) => `${names[t as Target]} peak RSS: ${(p / 2 ** 20).toFixed(0)} MB`,
      ),
      ...notes,
    ],
    data: { turns: TURNS, windows, rounds, peaks },
  };
}
