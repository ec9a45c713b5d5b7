/**
 * A TCP proxy in front of the test Redis that can drop a connection at the worst moment: armed with
 * a matcher, it passes the next command that matches to Redis and then cuts the connection, either
 * when Redis's reply arrives (Redis ran the command, the client never hears so) or at once, before
 * the command reaches Redis. It can also refuse new connections for a while, so a test decides when
 * the client gets back in. For tests only.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface CutOptions {
  /** `after-run` (default): Redis runs the command, its reply is dropped; `before-run`: never sent. */
  when?: 'after-run' | 'before-run';
  /** Refuse new connections after the cut until `accept()` is called. */
  thenRefuse?: boolean;
}

export interface RedisCutProxy {
  /** `redis://` URL of the proxy. */
  url: string;
  /** Arms the proxy; resolves once a connection was cut on a command `match` accepts. */
  cutOn(match: (command: string) => boolean, opts?: CutOptions): Promise<void>;
  /** Connections cut so far. */
  readonly cuts: number;
  /** Lets new connections in again (after `thenRefuse`). */
  accept(): void;
  close(): Promise<void>;
}

/** A proxy to the Redis at `target` (`redis://host:port`). */
export async function redisCutProxy(target: string): Promise<RedisCutProxy> {
  const { hostname, port } = new URL(target);
  let armed: { match: (command: string) => boolean; opts: CutOptions; done: () => void } | undefined;
  let refusing = false;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    track(client);
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(port || 6379), hostname);
    track(upstream);
    let cutOnReply: (() => void) | undefined;
    const cut = (hit: NonNullable<typeof armed>) => {
      cuts++;
      if (hit.opts.thenRefuse) refusing = true;
      client.destroy();
      upstream.destroy();
      hit.done();
    };
    client.on('data', (chunk: Buffer) => {
      const hit = armed?.match(chunk.toString('latin1')) ? armed : undefined;
      if (hit) {
        armed = undefined;
        if (hit.opts.when === 'before-run') return cut(hit);
        cutOnReply = () => cut(hit);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutOnReply) return cutOnReply();
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${own}`,
    cutOn(match, opts = {}) {
      return new Promise<void>((done) => {
        armed = { match, opts, done };
      });
    },
    get cuts() {
      return cuts;
    },
    accept() {
      refusing = false;
    },
    async close() {
      armed = undefined;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
