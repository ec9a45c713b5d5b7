/**
 * The gateway in a process of its own, for the benchmarks: what server/main.ts does (validated
 * config, createApp, listen, no Node request timeout), with the config given as a JSON argument.
 * Its stdout carries the gateway's log lines (the benchmark points it at a file); the port is
 * reported over IPC. Over IPC it also takes a CPU profile of a window on request (`profileStart`,
 * `profileStop`), or a sampled profile of what it allocates (`allocationsStart`, `allocationsStop`),
 * so a profile holds the load only.
 */
import type { Server } from 'node:http';
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { createApp } from '../server/app.ts';
import { parseConfig } from '../config/config.ts';
import { createLogger } from '../server/logger.ts';
import { serveChildProtocol } from './processes.ts';
import { setHeapGrowth } from '../server/heap-growth.ts';

// As `npm start` runs it (server/main.ts).
setHeapGrowth(process.execArgv, process.env.NODE_OPTIONS);
const { config: raw } = JSON.parse(process.argv[2] ?? '{}') as { config: unknown };
const config = parseConfig(raw);
const gateway = createApp(config, { logger: createLogger(config.logLevel) });
// A profiler over a window the benchmark chooses (bench/profile.ts), start-up and shutdown left out:
// the CPU profiler, or V8's sampling heap profiler counting what was allocated, collected or not.
let inspector: Session | undefined;
function openSession(): Session {
  inspector = new Session();
  inspector.connect();
  return inspector;
}
/** Stops the window `start` opened: its profile as JSON text, the session disconnected. */
async function stopWindow(start: string, stop: (session: Session) => Promise<{ profile: unknown }>) {
  const session = inspector;
  if (!session) throw new Error(`${start} was not asked`);
  inspector = undefined;
  const { profile } = await stop(session);
  session.disconnect();
  return JSON.stringify(profile);
}
const queries = {
  async profileStart() {
    const session = openSession();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    return true;
  },
  profileStop: () => stopWindow('profileStart', (session) => session.post('Profiler.stop')),
  async allocationsStart() {
    const session = openSession();
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 8192,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return true;
  },
  allocationsStop: () =>
    stopWindow('allocationsStart', (session) => session.post('HeapProfiler.stopSampling')),
};
const server: Server = gateway.app.listen(0, config.server.host, () => {
  serveChildProtocol(
    (server.address() as AddressInfo).port,
    async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
    },
    queries,
  );
});
server.requestTimeout = 0;
server.headersTimeout = 60_000;
