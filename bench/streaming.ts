/**
 * Benchmark 2, streaming: a 200-chunk SSE answer (the fake provider writes one event every
 * `chunkDelayMs`), requested one at a time, directly, through the two minimal proxies (node:http
 * and Express) and through the gateway: time to the response headers, to the first body byte (the
 * first event) and to the last. Each request continues its chat with the answer it got.
 *
 * Bytes held back: the fake provider notes when it wrote each event (wall clock) and the client
 * when each chunk arrived, so at every arrival we know how many bytes the provider had already
 * written that the client did not have yet: bytes in flight, in socket buffers and in any relay.
 * The relay's own holding is at most its figure minus the direct path's. The same logs give each
 * chunk's delay from the provider's write to the client's read.
 */
import { clientHeaders, conversationTurn, PATHS, type Format } from './bodies.ts';
import { ADDED_VS_EXPRESS } from './overhead.ts';
import type { BenchContext } from './context.ts';
import { timedPost, type TimedResponse } from './http-client.ts';
import type { ChildHandle } from './processes.ts';
import { withSpread, type SectionReport, type TargetCheck } from './report.ts';
import { startGateway, startStack, tmpfsRoot, type GatewayHandle } from './stack.ts';
import { median, percentile, summarize, type Summary } from './stats.ts';
import { warmUp } from './warm-up.ts';

const PIECES = 200;
const CHUNK_DELAY_MS = 1;
const TARGETS = ['direct', 'proxy', 'express', 'gateway', 'gatewayTmpfs'] as const;
/** Streams per chat: each continues its chat with the streamed answer, then a new chat starts. */
const TURNS_PER_CHAT = 50;
type Target = (typeof TARGETS)[number];

interface StreamFigures {
  headersMs: Summary;
  firstByteMs: Summary;
  lastByteMs: Summary;
  /** Most bytes written by the provider and not yet received by the client, over every stream. */
  maxInFlightBytes: number;
  /** Median over streams of each stream's largest in-flight figure. */
  medianMaxInFlightBytes: number;
  /** Delay from the provider's write to the client's read, per chunk: median and p99 (ms). */
  chunkDelayMedianMs: number;
  chunkDelayP99Ms: number;
  bytes: number;
}

interface Samples {
  h: number[];
  f: number[];
  l: number[];
  maxInFlight: number[];
  delays: number[];
  bytes: number;
}

/** In-flight bytes and per-chunk delays of one stream, from the provider's and client's logs. */
function inFlight(
  writes: ReadonlyArray<[number, number]>,
  r: TimedResponse,
): { max: number; delays: number[] } {
  let max = 0;
  let received = 0;
  let w = 0;
  const delays: number[] = [];
  r.chunkSizes.forEach((size, j) => {
    const at = r.chunkTimes[j]!;
    received += size;
    while (w < writes.length && writes[w]![0] <= at) w++;
    const written = w > 0 ? writes[w - 1]![1] : 0;
    max = Math.max(max, written - received);
    // When the provider wrote the last byte of this chunk.
    const wrote = writes.find(([, total]) => total >= received);
    if (wrote) delays.push(at - wrote[0]);
  });
  return { max, delays };
}

export async function streamingBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const pieces = Array.from({ length: PIECES }, (_, i) => `tok${i} `);
  const stack = await startStack({ fake: { streamPieces: pieces, chunkDelayMs: CHUNK_DELAY_MS } });
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
  const targets = TARGETS.filter((t) => handles[t]);
  const rounds = ctx.quick ? 2 : 3;
  const perRound = ctx.quick ? 5 : 6;
  const results: Array<{ format: Format; byTarget: Partial<Record<Target, StreamFigures>> }> = [];
  try {
    // Every streamed answer here takes 200 ms (one event per ms): 50 connections get a warm-up's
    // requests through in seconds.
    for (const t of targets) await warmUp(handles[t]!.url, { connections: 50 });
    // Every stream continues its chat: the history sent back holds the streamed answer.
    const answer = pieces.join('');
    for (const format of ['anthropic', 'openai'] as const) {
      const bodies = Array.from({ length: TURNS_PER_CHAT }, (_, t) =>
        JSON.stringify(conversationTurn(format, true, t, answer)),
      );
      const sent: Partial<Record<Target, number>> = {};
      const stream = async (t: Target) => {
        const n = (sent[t] = (sent[t] ?? -1) + 1);
        const headers = {
          ...clientHeaders(format),
          'x-session-id': `stream-${process.pid}-${format}-${t}-${Math.floor(n / TURNS_PER_CHAT)}`,
        };
        const body = bodies[n % TURNS_PER_CHAT]!;
        const r = await timedPost(handles[t]!.url + PATHS[format], body, headers, { recordChunks: true });
        const writes = (await stack.fake.ask('lastStreamWrites')) as Array<[number, number]>;
        return { r, flight: inFlight(writes, r) };
      };
      for (const t of targets) for (let i = 0; i < 3; i++) await stream(t);
      const samples = {} as Record<Target, Samples>;
      for (const t of targets) samples[t] = { h: [], f: [], l: [], maxInFlight: [], delays: [], bytes: 0 };
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(k + round) % targets.length]!;
          const h: number[] = [];
          const f: number[] = [];
          const l: number[] = [];
          for (let i = 0; i < perRound; i++) {
            const { r, flight } = await stream(t);
            h.push(r.headersMs);
            f.push(r.firstByteMs);
            l.push(r.lastByteMs);
            samples[t].maxInFlight.push(flight.max);
            samples[t].delays.push(...flight.delays);
            samples[t].bytes = r.bytes;
          }
          samples[t].h.push(median(h));
          samples[t].f.push(median(f));
          samples[t].l.push(median(l));
        }
        ctx.progress(`streaming ${format} round ${round + 1}/${rounds}`);
      }
      results.push({
        format,
        byTarget: Object.fromEntries(
          targets.map((t) => {
            const s = samples[t];
            const figures: StreamFigures = {
              headersMs: summarize(s.h),
              firstByteMs: summarize(s.f),
              lastByteMs: summarize(s.l),
              maxInFlightBytes: Math.max(...s.maxInFlight),
              medianMaxInFlightBytes: median(s.maxInFlight),
              chunkDelayMedianMs: median(s.delays),
              chunkDelayP99Ms: percentile(s.delays, 99),
              bytes: s.bytes,
            };
            return [t, figures];
          }),
        ),
      });
    }
  } finally {
    await tmpfsGateway?.stop();
    await stack.stop();
  }
  return buildReport(results, (performance.now() - t0) / 1000, { rounds, perRound });
}

function buildReport(
  results: Array<{ format: Format; byTarget: Partial<Record<Target, StreamFigures>> }>,
  seconds: number,
  setup: { rounds: number; perRound: number },
): SectionReport {
  const names: Record<Target, string> = {
    direct: 'direct',
    proxy: 'node proxy',
    express: 'Express proxy',
    gateway: 'gateway',
    gatewayTmpfs: 'gw (tmpfs)',
  };
  const rows: Array<Array<string | number>> = [];
  const targets: TargetCheck[] = [];
  for (const r of results) {
    const d = r.byTarget.direct!;
    for (const t of TARGETS) {
      const f = r.byTarget[t];
      if (!f) continue;
      rows.push([
        `${r.format} ${names[t]}`,
        withSpread(f.headersMs.median, f.headersMs.spread, 2),
        withSpread(f.firstByteMs.median, f.firstByteMs.spread, 2),
        t === 'direct' ? '' : (f.firstByteMs.median - d.firstByteMs.median).toFixed(2),
        withSpread(f.lastByteMs.median, f.lastByteMs.spread, 1),
        t === 'direct' ? '' : (f.lastByteMs.median - d.lastByteMs.median).toFixed(2),
        `${f.chunkDelayMedianMs.toFixed(2)} / ${f.chunkDelayP99Ms.toFixed(2)}`,
        `${f.medianMaxInFlightBytes} / ${f.maxInFlightBytes}`,
      ]);
    }
    const g = r.byTarget.gateway!;
    const added = g.firstByteMs.median - d.firstByteMs.median;
    const floor = r.byTarget.express!.firstByteMs.median - d.firstByteMs.median;
    targets.push({
      name: `added time to first byte vs the Express floor's, ${r.format} 200-chunk stream`,
      target: `<= ${ADDED_VS_EXPRESS}x`,
      measured: `${(added / floor).toFixed(2)}x (${added.toFixed(2)} vs ${floor.toFixed(2)} ms)`,
      met: added <= ADDED_VS_EXPRESS * floor,
      missedBy: `+${(added - ADDED_VS_EXPRESS * floor).toFixed(2)} ms`,
    });
  }
  const bytes = results[0]?.byTarget.direct?.bytes ?? 0;
  return {
    name: `Streaming (${PIECES}-chunk SSE answer, one event every ${CHUNK_DELAY_MS} ms)`,
    seconds,
    tables: [
      {
        title: `Time in ms, median of ${setup.rounds} rounds (each the median of ${setup.perRound} streams), ±half the range; bytes in flight = written by the provider, not yet read by the client`,
        headers: [
          'path',
          'headers',
          'first byte',
          'adds',
          'last byte',
          'adds',
          'chunk delay ms med/p99',
          'bytes in flight B med/max',
        ],
        rows,
      },
    ],
    targets,
    notes: [
      'first byte = first byte of the body (the first SSE event); "adds" = minus the direct path',
      `a stream is ~${bytes} bytes; the gateway writes every upstream chunk to the client as it arrives (server/deliver.ts, with backpressure), so it holds at most what it is processing at that moment: its in-flight figure minus the direct one`,
      'every stream continues its chat (the history holds the streamed answer), a new chat every 50 streams',
      "the gateway appends the incoming messages to the chat log before it forwards the request, which is on the first byte's path (with store.fsync: batch the fdatasync follows the write instead of preceding the forward); gw (tmpfs) has its data dir on tmpfs",
    ],
    data: { pieces: PIECES, chunkDelayMs: CHUNK_DELAY_MS, setup, results },
  };
}
