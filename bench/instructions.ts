/**
 * Instructions per request (`npm run bench -- instructions`, on request): the CPU work each request
 * costs the node proxy, the Express floor and the gateway, counted by valgrind's callgrind rather
 * than timed. A count is repeatable whatever else the machine is doing (the same run twice lands
 * within about half a percent), where timed rounds on a shared 2-core machine spread by 10-50%: the
 * measure for telling whether a hot-path change helps when the change is smaller than the noise.
 *
 * Each target runs under callgrind (`node --single-threaded`, so V8 compiles on the main thread and
 * the count does not depend on how background threads were scheduled) twice: once serving `short`
 * requests and once `long`, each run from start-up to exit. Start-up, shutdown and the first
 * requests' compilation are in both runs and cancel out: (long total - short total) / (long -
 * short) is what one more request costs once warm. The requests are the overhead benchmark's (one
 * connection, every request continuing its chat, a new chat every 50 turns), sent one at a time.
 * The fake provider runs outside callgrind. Under callgrind a process runs some 50-100x slower, so
 * a case takes minutes; it is a measure for comparing builds, never a test.
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
const TARGETS: Target[] = ['node proxy', 'Express floor', 'gateway'];

interface Case {
  format: Format;
  stream: boolean;
}

/** Whether valgrind is on this machine (Debian: `apt-get install -y valgrind`). */
function hasValgrind(): boolean {
  return spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** The `totals:` line callgrind writes when the process exits: every instruction it ran. */
function totalInstructions(file: string): number {
  const m = /^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'));
  if (!m) throw new Error(`callgrind wrote no totals in ${file}`);
  return Number(m[1]);
}

async function startTarget(target: Target, fakeUrl: string, start: StartOptions): Promise<ChildHandle> {
  if (target === 'gateway') return startGateway(fakeUrl, { ...start, name: 'gateway' });
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
  return totalInstructions(out);
}

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
  const short = ctx.quick ? 100 : 200;
  const long = ctx.quick ? 300 : 600;
  const dir = mkdtempSync(join(tmpdir(), 'oda-instr-'));
  const fake = await startChild('fake provider', './fake-provider-process.ts', {});
  const rows: (string | number)[][] = [];
  const data: Record<string, Record<Target, { short: number; long: number; perRequest: number }>> = {};
  const targets: TargetCheck[] = [];
  try {
    for (const c of cases) {
      const label = `${c.format === 'openai' ? 'OpenAI' : 'Anthropic'} ${c.stream ? 'stream' : 'JSON'}`;
      const perTarget = {} as Record<Target, { short: number; long: number; perRequest: number }>;
      for (const target of TARGETS) {
        ctx.progress(`${label}: ${target} under callgrind, ${short} then ${long} requests`);
        const a = await countRun(target, fake.url, c, short, dir);
        const b = await countRun(target, fake.url, c, long, dir);
        perTarget[target] = { short: a, long: b, perRequest: (b - a) / (long - short) };
      }
      data[label] = perTarget;
      const k = (t: Target) => perTarget[t].perRequest / 1000;
      const ratio = perTarget.gateway.perRequest / perTarget['Express floor'].perRequest;
      rows.push([label, k('node proxy'), k('Express floor'), k('gateway'), `${ratio.toFixed(2)}x`]);
      targets.push({
        name: `${label}: instructions per request, gateway / Express floor`,
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
        title: `Instructions per request once warm, thousands (callgrind; (run of ${long} - run of ${short}) / ${long - short})`,
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
