/**
 * Side by side (`npm run bench -- side-by-side`, on request): the gateway built from this tree
 * against the gateway built from another revision, `BENCH_BASE` (default `HEAD`, so an uncommitted
 * change is measured against the last commit), both compiled and started as `npm start` starts
 * them, in front of one fake provider, taking turns request by request. Effects of a few tenths of a
 * millisecond are lost between two benchmark runs (a shared machine moves a 10-turn window by 2
 * ms), not between two gateways that take turns: each request goes to the direct path and both
 * builds in rotating order, and the builds swap their start order every round (two slots of one
 * build were seen to differ by about 0.15 ms).
 *
 * Two loads: the long chat (500 turns, the whole history in every request: added time over direct
 * over turns 6-15 and 401-500, and each gateway's CPU per request over turns 401-500) and small
 * requests (the overhead benchmark's conversations, one at a time: added time and CPU per request).
 * `BENCH_LOADS=long-chat` or `small` picks one; `BENCH_TREE_NODE_ARGS` gives this tree's gateway
 * Node.js flags the base runs without (a V8 flag measured against the same code). The base is
 * checked out as a temporary git worktree (its build uses this tree's node_modules, so revisions
 * with the same lock compare) and removed at the end.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchContext } from './context.ts';
import { clientHeaders, LONG_CHAT_ANSWER, longChat, PATHS, SMALL_CHAT_ANSWER } from './bodies.ts';
import { conversationBodies, TURNS_PER_CHAT } from './conversation-load.ts';
import { timedPost } from './http-client.ts';
import { startChild, type ChildHandle } from './processes.ts';
import type { SectionReport, Table } from './report.ts';
import { startGateway, type GatewayHandle } from './stack.ts';
import { median } from './stats.ts';
import { warmUp } from './warm-up.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LOADS = ['long-chat', 'small'] as const;
type Load = (typeof LOADS)[number];

/** What one round measured of one build. */
interface BuildRound {
  /** Added over direct, ms: the early window (turns 6-15, or the first tenth of the requests). */
  early: number;
  /** Added over direct, ms: the late window (turns 401-500, or every request after the first tenth). */
  late: number;
  /** The gateway process's CPU per request over the late window, ms (all threads). */
  cpu: number;
}

interface Base {
  rev: string;
  file: string;
  remove(): void;
}

function git(args: string[], cwd = ROOT): string {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout.trim();
}

/** Checks `rev` out into a temporary worktree and compiles its benchmark gateway there. */
function buildBase(rev: string): Base {
  const sha = git(['rev-parse', '--short', `${rev}^{commit}`]);
  const dir = mkdtempSync(join(tmpdir(), 'oda-side-by-side-'));
  rmSync(dir, { recursive: true });
  git(['worktree', 'add', '--detach', dir, sha]);
  const remove = () => {
    spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const r = spawnSync(process.execPath, ['scripts/build.mjs', 'bench/gateway-process.ts'], {
      cwd: dir,
      encoding: 'utf8',
    });
    const built = /^built (\S+)$/m.exec(r.stderr ?? '')?.[1];
    if (r.status !== 0 || built === undefined) {
      throw new Error(
        `could not compile ${sha}'s bench/gateway-process.ts (revisions before the compiled benchmark gateway cannot be compared): ${(r.stderr || r.stdout).trim()}`,
      );
    }
    return { rev: sha, file: join(dir, built), remove };
  } catch (e) {
    remove();
    throw e;
  }
}

async function cpuMs(g: ChildHandle): Promise<number> {
  const u = await g.usage();
  return (u.cpuUser + u.cpuSystem) / 1000;
}

/**
 * One round of a load: every request to direct and to both gateways, in an order that rotates per
 * request; `gws[0]` is whichever build started first this round.
 */
async function round(
  load: Load,
  fake: ChildHandle,
  gws: GatewayHandle[],
  id: string,
  quick: boolean,
): Promise<BuildRound[]> {
  const headers = clientHeaders('anthropic');
  const early = gws.map(() => [] as number[]);
  const late = gws.map(() => [] as number[]);
  const cpuFrom: number[] = [];
  const chat = longChat(500);
  const small = conversationBodies('anthropic', false);
  const total = load === 'long-chat' ? 500 : quick ? 600 : 1500;
  const lateFrom = load === 'long-chat' ? 401 : Math.floor(total / 10) + 1;
  for (let n = 1; n <= total; n++) {
    if (n === lateFrom) for (const g of gws) cpuFrom.push(await cpuMs(g));
    const body = load === 'long-chat' ? JSON.stringify(chat.body(n)) : small[(n - 1) % TURNS_PER_CHAT]!;
    const session = load === 'long-chat' ? id : `${id}-${Math.floor((n - 1) / TURNS_PER_CHAT)}`;
    const order = [-1, ...gws.map((_, i) => i)];
    const times = new Map<number, number>();
    for (let k = 0; k < order.length; k++) {
      const i = order[(k + n) % order.length]!;
      const url = i < 0 ? fake.url : gws[i]!.url;
      const r = await timedPost(
        url + PATHS.anthropic,
        body,
        i < 0 ? headers : { ...headers, 'x-session-id': session },
      );
      times.set(i, r.lastByteMs);
    }
    gws.forEach((_, i) => {
      const added = times.get(i)! - times.get(-1)!;
      if (load === 'long-chat' ? n >= 6 && n <= 15 : n < lateFrom) early[i]!.push(added);
      if (n >= lateFrom) late[i]!.push(added);
    });
  }
  const out: BuildRound[] = [];
  for (let i = 0; i < gws.length; i++) {
    out.push({
      early: median(early[i]!),
      late: median(late[i]!),
      cpu: ((await cpuMs(gws[i]!)) - cpuFrom[i]!) / late[i]!.length,
    });
  }
  return out;
}

export async function sideBySideBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const loads = LOADS.filter(
    (l) => !process.env.BENCH_LOADS || process.env.BENCH_LOADS.split(',').includes(l),
  );
  const rounds = ctx.quick ? 2 : 6;
  // Node.js flags for this tree's gateway only (a V8 flag measured against the base without it).
  const treeNodeArgs = (process.env.BENCH_TREE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const base = buildBase(process.env.BENCH_BASE || 'HEAD');
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
  const thisTree = `${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ' + uncommitted changes' : ''}${
    treeNodeArgs.length ? `, node ${treeNodeArgs.join(' ')}` : ''
  }`;
  const tables: Table[] = [];
  const notes: string[] = [];
  const data: Record<string, unknown> = { base: base.rev, tree: thisTree, rounds };
  try {
    for (const load of loads) {
      const fake = await startChild('fake provider', './fake-provider-process.ts', {
        answer: load === 'long-chat' ? LONG_CHAT_ANSWER : SMALL_CHAT_ANSWER,
      });
      const figures: Array<{ order: string; base: BuildRound; tree: BuildRound }> = [];
      try {
        for (let r = 0; r < rounds; r++) {
          // Each round starts its gateways afresh, the base first in even rounds.
          const baseFirst = r % 2 === 0;
          const gws: GatewayHandle[] = [];
          try {
            for (const which of baseFirst ? ['base', 'tree'] : ['tree', 'base']) {
              gws.push(
                await startGateway(fake.url, {
                  name: `gateway (${which})`,
                  ...(which === 'base' ? { compiled: base.file } : {}),
                  ...(which !== 'base' && treeNodeArgs.length ? { nodeArgs: treeNodeArgs } : {}),
                }),
              );
            }
            for (const g of gws) await warmUp(g.url);
            const measured = await round(load, fake, gws, `sbs-${process.pid}-${load}-${r}`, ctx.quick);
            const [first, second] = measured as [BuildRound, BuildRound];
            figures.push({
              order: baseFirst ? 'base, tree' : 'tree, base',
              base: baseFirst ? first : second,
              tree: baseFirst ? second : first,
            });
          } finally {
            for (const g of gws) await g.stop();
          }
          ctx.progress(`side by side ${load}: round ${r + 1}/${rounds} done`);
        }
      } finally {
        await fake.stop();
      }
      const windows = load === 'long-chat' ? ['turns 6-15', 'turns 401-500'] : ['first tenth', 'the rest'];
      const ms = (x: number) => x.toFixed(2);
      tables.push({
        title: `${load === 'long-chat' ? 'Long chat (500 turns, the whole history in every request)' : 'Small requests (the overhead conversations, one at a time)'}: ms added over direct (median of each window) and gateway CPU ms per request over ${windows[1]}, base ${base.rev} against this tree (${thisTree})`,
        headers: [
          'round',
          'started first',
          `base ${windows[0]}`,
          `tree ${windows[0]}`,
          `base ${windows[1]}`,
          `tree ${windows[1]}`,
          'base CPU',
          'tree CPU',
        ],
        rows: figures.map((f, i) => [
          String(i + 1),
          f.order.split(',')[0]!,
          ms(f.base.early),
          ms(f.tree.early),
          ms(f.base.late),
          ms(f.tree.late),
          ms(f.base.cpu),
          ms(f.tree.cpu),
        ]),
      });
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const lower = figures.filter((f) => f.tree.late < f.base.late).length;
      const lateBase = mean(figures.map((f) => f.base.late));
      const lateTree = mean(figures.map((f) => f.tree.late));
      notes.push(
        `${load}: added over ${windows[1]}, mean of the rounds' medians: base ${ms(lateBase)} ms, this tree ${ms(lateTree)} ms (${lateTree <= lateBase ? '' : '+'}${ms(lateTree - lateBase)} ms), lower in ${lower} of ${figures.length} rounds; CPU per request base ${ms(mean(figures.map((f) => f.base.cpu)))} ms, this tree ${ms(mean(figures.map((f) => f.tree.cpu)))} ms`,
      );
      data[load] = figures;
    }
  } finally {
    base.remove();
  }
  notes.push(
    'each request goes to direct and both builds in an order that rotates per request; the builds swap their start order every round',
  );
  return {
    name: `Side by side: this tree against ${base.rev}`,
    seconds: (performance.now() - t0) / 1000,
    tables,
    targets: [],
    notes,
    data,
  };
}
