/**
 * Instructions per request (`npm run bench -- instructions`, on request): the CPU work each request
 * costs the node proxy, the Express floor and the gateway, counted by valgrind's callgrind rather
 * than timed. A count depends far less on what else the machine is doing than a timing: a whole
 * run's total repeats within about half a percent, and the steady per-request figure (below; a
 * difference of two totals, so their spread is magnified) within about 2%, where timed rounds on a
 * shared 2-core machine spread by 10-50%. What still moves it: timers and V8's heuristics run on wall-clock
 * time, which callgrind slows down by a different factor on a busy machine.
 *
 * Each target runs under callgrind (`node --single-threaded`, so V8 compiles on the main thread and
 * the count does not depend on how background threads were scheduled) twice: once serving `short`
 * requests and once `long`, each run from start-up to exit. Start-up, shutdown and the first
 * requests' compilation are in both runs and cancel out: (long total - short total) / (long -
 * short) is what one more request costs once warm. The requests are the overhead benchmark's (one
 * connection, every request continuing its chat, a new chat every 50 turns), sent one at a time.
 * The fake provider runs outside callgrind. Under callgrind a process runs some 50-100x slower, so
 * a case takes minutes; it is a measure for comparing builds, never a test.
 *
 * Each figure is given twice: every instruction, and the steady part: without V8's compilers and
 * parsers (COMPILING), which are still at work after hundreds of requests and would be done in a
 * long-lived process, and without full garbage collections (MAJOR_GC), which come in lumps: one
 * more or less in a run moved the per-request figure by 15%. Young-generation collections, which
 * follow what each request allocates, stay in.
 * `BENCH_TARGETS=gateway` counts only the named targets (an A/B of two builds needs no floors);
 * `BENCH_GATEWAY_CONFIG='{"logLevel":"warn"}'` merges config entries over the gateway's defaults
 * (what a feature costs is the count with it off).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchContext } from './context.ts';
import { clientHeaders, PATHS, type Format } from './bodies.ts';
import { conversationBodies, TURNS_PER_CHAT } from './conversation-load.ts';
import { timedPost } from './http-client.ts';
import { startChild, type ChildHandle, type StartOptions } from './processes.ts';
import { startGateway } from './stack.ts';
import type { SectionReport, TargetCheck } from './report.ts';

type Target = 'node proxy' | 'Express floor' | 'gateway';
/** `BENCH_TARGETS=gateway` counts the gateway alone (an A/B of two builds needs no floors). */
const TARGETS: Target[] = (['node proxy', 'Express floor', 'gateway'] as Target[]).filter(
  (t) => !process.env.BENCH_TARGETS || process.env.BENCH_TARGETS.split(',').includes(t),
);

interface PerTarget {
  short: Count;
  long: Count;
  perRequest: number;
  /** Without compiling and full collections. */
  perRequestSteady: number;
}

interface Case {
  format: Format;
  stream: boolean;
}

/** Whether valgrind is on this machine (Debian: `apt-get install -y valgrind`). */
function hasValgrind(): boolean {
  return spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).status === 0;
}

/**
 * V8's own compilers and parsers, by symbol: the JIT (TurboFan, Maglev, Sparkplug), the bytecode
 * generator, the parser and scanner, and the zone memory they work in. In a run of a few hundred
 * requests they are still busy (a third to a half of the instructions between the short and the
 * long run), compiling code a long-lived process compiles once; the count without them is closer
 * to what a request costs once everything is optimised.
 */
const COMPILING =
  /v8::internal::(compiler|maglev|baseline)::|v8::internal::(Pre)?Parser|ParserBase|Scanner::|AstValueFactory|BytecodeGenerator|BytecodeArrayBuilder|v8::internal::Compiler::|v8::internal::Zone::/;

interface Count {
  /** Every instruction the process ran. */
  total: number;
  /** Of those, the ones in V8's compilers and parsers (COMPILING). */
  compiling: number;
  /** Of those, the ones in full (mark-compact) garbage collections (MAJOR_GC). */
  majorGc: number;
}

/** V8's full (mark-compact) collector, by symbol: marking, compacting, sweeping. */
const MAJOR_GC =
  /MarkCompactCollector|MarkingVisitor|MarkingState|MarkingWorklist|IncrementalMarking|ConcurrentMarking|Sweeper::|LiveObjectRange|RecordMigratedSlotVisitor|v8::internal::Evacuator/;

/** Reads a callgrind output: its `totals:` line, and per function (callgrind_annotate) what compiling and full collections took. */
function countOf(file: string): Count {
  const m = /^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'));
  if (!m) throw new Error(`callgrind wrote no totals in ${file}`);
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 2 ** 20,
  });
  if (annotated.status !== 0) throw new Error(`callgrind_annotate failed: ${annotated.stderr}`);
  let compiling = 0;
  let majorGc = 0;
  for (const line of annotated.stdout.split('\n')) {
    const f = /^\s*([\d,]+) \(/.exec(line);
    if (!f || line.includes('PROGRAM TOTALS')) continue;
    const n = Number(f[1]!.replaceAll(',', ''));
    if (COMPILING.test(line)) compiling += n;
    else if (MAJOR_GC.test(line)) majorGc += n;
  }
  return { total: Number(m[1]), compiling, majorGc };
}

/**
 * Config entries merged over the gateway's defaults, from `BENCH_GATEWAY_CONFIG` (JSON): what a
 * feature costs per request is the count with it turned off, e.g. `{"logLevel":"warn"}`.
 */
function extraGatewayConfig(): Record<string, unknown> {
  const raw = process.env.BENCH_GATEWAY_CONFIG;
  if (!raw) return {};
  const parsed: unknown = JSON.parse(raw);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error('BENCH_GATEWAY_CONFIG must be a JSON object of config entries');
  }
  return parsed as Record<string, unknown>;
}

async function startTarget(target: Target, fakeUrl: string, start: StartOptions): Promise<ChildHandle> {
  if (target === 'gateway') {
    return startGateway(fakeUrl, { ...start, name: 'gateway', config: extraGatewayConfig() });
  }
  const script = target === 'node proxy' ? './minimal-proxy.ts' : './minimal-express-proxy.ts';
  return startChild(target, script, { target: fakeUrl }, start);
}

/** Runs `target` under callgrind for `requests` requests of `c` and returns its instruction count. */
async function countRun(target: Target, fakeUrl: string, c: Case, requests: number, dir: string) {
  const out = join(dir, `${target.replace(/\W+/g, '-')}-${c.format}-${c.stream}-${requests}.out`);
  const child = await startTarget(target, fakeUrl, {
    wrap: ['valgrind', '-q', '--tool=callgrind', `--callgrind-out-file=${out}`, '--dump-instr=no'],
    nodeArgs: ['--single-threaded'],
    stopGraceMs: 120_000,
  });
  try {
    const bodies = conversationBodies(c.format, c.stream);
    const headers = clientHeaders(c.format);
    const tag = `instr-${process.pid}-${target.replace(/\W+/g, '')}-${requests}`;
    for (let i = 0; i < requests; i++) {
      const chat = `${tag}-${Math.floor(i / TURNS_PER_CHAT)}`;
      await timedPost(child.url + PATHS[c.format], bodies[i % TURNS_PER_CHAT]!, {
        ...headers,
        'x-session-id': chat,
      });
    }
  } finally {
    await child.stop();
  }
  return countOf(out);
}

const steady = (c: Count) => c.total - c.compiling - c.majorGc;
const fmtK = (x: number) => Math.round(x / 1000).toLocaleString('en-US');

export async function instructionsBench(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const name = 'instructions';
  if (!hasValgrind()) {
    return {
      name,
      seconds: 0,
      tables: [],
      targets: [],
      notes: [],
      data: {},
      skipped: 'valgrind is not installed (Debian: apt-get install -y valgrind)',
    };
  }
  const cases: Case[] = ctx.quick
    ? [{ format: 'anthropic', stream: false }]
    : [
        { format: 'openai', stream: false },
        { format: 'openai', stream: true },
        { format: 'anthropic', stream: false },
        { format: 'anthropic', stream: true },
      ];
  const short = ctx.quick ? 200 : 400;
  const long = ctx.quick ? 600 : 1200;
  const dir = mkdtempSync(join(tmpdir(), 'oda-instr-'));
  const fake = await startChild('fake provider', './fake-provider-process.ts', {});
  const rows: (string | number)[][] = [];
  const data: Record<string, Record<Target, PerTarget>> = {};
  const targets: TargetCheck[] = [];
  try {
    for (const c of cases) {
      const label = `${c.format === 'openai' ? 'OpenAI' : 'Anthropic'} ${c.stream ? 'stream' : 'JSON'}`;
      const perTarget = {} as Record<Target, PerTarget>;
      for (const target of TARGETS) {
        ctx.progress(`${label}: ${target} under callgrind, ${short} then ${long} requests`);
        const a = await countRun(target, fake.url, c, short, dir);
        const b = await countRun(target, fake.url, c, long, dir);
        const n = long - short;
        perTarget[target] = {
          short: a,
          long: b,
          perRequest: (b.total - a.total) / n,
          perRequestSteady: (steady(b) - steady(a)) / n,
        };
      }
      data[label] = perTarget;
      const cell = (t: Target) => {
        const p = perTarget[t];
        return p ? `${fmtK(p.perRequest)} / ${fmtK(p.perRequestSteady)}` : '-';
      };
      const g = perTarget.gateway;
      const e = perTarget['Express floor'];
      const ratios = g && e ? [g.perRequest / e.perRequest, g.perRequestSteady / e.perRequestSteady] : [];
      rows.push([
        label,
        cell('node proxy'),
        cell('Express floor'),
        cell('gateway'),
        ratios.length ? ratios.map((r) => `${r.toFixed(2)}x`).join(' / ') : '-',
      ]);
      const ratio = ratios[1];
      if (ratio !== undefined)
        targets.push({
          name: `${label}: steady instructions per request, gateway / Express floor`,
          target: "<= 1.5x (the CPU side of SPEC 13's 1-connection target)",
          measured: `${ratio.toFixed(2)}x`,
          met: ratio <= 1.5,
          ...(ratio > 1.5 ? { missedBy: `x${(ratio / 1.5).toFixed(2)}` } : {}),
        });
    }
  } finally {
    await fake.stop();
    if (!process.env.KEEP_BENCH_DIR) rmSync(dir, { recursive: true, force: true });
  }
  return {
    name,
    seconds: (Date.now() - started) / 1000,
    tables: [
      {
        title: `Instructions per request, thousands: all / steady (without V8 compiling and full GCs; callgrind; (run of ${long} - run of ${short}) / ${long - short})`,
        headers: ['case', 'node proxy', 'Express floor', 'gateway', 'gateway / Express floor'],
        rows,
      },
    ],
    targets,
    notes: [
      'Counted, not timed: repeatable on a busy machine. Work done by the fake provider and the client is not in the counts.',
    ],
    data,
  };
}
