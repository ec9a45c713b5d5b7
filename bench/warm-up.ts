/**
 * Warms a target up before it is measured: small chat requests in both formats, streamed and not,
 * the same number of requests on each path for every target, so V8 has compiled the hot paths (a
 * gateway in service is warm). A count, not a duration: a second of load gave the floors several
 * times the gateway's requests, and the gateway, with more code to compile, was still being
 * optimized in the first measured rounds (`node --trace-opt` over 6,000 sequential Anthropic
 * requests: 358 functions optimized in the first 500, 20 or fewer per 500 after the first 3,000).
 * Each connection continues its own chat turn by turn, as clients do (one history sent again and
 * again would be logged as regenerated answers, in branches, which is not the path being measured).
 */
import type { Format } from './bodies.ts';
import { conversationLoad } from './conversation-load.ts';

/** Requests per path (format, streamed or not) of a warm-up: 6,000 in all. */
const WARM_UP_REQUESTS = 1_500;

/** The paths a warm-up goes through, in order. */
const WARM_UP_PATHS: ReadonlyArray<{ format: Format; stream: boolean }> = [
  { format: 'openai', stream: false },
  { format: 'openai', stream: true },
  { format: 'anthropic', stream: false },
  { format: 'anthropic', stream: true },
];

/** `requests` requests on each path at `connections` connections, a chat per connection. */
export async function warmUp(
  baseUrl: string,
  { requests = WARM_UP_REQUESTS, connections = 4 }: { requests?: number; connections?: number } = {},
): Promise<void> {
  for (const { format, stream } of WARM_UP_PATHS) {
    await conversationLoad(
      { url: baseUrl },
      { format, stream, connections, spread: 'perConnection', seconds: 0, requests },
    );
  }
}
