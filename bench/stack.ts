/**
 * A benchmark's own set of processes: the fake provider, the two minimal proxies in front of it
 * (node:http, and Express 5: the floors), and the gateway in front of it (default config: both formats, chat log on, file store in a temp dir,
 * log lines to a file), each a separate process on loopback.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeProviderOptions } from '../test/fake-provider/fake-provider.ts';
import { startChild, type ChildHandle } from './processes.ts';

/** A gateway process with its own temp dir (chat logs, log lines), removed on stop. */
export interface GatewayHandle extends ChildHandle {
  readonly dataDir: string;
}

export interface GatewayOptions {
  /** Config entries merged over the default gateway config. */
  config?: Record<string, unknown>;
  /** Where the temp dir goes; default: the OS temp dir. */
  tempRoot?: string;
  /** Extra Node.js flags for the gateway process (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Run the gateway from its TypeScript source under tsx (the CPU profile), not compiled. */
  source?: boolean;
  /** Run this compiled gateway process (another revision's build) instead of this tree's. */
  compiled?: string;
  /** A command the gateway runs under (valgrind), and how long its stop may take. */
  wrap?: string[];
  stopGraceMs?: number;
  name?: string;
}

/** The gateway config of the benchmarks: the defaults, the two fake providers, data in `dataDir`. */
export function gatewayConfig(
  fakeUrl: string,
  dataDir: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    dataDir,
    providers: [
      { name: 'openai', format: 'openai', baseUrl: `${fakeUrl}/v1` },
      { name: 'anthropic', format: 'anthropic', baseUrl: fakeUrl },
    ],
    ...extra,
  };
}

/** A tmpfs directory (memory-backed: fsync is free) when the machine has one. */
export function tmpfsRoot(): string | undefined {
  return existsSync('/dev/shm') ? '/dev/shm' : undefined;
}

export async function startGateway(fakeUrl: string, opts: GatewayOptions = {}): Promise<GatewayHandle> {
  const dir = mkdtempSync(join(opts.tempRoot ?? tmpdir(), 'oda-bench-'));
  const dataDir = join(dir, 'data');
  try {
    const child = await startChild(
      opts.name ?? 'gateway',
      './gateway-process.ts',
      { config: gatewayConfig(fakeUrl, dataDir, opts.config) },
      {
        stdoutFile: join(dir, 'gateway.log'),
        nodeArgs: opts.nodeArgs,
        source: opts.source,
        compiled: opts.compiled,
        wrap: opts.wrap,
        stopGraceMs: opts.stopGraceMs,
      },
    );
    return {
      ...child,
      dataDir,
      async stop() {
        await child.stop();
        if (!process.env.KEEP_BENCH_DIR) rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

export interface Stack {
  readonly fake: ChildHandle;
  readonly proxy: ChildHandle | undefined;
  /** The minimal Express 5 proxy (the Express floor); started with the minimal proxy. */
  readonly express: ChildHandle | undefined;
  readonly gateway: GatewayHandle | undefined;
  stop(): Promise<void>;
}

export interface StackOptions {
  fake?: FakeProviderOptions;
  /** False: neither minimal proxy (node:http nor Express). */
  proxy?: boolean;
  /** The gateway's options; false: no gateway. */
  gateway?: GatewayOptions | false;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const started: ChildHandle[] = [];
  const stopAll = async () => {
    for (const c of started.reverse()) await c.stop();
  };
  try {
    const fake = await startChild('fake provider', './fake-provider-process.ts', opts.fake ?? {});
    started.push(fake);
    const proxy =
      opts.proxy === false
        ? undefined
        : await startChild('minimal proxy', './minimal-proxy.ts', { target: fake.url });
    if (proxy) started.push(proxy);
    const expressProxy =
      opts.proxy === false
        ? undefined
        : await startChild('minimal Express proxy', './minimal-express-proxy.ts', { target: fake.url });
    if (expressProxy) started.push(expressProxy);
    const gateway = opts.gateway === false ? undefined : await startGateway(fake.url, opts.gateway ?? {});
    if (gateway) started.push(gateway);
    return { fake, proxy, express: expressProxy, gateway, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
