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

/** One response as read off a connection: status, headers (names lower-cased) and body. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A client connection kept alive by hand: requests are written on it as the test says, and its
 * responses read one by one (a length or chunked body), so a test sees which connection served
 * which request and when the server closed it.
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private ended = false;
  private wake: () => void = () => {};
  /** Settles when the server ended or reset the connection. */
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      this.wake();
    });
    // A write racing the server's close may fail: the test looks at what came back.
    socket.on('error', () => {});
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.ended = true;
        this.wake();
        resolve();
      }),
    );
  }

  /** Opens a connection to `base`. */
  static open(base: string): Promise<RawConnection> {
    const { hostname, port } = new URL(base);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Writes raw bytes (a request, or part of one) unless the connection is gone. */
  write(text: string): void {
    if (!this.socket.destroyed) this.socket.write(text);
  }

  /** Closes the connection from the client's side. */
  destroy(): void {
    this.socket.destroy();
  }

  /** Waits until what arrived but was not yet read as a response satisfies `test`. */
  async until(test: (text: string) => boolean): Promise<void> {
    while (!test(this.buffer.toString('utf8'))) {
      if (this.ended) throw new Error(`connection closed; received: ${this.buffer.toString('utf8')}`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** The next whole response, or undefined when the server closed the connection before one came. */
  async response(): Promise<RawResponse | undefined> {
    for (;;) {
      const r = this.take();
      if (r) return r;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private take(): RawResponse | undefined {
    const buf = this.buffer;
    const headEnd = buf.indexOf('\r\n\r\n');
    if (headEnd === -1) return undefined;
    const [statusLine = '', ...lines] = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
    let pos = headEnd + 4;
    let body: Buffer;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', pos);
        if (lineEnd === -1) return undefined;
        const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1'), 16);
        if (buf.length < lineEnd + 2 + size + 2) return undefined;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (buf.length < pos + length) return undefined;
      body = buf.subarray(pos, pos + length);
      pos += length;
    }
    this.buffer = buf.subarray(pos);
    return { status, headers, body: body.toString('utf8') };
  }
}

/**
 * POSTs a JSON `body` to `url` in one write and reads the answer through; resolves with its status.
 * `agent: false` gives the request a connection of its own.
 */
export function postStatus(
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  opts: { agent?: false } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      ...opts,
      headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.end(body);
  });
}
