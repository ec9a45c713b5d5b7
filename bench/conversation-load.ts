/**
 * Load as chat clients make it, for the overhead benchmark and the profile: autocannon where every
 * request continues its chat (the history it sends is the previous one plus the model's answer and
 * a short user message) and a chat ends after `TURNS_PER_CHAT` turns. The load is spread either as
 * a chat per connection (many users or agents at once) or as one chat for all connections (one
 * agent's parallel calls: the turns of one conversation go to whichever connection asks next).
 */
import autocannon, { type AutocannonResult } from 'autocannon';
import { clientHeaders, conversationTurn, PATHS, type Format } from './bodies.ts';
import type { ChildHandle } from './processes.ts';

export type Spread = 'perConnection' | 'oneChat';
export const TURNS_PER_CHAT = 50;

export interface LoadFigures {
  rps: number;
  /** Completed 2xx answers. */
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time of the target's own process per request (ms), when it is a child we can ask. */
  cpuMsPerRequest: number | undefined;
}

const bodyCache = new Map<string, string[]>();

/** The JSON bodies of a chat's turns 0..TURNS_PER_CHAT-1. */
export function conversationBodies(format: Format, stream: boolean): string[] {
  const key = `${format}/${stream}`;
  let b = bodyCache.get(key);
  if (!b) {
    b = Array.from({ length: TURNS_PER_CHAT }, (_, t) => JSON.stringify(conversationTurn(format, stream, t)));
    bodyCache.set(key, b);
  }
  return b;
}

let runCounter = 0;

export interface LoadOptions {
  format: Format;
  stream: boolean;
  connections: number;
  spread: Spread;
  seconds: number;
  /** Stop after this many requests instead (a warm-up: the same work for a fast and a slow target). */
  requests?: number;
  /** The process whose CPU time is measured (the target itself when it is one of ours). */
  cpuOf?: Pick<ChildHandle, 'usage'>;
  /** Headers added to every request (a peer gateway's routing headers). */
  headers?: Record<string, string>;
}

/** Runs the load against `target` for `seconds` (or `requests`); chat ids are new for every run. */
export async function conversationLoad(
  target: Pick<ChildHandle, 'url'>,
  o: LoadOptions,
): Promise<LoadFigures> {
  const before = o.cpuOf ? await o.cpuOf.usage() : undefined;
  const tag = `load-${process.pid}-${++runCounter}`;
  const base = { ...clientHeaders(o.format), ...o.headers };
  const bodies = conversationBodies(o.format, o.stream);
  let conn = 0;
  // One chat: the turns of one conversation, handed out in order to whichever connection asks.
  let nextTurn = 0;
  const result: AutocannonResult = await autocannon({
    url: target.url + PATHS[o.format],
    method: 'POST',
    connections: o.connections,
    ...(o.requests === undefined ? { duration: o.seconds } : { amount: o.requests }),
    headers: base,
    body: bodies[0],
    setupClient(client) {
      const c = conn++;
      let sent = 0;
      const take = () => {
        const n = o.spread === 'oneChat' ? nextTurn++ : sent;
        const chat = o.spread === 'oneChat' ? 'one' : `c${c}`;
        client.setHeadersAndBody(
          { ...base, 'x-session-id': `${tag}-${chat}-${Math.floor(n / TURNS_PER_CHAT)}` },
          bodies[n % TURNS_PER_CHAT]!,
        );
      };
      take();
      client.on('response', () => {
        sent++;
        take();
      });
    },
  });
  const after = o.cpuOf ? await o.cpuOf.usage() : undefined;
  const cpuMs =
    before && after
      ? (after.cpuUser + after.cpuSystem - before.cpuUser - before.cpuSystem) / 1000
      : undefined;
  return {
    rps: result['2xx'] / result.duration,
    requests: result['2xx'],
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cpuMsPerRequest: cpuMs === undefined || result['2xx'] === 0 ? undefined : cpuMs / result['2xx'],
  };
}
