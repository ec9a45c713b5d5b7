/**
 * Child processes of the benchmark: the fake provider, the minimal proxy and the gateway each run in
 * their own Node.js process (so a figure such as RSS is that process's own), plus an optional
 * throw-away Redis server. Every Node child is `node <file compiled to .build/bench/> <json options>`
 * (as `npm start` runs the gateway: plain JavaScript, no TypeScript loader in the process; the CPU
 * profile runs its gateway from source, `node --import tsx`, to name each function's own file),
 * prints one JSON line `{"port":N}` on stdout when it listens, answers `{type:"usage"}` over IPC,
 * and exits when the benchmark disconnects (so a crashed benchmark leaves nothing behind).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { freePort } from '../test/helpers/free-port.ts';

const TSX = import.meta.resolve('tsx');

export interface ChildHandle {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** The child's memory and CPU time so far, from the child itself over IPC. */
  usage(): Promise<ChildUsage>;
  /** Asks the child for a value it serves under `type` (see serveChildProtocol's `queries`). */
  ask(type: string): Promise<unknown>;
  /** Peak resident set size of the child so far (VmHWM), in bytes, when /proc is there. */
  peakRss(): number | undefined;
  stop(): Promise<void>;
}

export interface ChildUsage {
  /** process.memoryUsage(), bytes. */
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** process.cpuUsage() of the whole process (all threads), microseconds. */
  cpuUser: number;
  cpuSystem: number;
}

export interface StartOptions {
  /** Send the child's stdout (the gateway's log lines) to this file, as a deployment would. */
  stdoutFile?: string;
  env?: Record<string, string>;
  /** Extra Node.js flags (e.g. --cpu-prof when profiling). */
  nodeArgs?: string[];
  /** Run the TypeScript source under tsx instead of the compiled file (a profile's frames then name our files). */
  source?: boolean;
  /** Run this compiled file instead of compiling `script` from this tree (another build's). */
  compiled?: string;
  /** A command the child runs under, before `node` (e.g. valgrind and its flags). */
  wrap?: string[];
  /** How long `stop()` waits after SIGTERM before SIGKILL (default 5 s). */
  stopGraceMs?: number;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const compiled = new Map<string, string>();

/** Compiles `bench/<script>` with scripts/build.mjs, once per benchmark run; returns the file. */
function compiledScript(script: string): string {
  const entry = `bench/${script.replace(/^\.\//, '')}`;
  const known = compiled.get(entry);
  if (known) return known;
  const r = spawnSync(process.execPath, ['scripts/build.mjs', entry], { cwd: ROOT, encoding: 'utf8' });
  const built = /^built (\S+)$/m.exec(r.stderr ?? '')?.[1];
  if (r.status !== 0 || built === undefined) {
    throw new Error(`could not compile ${entry}: ${r.error?.message ?? (r.stderr || r.stdout)}`);
  }
  const file = `${ROOT}${built}`;
  compiled.set(entry, file);
  return file;
}

/** Starts `bench/<script>` with `options` as its JSON argument and waits for its port. */
export async function startChild(
  name: string,
  script: string,
  options: unknown,
  start: StartOptions = {},
): Promise<ChildHandle> {
  const file =
    start.compiled ??
    (start.source ? fileURLToPath(new URL(script, import.meta.url)) : compiledScript(script));
  const loader = start.source && !start.compiled ? ['--import', TSX] : [];
  const out = start.stdoutFile ? openSync(start.stdoutFile, 'a') : 'pipe';
  const args = [...(start.nodeArgs ?? []), ...loader, file, JSON.stringify(options)];
  const [command, ...wrapArgs] = start.wrap?.length ? start.wrap : [process.execPath];
  const child = spawn(command!, start.wrap?.length ? [...wrapArgs, process.execPath, ...args] : args, {
    stdio: ['ignore', out, 'inherit', 'ipc'],
    env: { ...process.env, ...start.env },
  });
  if (typeof out === 'number') closeSync(out);
  const port = await (child.stdout ? readPort(name, child) : ipcPort(name, child));
  child.stdout?.resume(); // nothing more is expected; never let a full pipe block the child
  return handle(name, child, port, start.stopGraceMs ?? 5000);
}

function ipcPort(name: string, child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`${name} exited (code ${code}) before listening`));
    child.once('exit', onExit);
    const onMessage = (m: unknown) => {
      const msg = m as { type?: string; port?: number };
      if (msg.type === 'port' && typeof msg.port === 'number') {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(msg.port);
      }
    };
    child.on('message', onMessage);
  });
}

function readPort(name: string, child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    const onExit = (code: number | null) =>
      reject(new Error(`${name} exited (code ${code}) before listening`));
    child.once('exit', onExit);
    rl.once('line', (line) => {
      child.off('exit', onExit);
      rl.close();
      try {
        const parsed = JSON.parse(line) as { port?: unknown };
        if (typeof parsed.port !== 'number') throw new Error('no port');
        resolve(parsed.port);
      } catch {
        reject(new Error(`${name} printed "${line}" instead of {"port":N}`));
      }
    });
  });
}

function handle(name: string, child: ChildProcess, port: number, graceMs: number): ChildHandle {
  let seq = 0;
  return {
    name,
    pid: child.pid!,
    port,
    url: `http://127.0.0.1:${port}`,
    ask(type: string) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        const onMessage = (m: unknown) => {
          const msg = m as { type?: string; id?: number; value?: unknown };
          if (msg.type === 'answer' && msg.id === id) {
            child.off('message', onMessage);
            resolve(msg.value);
          }
        };
        child.on('message', onMessage);
        child.send({ type, id }, (err) => err && reject(err));
      });
    },
    async usage() {
      return (await this.ask('usage')) as ChildUsage;
    },
    peakRss() {
      return procStatusBytes(child.pid!, 'VmHWM');
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM), or undefined off Linux. */
export function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  const path = `/proc/${pid}/status`;
  if (!existsSync(path)) return undefined;
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(path, 'utf8'));
  return m ? Number(m[1]) * 1024 : undefined;
}

/**
 * Installs the child side of the protocol: answers `usage` (and any of `queries`) over IPC, exits
 * when the parent goes away.
 */
export function serveChildProtocol(
  port: number,
  onExit: () => Promise<void> | void = () => undefined,
  queries: Record<string, () => unknown> = {},
): void {
  const answers: Record<string, () => unknown> = {
    usage: () => {
      const cpu = process.cpuUsage();
      const usage: ChildUsage = { ...process.memoryUsage(), cpuUser: cpu.user, cpuSystem: cpu.system };
      return usage;
    },
    ...queries,
  };
  process.on('message', (m: unknown) => {
    const msg = m as { type?: string; id?: number };
    const answer = msg.type === undefined ? undefined : answers[msg.type];
    if (!answer) return;
    // An answer may be a promise (a CPU profile taken over a window); it is sent once settled.
    void Promise.resolve()
      .then(answer)
      .then((value) => process.send?.({ type: 'answer', id: msg.id, value }));
  });
  const exit = () => {
    void Promise.resolve(onExit()).finally(() => process.exit(0));
  };
  process.on('disconnect', exit);
  process.on('SIGTERM', exit);
  process.on('SIGINT', exit);
  process.send?.({ type: 'port', port });
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}

export interface RedisHandle {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** True when a `redis-server` binary is on the PATH. */
export function hasRedisServer(): boolean {
  const r = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

/** Starts a throw-away redis-server on a free port (no persistence) and waits until it answers. */
export async function startRedis(): Promise<RedisHandle> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (/Ready to accept connections/i.test(out)) {
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`redis-server exited (code ${code}): ${out.slice(-400)}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
