/** One timed HTTP request from the benchmark: headers, first body byte and last byte, in ms. */
import { Agent, request } from 'undici';

const agent = new Agent({
  keepAliveTimeout: 30_000,
  connections: 64,
  pipelining: 1,
  bodyTimeout: 0,
  headersTimeout: 0,
});

export interface TimedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Milliseconds from sending to the response headers, first body chunk, and end. */
  headersMs: number;
  firstByteMs: number;
  lastByteMs: number;
  bytes: number;
  /** Size of every body chunk as it arrived (for streams: how the bytes were batched). */
  chunkSizes: number[];
  /** When each chunk arrived, in wall-clock ms (performance.timeOrigin + now: comparable across processes). */
  chunkTimes: number[];
  text: string;
}

function staleSocket(e: unknown): boolean {
  const code = (e as { code?: unknown } | undefined)?.code;
  return code === 'EPIPE' || code === 'ECONNRESET' || code === 'UND_ERR_SOCKET';
}

export async function timedPost(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  opts: { keepText?: boolean; recordChunks?: boolean } = {},
): Promise<TimedResponse> {
  const t0 = performance.now();
  const send = () => request(url, { method: 'POST', dispatcher: agent, headers, body });
  const res = await send()
    // An idle keep-alive socket the server closed while this process was busy (parsing a 30 MB
    // body takes longer than a server's keep-alive timeout) fails on the first write, before the
    // server read anything: sent once more on a new connection.
    .catch((e: unknown) => (staleSocket(e) ? send() : Promise.reject(e)))
    .catch((e: unknown) => {
      const sid = headers['x-session-id'];
      throw new Error(`POST ${url}${sid ? ` (x-session-id ${sid})` : ''} failed`, { cause: e });
    });
  const headersMs = performance.now() - t0;
  let firstByteMs = Number.NaN;
  let bytes = 0;
  const chunkSizes: number[] = [];
  const chunkTimes: number[] = [];
  const parts: Buffer[] = [];
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    if (bytes === 0) firstByteMs = performance.now() - t0;
    bytes += buf.length;
    if (opts.recordChunks) {
      chunkSizes.push(buf.length);
      chunkTimes.push(performance.timeOrigin + performance.now());
    }
    if (opts.keepText || res.statusCode >= 300) parts.push(buf);
  }
  const lastByteMs = performance.now() - t0;
  const text = Buffer.concat(parts).toString('utf8');
  if (res.statusCode >= 300) throw new Error(`POST ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return {
    status: res.statusCode,
    headers: res.headers as Record<string, string | string[] | undefined>,
    headersMs,
    firstByteMs,
    lastByteMs,
    bytes,
    chunkSizes,
    chunkTimes,
    text,
  };
}

export async function closeClient(): Promise<void> {
  await agent.close();
}
