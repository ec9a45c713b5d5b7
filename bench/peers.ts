/**
 * Peers (on request: `npm run bench -- peers`): another gateway from npm in front of the same fake
 * provider, measured in the same rounds as the direct path, the Express floor and Oda Gateway, with
 * the overhead benchmark's small OpenAI chat request at 1 and 50 connections. The peer is the
 * Portkey AI gateway (`@portkey-ai/gateway`, pinned below), installed on first use into
 * `.bench-out/peers` from the npm registry and run with its defaults (`--headless`, routed to the
 * fake by its `x-portkey-custom-host` header). Oda Gateway runs with its defaults, chat log on,
 * each connection continuing its own chats.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SMALL_CHAT_ANSWER } from './bodies.ts';
import { conversationLoad, type LoadFigures } from './conversation-load.ts';
import type { BenchContext } from './context.ts';
import type { ChildUsage } from './processes.ts';
import { type SectionReport, type TargetCheck } from './report.ts';
import { startStack } from './stack.ts';
import { summarize, type Summary } from './stats.ts';
import { freePort } from '../test/helpers/free-port.ts';

export const PORTKEY_VERSION = '1.15.2';
const PEERS_DIR = resolve('.bench-out/peers');
const PORTKEY_MAIN = join(PEERS_DIR, 'node_modules/@portkey-ai/gateway/build/start-server.js');

function run(cmd: string, args: string[], cwd: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0 ? done() : fail(new Error(`${cmd} ${args.join(' ')}: exit ${code}`)),
    );
  });
}

async function installPortkey(ctx: BenchContext): Promise<void> {
  const manifest = join(PEERS_DIR, 'node_modules/@portkey-ai/gateway/package.json');
  if (existsSync(manifest)) {
    const version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version;
    if (version === PORTKEY_VERSION) return;
  }
  ctx.progress(`installing @portkey-ai/gateway@${PORTKEY_VERSION} into .bench-out/peers`);
  mkdirSync(PEERS_DIR, { recursive: true });
  await run(
    'npm',
    [
      'install',
      '--prefix',
      PEERS_DIR,
      '--no-audit',
      '--no-fund',
      '--no-save',
      `@portkey-ai/gateway@${PORTKEY_VERSION}`,
    ],
    PEERS_DIR,
  );
}

/** CPU time (user, system; microseconds) of a process, from /proc (Linux). */
function procCpu(pid: number): Pick<ChildUsage, 'cpuUser' | 'cpuSystem'> | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const tick = 10_000; // USER_HZ is 100 on Linux: one tick is 10 ms
    return { cpuUser: Number(fields[11]) * tick, cpuSystem: Number(fields[12]) * tick };
  } catch {
    return undefined;
  }
}

interface Peer {
  url: string;
  child: ChildProcess;
  usage(): Promise<ChildUsage>;
}

async function startPortkey(): Promise<Peer> {
  const port = await freePort();
  const child = spawn(process.execPath, [PORTKEY_MAIN, `--port=${port}`, '--headless'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(url + '/', { signal: AbortSignal.timeout(500) });
      break;
    } catch {
      if (i > 100) throw new Error('the Portkey gateway did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    child,
    async usage() {
      const cpu = procCpu(child.pid!) ?? { cpuUser: 0, cpuSystem: 0 };
      return { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0, ...cpu };
    },
  };
}

type Target = 'direct' | 'express' | 'gateway' | 'portkey';
const TARGETS: readonly Target[] = ['direct', 'express', 'gateway', 'portkey'];

export async function peersBench(ctx: BenchContext): Promise<SectionReport> {
  const t0 = performance.now();
  await installPortkey(ctx);
  const stack = await startStack({ fake: { answer: SMALL_CHAT_ANSWER } });
  const portkey = await startPortkey();
  const portkeyHeaders = {
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${stack.fake.url}/v1`,
  };
  const url: Record<Target, string> = {
    direct: stack.fake.url,
    express: stack.express!.url,
    gateway: stack.gateway!.url,
    portkey: portkey.url,
  };
  const cpuOf = { express: stack.express!, gateway: stack.gateway!, portkey } as const;
  const load = (t: Target, connections: number, seconds: number) =>
    conversationLoad(
      { url: url[t] },
      {
        format: 'openai',
        stream: false,
        connections,
        spread: 'perConnection',
        seconds,
        ...(t === 'direct' ? {} : { cpuOf: cpuOf[t] }),
        ...(t === 'portkey' ? { headers: portkeyHeaders } : {}),
      },
    );
  const seconds = ctx.quick ? 1 : 2;
  const rounds = ctx.quick ? 2 : 3;
  const raw: Record<string, LoadFigures[]> = {};
  try {
    for (const t of TARGETS) await load(t, 10, 1); // warm-up
    for (let round = 0; round < rounds; round++) {
      for (const connections of [1, 50]) {
        for (let i = 0; i < TARGETS.length; i++) {
          const t = TARGETS[(i + round) % TARGETS.length]!;
          (raw[`${t}/${connections}`] ??= []).push(await load(t, connections, seconds));
        }
      }
      ctx.progress(`peers round ${round + 1}/${rounds}`);
    }
  } finally {
    portkey.child.kill();
    await stack.stop();
  }
  const errors = Object.values(raw)
    .flat()
    .reduce((n, r) => n + r.errors, 0);
  const rps = (t: Target, c: number): Summary => summarize(raw[`${t}/${c}`]!.map((r) => r.rps));
  const ms = (t: Target): Summary => summarize(raw[`${t}/1`]!.map((r) => 1000 / r.rps));
  const cpu = (t: Target): string => {
    const v = raw[`${t}/50`]!.map((r) => r.cpuMsPerRequest).filter((x): x is number => x !== undefined);
    return v.length ? summarize(v).median.toFixed(2) : 'n/a';
  };
  const direct = ms('direct').median;
  const rows = TARGETS.map((t) => {
    const added = ms(t).median - direct;
    return [
      t === 'portkey' ? `Portkey ${PORTKEY_VERSION}` : t === 'express' ? 'Express floor' : t,
      ms(t).median.toFixed(3),
      t === 'direct' ? '' : added.toFixed(3),
      Math.round(rps(t, 50).median),
      t === 'direct' ? '' : `${Math.round((100 * rps(t, 50).median) / rps('express', 50).median)}%`,
      t === 'direct' ? '' : cpu(t),
    ];
  });
  const gwAdded = ms('gateway').median - direct;
  const pkAdded = ms('portkey').median - direct;
  const targets: TargetCheck[] = [
    {
      name: 'added time per request at 1 connection: Oda Gateway vs Portkey',
      target: 'lower',
      measured: `${gwAdded.toFixed(3)} vs ${pkAdded.toFixed(3)} ms`,
      met: gwAdded < pkAdded,
      ...(gwAdded >= pkAdded ? { missedBy: `+${(gwAdded - pkAdded).toFixed(3)} ms` } : {}),
    },
    {
      name: 'requests/s at 50 connections: Oda Gateway vs Portkey',
      target: 'higher',
      measured: `${Math.round(rps('gateway', 50).median)} vs ${Math.round(rps('portkey', 50).median)}`,
      met: rps('gateway', 50).median > rps('portkey', 50).median,
    },
  ];
  return {
    name: 'Peers (a small OpenAI chat request; another gateway from npm in front of the same fake)',
    seconds: (performance.now() - t0) / 1000,
    tables: [
      {
        title: `1 connection: time per request in ms (median of ${rounds} rounds of ${seconds} s); 50 connections: requests per second; CPU ms per request at 50 connections (all threads of the process)`,
        headers: ['path', 'ms per request', 'adds', 'req/s at 50', 'of the Express floor', 'CPU ms/req'],
        rows,
      },
    ],
    targets,
    notes: [
      `Portkey ${PORTKEY_VERSION} runs with its defaults (--headless, NODE_ENV=production), routed to the fake by x-portkey-custom-host; it keeps no chat log`,
      'Oda Gateway runs with its defaults: chat log on (file store), every connection continuing its own chats',
      ...(errors ? [`${errors} requests failed or timed out`] : []),
    ],
    data: raw,
  };
}
