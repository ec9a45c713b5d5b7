/**
 * `npm run bench -- --only=profile` (not part of the default run): where the gateway's CPU time goes
 * under load. The gateway (data dir on tmpfs when there is one, so disk waits do not hide the CPU)
 * is profiled over the load only (the inspector's profiler, started and stopped over IPC) while it
 * takes 50 connections of small Anthropic requests that continue their chats (the overhead
 * benchmark's load), once with a chat per connection and once with all connections in one chat. Every sample of a profile is put in one area by the frames on its stack
 * (the chat log first: a sample anywhere under chat-log/ counts there), and the functions with the
 * most self time are listed. A second run of each load takes V8's sampling heap profile instead:
 * the bytes allocated per request (collected or not, so garbage counts), by the same areas and by
 * the functions that allocate the most.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SMALL_CHAT_ANSWER } from './bodies.ts';
import { conversationLoad, type Spread } from './conversation-load.ts';
import type { BenchContext } from './context.ts';
import type { SectionReport, Table } from './report.ts';
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

/** The functions with the most self time, named by file and line. */
export function topFunctions(profile: CpuProfile, n: number): Array<{ fn: string; ms: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const ms = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const key = frameName(byId.get(id)!.callFrame as ProfileNode['callFrame'] & { lineNumber?: number });
    ms.set(key, (ms.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...ms]
    .map(([fn, v]) => ({ fn, ms: v }))
    .filter((f) => !/^\((idle|program|garbage collector|root)\)/.test(f.fn))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n);
}

/** V8's sampling heap profile: a tree of call frames, each with the bytes sampled as allocated in it. */
interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber?: number };
  selfSize: number;
  children?: AllocationNode[];
}

/** A frame named as the tables name it: function, then the file under the repository or node_modules. */
function frameName(f: { functionName: string; url: string; lineNumber?: number }): string {
  const where = f.url
    .replace(/^.*\/node_modules\//, '')
    .replace(/^file:\/\/.*?\/(?=(server|chat-log|middleware|providers|lib|config)\/)/, '');
  return `${f.functionName || '(anonymous)'} ${where}${f.url ? `:${(f.lineNumber ?? 0) + 1}` : ''}`;
}

/** Bytes allocated by area (the CPU tables' areas, same first-match rule) and by allocating function. */
export function allocations(head: AllocationNode): {
  total: number;
  areas: Array<{ area: string; bytes: number }>;
  top: Array<{ fn: string; bytes: number }>;
} {
  const byArea = new Map<string, number>();
  const byFn = new Map<string, number>();
  let total = 0;
  const walk = (node: AllocationNode, urls: string[]) => {
    const here = [...urls, node.callFrame.url];
    if (node.selfSize > 0) {
      total += node.selfSize;
      const area = AREAS.find(([, re]) => here.some((u) => re.test(u)))?.[0] ?? 'other';
      byArea.set(area, (byArea.get(area) ?? 0) + node.selfSize);
      const fn = frameName(node.callFrame);
      byFn.set(fn, (byFn.get(fn) ?? 0) + node.selfSize);
    }
    for (const c of node.children ?? []) walk(c, here);
  };
  walk(head, []);
  const sorted = <K extends string>(m: Map<string, number>, key: K) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([k, bytes]) => ({ [key]: k, bytes }) as Record<K, string> & { bytes: number });
  return { total, areas: sorted(byArea, 'area'), top: sorted(byFn, 'fn').slice(0, 15) };
}

/**
 * One profiled run: a gateway under 50 connections of small Anthropic requests, profiled over the
 * load only, for its CPU time or for what it allocates.
 */
async function profileRun(
  fakeUrl: string,
  spread: Spread,
  seconds: number,
  kind: 'profile' | 'allocations',
): Promise<{ text: string; requests: number }> {
  const gateway = await startGateway(fakeUrl, { tempRoot: tmpfsRoot(), source: true });
  try {
    await warmUp(gateway.url);
    await conversationLoad(gateway, {
      format: 'anthropic',
      stream: false,
      connections: 50,
      spread,
      seconds: 1,
    });
    await gateway.ask(`${kind}Start`);
    const r = await conversationLoad(gateway, {
      format: 'anthropic',
      stream: false,
      connections: 50,
      spread,
      seconds,
    });
    const text = (await gateway.ask(`${kind}Stop`)) as string;
    return { text, requests: r.requests };
  } finally {
    await gateway.stop();
  }
}

export async function profileBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  const stack = await startStack({ proxy: false, gateway: false, fake: { answer: SMALL_CHAT_ANSWER } });
  const seconds = ctx.quick ? 3 : 8;
  const tables: Table[] = [];
  const data: Record<string, unknown> = {};
  try {
    for (const spread of ['perConnection', 'oneChat'] as const) {
      const { text, requests } = await profileRun(stack.fake.url, spread, seconds, 'profile');
      const profile = JSON.parse(text) as CpuProfile;
      // Kept for a closer look (Chrome DevTools) until the next profile run.
      mkdirSync('.bench-out', { recursive: true });
      writeFileSync(join('.bench-out', `gateway-${spread}.cpuprofile`), text);
      const areas = categorize(profile);
      const top = topFunctions(profile, 25);
      const busy = areas
        .filter((a) => a.area !== 'idle' && !a.area.startsWith('module loading'))
        .reduce((n, a) => n + a.ms, 0);
      const what = spread === 'oneChat' ? 'all connections in one chat' : 'a chat per connection';
      tables.push(
        {
          title: `${what}: main-thread CPU time by area over ${seconds} s of load (${requests} requests)`,
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
        {
          title: `${what}: the ${top.length} functions with the most self time`,
          headers: ['function', 'ms', '% of busy'],
          rows: top.map((f) => [f.fn, Math.round(f.ms), `${((100 * f.ms) / busy).toFixed(1)}%`]),
        },
      );
      const heap = await profileRun(stack.fake.url, spread, seconds, 'allocations');
      writeFileSync(join('.bench-out', `gateway-${spread}.heapprofile`), heap.text);
      const allocated = allocations((JSON.parse(heap.text) as { head: AllocationNode }).head);
      const kb = (bytes: number) => (bytes / heap.requests / 1024).toFixed(1);
      tables.push(
        {
          title: `${what}: bytes allocated per request by area over ${seconds} s of load (${heap.requests} requests, ${kb(allocated.total)} KB each)`,
          headers: ['area', 'KB per request', '% of bytes'],
          rows: allocated.areas.map((a) => [
            a.area,
            kb(a.bytes),
            `${((100 * a.bytes) / allocated.total).toFixed(1)}%`,
          ]),
        },
        {
          title: `${what}: the ${allocated.top.length} functions allocating the most`,
          headers: ['function', 'KB per request', '% of bytes'],
          rows: allocated.top.map((f) => [
            f.fn,
            kb(f.bytes),
            `${((100 * f.bytes) / allocated.total).toFixed(1)}%`,
          ]),
        },
      );
      data[spread] = {
        areas,
        top,
        requests,
        seconds,
        allocations: { ...allocated, requests: heap.requests, kbPerRequest: Number(kb(allocated.total)) },
      };
    }
    return {
      name: 'CPU profile of the gateway (50 connections, small Anthropic requests continuing their chats)',
      seconds: (performance.now() - t0) / 1000,
      tables,
      targets: [],
      notes: [
        'a sample counts in the first area any frame of its stack belongs to, in the order of the table',
        'the profiler (sampling every 0.2 ms) slows the process: read the shares; the profile covers the load only (warm-up, start-up and shutdown left out)',
        'the profiles are kept in .bench-out/gateway-<spread>.cpuprofile and .heapprofile (open them in Chrome DevTools)',
        "allocations: V8's sampling heap profiler (a sample every 8 KB allocated, objects collected since counted too), in a second run of the same load",
      ],
      data,
    };
  } finally {
    await stack.stop();
  }
}
