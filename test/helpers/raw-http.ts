/**
 * HTTP as an attacker sends it: any header (Host, Origin, a content type a browser would use), any
 * request target, and bodies that arrive late or never; for the hardening tests (SPEC section 14).
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown> | undefined;
}

/** Sends one request with exactly these headers (Host included when given) and reads the answer. */
export function rawRequest(
  base: string,
  opts: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        method: opts.method ?? 'POST',
        path: opts.path,
        headers: {
          ...(opts.body !== undefined ? { 'content-length': Buffer.byteLength(opts.body) } : {}),
          ...opts.headers,
        },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> | undefined;
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** What a socket received until the server closed it (or `waitMs` passed without a close). */
export interface SocketOutcome {
  /** Everything the server wrote. */
  received: string;
  /** True when the server ended or reset the connection. */
  closedByServer: boolean;
}

/**
 * Opens a connection, writes `head` (request line and headers) and `partialBody`, then writes
 * nothing more: the body the headers promise never arrives whole. Resolves when the server closes
 * the connection, or after `waitMs` (then `closedByServer` is false).
 */
export function sendPartialRequest(
  base: string,
  head: string,
  partialBody: string | Buffer,
  waitMs: number,
): Promise<SocketOutcome> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const socket: Socket = connect(Number(port), hostname);
    let received = '';
    let settled = false;
    const finish = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ received, closedByServer });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.on('connect', () => {
      socket.write(head);
      socket.write(partialBody);
    });
  });
}

/** A request head for `sendPartialRequest`, with a Content-Length of `contentLength`. */
export function requestHead(
  base: string,
  path: string,
  contentLength: number,
  headers: Record<string, string> = {},
): string {
  const { host } = new URL(base);
  const lines = [
    `POST ${path} HTTP/1.1`,
    `Host: ${host}`,
    'Content-Type: application/json',
    `Content-Length: ${contentLength}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The status code in the first line of raw HTTP response text (0 when there is none). */
export function statusOf(received: string): number {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(received);
  return m ? Number(m[1]) : 0;
}
