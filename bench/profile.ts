/**
 * `npm run bench -- --only=profile` (not part of the default run): where the gateway's CPU time goes
 * under load. The gateway runs with --cpu-prof (data dir on tmpfs when there is one, so disk waits
 * do not hide the CPU), takes 50 connections of small Anthropic requests, and every sample of the
 * profile is put in one area by the frames on its stack (the chat log first: a sample anywhere
 * under chat-log/ counts there).
 */
import autocannon from 'autocannon';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientHeaders, PATHS, smallChat } from './bodies.ts';
import type { BenchContext } from './context.ts';
import type { SectionReport } from './report.ts';
import { startGateway, startStack, tmpfsRoot } from './stack.ts';
import { warmUp } from './warm-up.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Areas, first match wins, tested against the urls of every frame of a sample's stack. */
const AREAS: ReadonlyArray<[string, RegExp]> = [
  ['chat log (append, fsync, validate, digests, read models)', /\/chat-log\//],
  ['chat binding (server/chat-binder)', /\/server\/chat-binder/],
  ['pipeline and repair loop (middleware/)', /\/middleware\//],
  ['logging (pino)', /node_modules\/(pino|sonic-boom)/],
  ['metrics (prom-client)', /node_modules\/prom-client/],
  ['upstream client (undici)', /node_modules\/undici/],
  ['response delivery (server/deliver, sse)', /\/server\/(deliver|sse)/],
  ['auth and rate limit', /\/server\/(auth|rate-limit)/],
  [
    'express (router, raw body)',
    /node_modules\/(express|router|body-parser|raw-body|finalhandler|on-finished|type-is)/,
  ],
  ['providers (normalize, request view)', /\/providers\//],
  ['server, other', /\/server\//],
  ['node http/net/streams', /node:(_http|net|internal\/stream)/],
  ['module loading (start-up)', /tsx|node:internal\/modules/],
];

export function categorize(profile: CpuProfile): Array<{ area: string; ms: number }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, string>();
  const areaOf = (id: number): string => {
    const known = memo.get(id);
    if (known) return known;
    const leaf = byId.get(id)!.callFrame.functionName;
    let area = 'other';
    if (leaf === '(idle)') area = 'idle';
    else if (leaf === '(garbage collector)') area = 'garbage collection';
    else if (leaf === '(program)') area = '(program: native, unattributed)';
    else {
      const urls: string[] = [];
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur))
        urls.push(byId.get(cur)!.callFrame.url);
      area = AREAS.find(([, re]) => urls.some((u) => re.test(u)))?.[0] ?? 'other';
    }
    memo.set(id, area);
    return area;
  };
  const ms = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const a = areaOf(id);
    ms.set(a, (ms.get(a) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...ms].map(([area, v]) => ({ area, ms: v })).sort((a, b) => b.ms - a.ms);
}

export async function profileBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const profDir = mkdtempSync(join(tmpdir(), 'oda-bench-prof-'));
  const stack = await startStack({ proxy: false, gateway: false });
  const seconds = ctx.quick ? 3 : 8;
  let requests = 0;
  try {
    const gateway = await startGateway(stack.fake.url, {
      tempRoot: tmpfsRoot(),
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
    });
    try {
      await warmUp(gateway.url);
      const base = clientHeaders('anthropic');
      let conn = 0;
      const result = await autocannon({
        url: gateway.url + PATHS.anthropic,
        method: 'POST',
        connections: 50,
        duration: seconds,
        headers: base,
        body: JSON.stringify(smallChat('anthropic', false)),
        setupClient(client) {
          const c = conn++;
          let sent = 0;
          client.setHeaders({ ...base, 'x-session-id': `prof-${c}-0` });
          client.on('response', () => {
            if (++sent % 50 === 0) client.setHeaders({ ...base, 'x-session-id': `prof-${c}-${sent}` });
          });
        },
      });
      requests = result['2xx'];
    } finally {
      await gateway.stop(); // the profile is written when the process exits
    }
    // The main thread's profile is the largest (the loader thread's is small).
    const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
    const main = files
      .map((f) => ({ f, text: readFileSync(join(profDir, f), 'utf8') }))
      .sort((a, b) => b.text.length - a.text.length)[0];
    if (!main) throw new Error('the gateway wrote no CPU profile');
    const areas = categorize(JSON.parse(main.text) as CpuProfile);
    const busy = areas
      .filter((a) => a.area !== 'idle' && !a.area.startsWith('module loading'))
      .reduce((n, a) => n + a.ms, 0);
    return {
      name: 'CPU profile of the gateway (50 connections, small Anthropic requests)',
      seconds: (performance.now() - t0) / 1000,
      tables: [
        {
          title: `Main-thread CPU time by area over ${seconds} s of load and the warm-up (${requests} requests measured)`,
          headers: ['area', 'ms', '% of busy', 'ms per request'],
          rows: areas.map((a) => [
            a.area,
            Math.round(a.ms),
            a.area === 'idle' || a.area.startsWith('module loading')
              ? ''
              : `${((100 * a.ms) / busy).toFixed(1)}%`,
            a.area === 'idle' || a.area.startsWith('module loading') ? '' : (a.ms / requests).toFixed(3),
          ]),
        },
      ],
      targets: [],
      notes: [
        'a sample counts in the first area any frame of its stack belongs to, in the order of the table',
        'the profiler slows the process: read the shares; ms per request divides by the measured requests only (the warm-up adds about 5% more)',
      ],
      data: { areas, requests, seconds },
    };
  } finally {
    await stack.stop();
    rmSync(profDir, { recursive: true, force: true });
  }
}
