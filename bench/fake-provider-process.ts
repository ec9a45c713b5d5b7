/**
 * The test fake provider (test/fake-provider) in a process of its own, for the benchmarks:
 * `node --import tsx bench/fake-provider-process.ts '<FakeProviderOptions as JSON>'` listens on an
 * ephemeral loopback port and prints `{"port":N}` on stdout.
 *
 * For the streaming benchmark it also notes when it wrote each piece of every SSE answer (wall
 * clock, comparable with the client's) and serves the last answer's log over IPC (`lastStreamWrites`):
 * [time ms, bytes written so far] per write.
 */
import { ServerResponse } from 'node:http';
import { FakeProvider, type FakeProviderOptions } from '../test/fake-provider/fake-provider.ts';
import { serveChildProtocol } from './processes.ts';

type WriteLog = Array<[number, number]>;
const logs = new WeakMap<ServerResponse, WriteLog>();
let lastStreamWrites: WriteLog = [];
const write = ServerResponse.prototype.write as (this: ServerResponse, ...args: unknown[]) => boolean;
ServerResponse.prototype.write = function loggedWrite(this: ServerResponse, ...args: unknown[]): boolean {
  const ok = write.apply(this, args);
  // Only the SSE answers call write(); JSON answers go out with end().
  {
    let log = logs.get(this);
    if (!log) {
      log = [];
      logs.set(this, log);
      lastStreamWrites = log;
    }
    const chunk = args[0];
    const bytes =
      typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.length : 0;
    const total = (log[log.length - 1]?.[1] ?? 0) + bytes;
    log.push([performance.timeOrigin + performance.now(), total]);
  }
  return ok;
} as typeof ServerResponse.prototype.write;

const options = JSON.parse(process.argv[2] ?? '{}') as FakeProviderOptions;
const fake = await new FakeProvider(options).start();
// The fake records every request for tests; a benchmark sends gigabytes, so forget them often.
setInterval(() => {
  fake.requests.length = 0;
}, 20).unref();
serveChildProtocol(Number(new URL(fake.url).port), () => fake.close(), {
  lastStreamWrites: () => lastStreamWrites,
});
