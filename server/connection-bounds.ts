/**
 * Bounded connections of a shared gateway (SPEC section 14). `server.maxConnections` caps the
 * connections open at once and `server.maxConnectionsPerAddress` those of one client address. A
 * connection that holds no request in flight (an idle keep-alive connection, or one that has not
 * sent a whole request head yet) costs the gateway nothing but its slot: when a cap is reached, the
 * oldest such connection (of that address, for the address's cap) is closed to make room, and a new
 * connection is refused (its socket closed as it arrives) only when every connection under the cap
 * has a request in flight. So a thousand keep-alive connections polling `/healthz` without a key
 * cannot lock the teams out, and one address, whose connections count against its own cap first,
 * cannot take every connection by holding requests open (slow bodies, until `timeouts.bodyMs`).
 * Closing an idle keep-alive connection is what its keep-alive timeout does anyway; clients open a
 * new one for their next request.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  /** Connections open at once. */
  maxConnections: number;
  /** Connections open at once from one client address (an IPv6 address counts by its /64). */
  maxConnectionsPerAddress: number;
}

/** Why a connection was closed by the bounds: to make room (idle), or refused as it arrived. */
export type ConnectionClosed = 'idle' | 'refused-gateway' | 'refused-address';

interface Tracked {
  readonly address: string;
  /** Requests of this connection whose responses have not ended. */
  active: number;
}

/**
 * The address a connection counts against: IPv4 (also when mapped into IPv6) as it is, IPv6 by
 * its /64, the smallest block a network is handed, so one host cannot count as 2^64 addresses.
 */
export function addressKey(remote: string | undefined): string {
  if (!remote) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remote);
  if (mapped) return mapped[1]!;
  if (!remote.includes(':')) return remote;
  const bare = remote.replace(/%.*$/, '');
  const [head = '', tail] = bare.split('::');
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  // An IPv4 tail (`64:ff9b::192.0.2.1`) stands for two groups.
  const backCount = back.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const all =
    tail === undefined
      ? front
      : [...front, ...Array<string>(Math.max(0, 8 - front.length - backCount)).fill('0'), ...back];
  const first4 = all.slice(0, 4).map((g) => (g.includes('.') ? g : (parseInt(g, 16) || 0).toString(16)));
  while (first4.length < 4) first4.push('0');
  return `${first4.join(':')}::/64`;
}

/**
 * Applies `limits` to `server`'s connections (instead of Node's `server.maxConnections`, which
 * refuses new connections while idle ones hold every slot); `onClose` hears of each connection the
 * bounds close.
 */
export function boundConnections(
  server: Server,
  limits: ConnectionLimits,
  onClose: (why: ConnectionClosed, address: string) => void = () => {},
): void {
  const open = new Map<Socket, Tracked>();
  const perAddress = new Map<string, number>();
  // Connections with no request in flight, the longest idle first (a Set keeps insertion order).
  const idle = new Set<Socket>();

  const forget = (socket: Socket) => {
    const t = open.get(socket);
    if (!t) return;
    open.delete(socket);
    idle.delete(socket);
    const n = (perAddress.get(t.address) ?? 1) - 1;
    if (n <= 0) perAddress.delete(t.address);
    else perAddress.set(t.address, n);
  };
  /** Closes the longest idle connection (of `address`, when given); false when there is none. */
  const shedIdle = (address?: string): boolean => {
    for (const socket of idle) {
      const t = open.get(socket)!;
      if (address !== undefined && t.address !== address) continue;
      forget(socket);
      socket.destroy();
      onClose('idle', t.address);
      return true;
    }
    return false;
  };

  server.on('connection', (socket: Socket) => {
    const address = addressKey(socket.remoteAddress);
    if ((perAddress.get(address) ?? 0) >= limits.maxConnectionsPerAddress && !shedIdle(address)) {
      socket.destroy();
      onClose('refused-address', address);
      return;
    }
    if (open.size >= limits.maxConnections && !shedIdle()) {
      socket.destroy();
      onClose('refused-gateway', address);
      return;
    }
    open.set(socket, { address, active: 0 });
    perAddress.set(address, (perAddress.get(address) ?? 0) + 1);
    idle.add(socket);
    socket.once('close', () => forget(socket));
  });

  server.on('request', (req, res) => {
    const socket = req.socket;
    const t = open.get(socket);
    if (!t) return;
    t.active++;
    idle.delete(socket);
    // 'close' comes once the response has ended, whole or cut short.
    res.once('close', () => {
      t.active--;
      if (t.active === 0 && open.has(socket) && !socket.destroyed) idle.add(socket);
    });
  });
}
