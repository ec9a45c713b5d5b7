/**
 * Web pages must not drive the gateway (SPEC section 14). A gateway holds provider keys, and a
 * laptop gateway on 127.0.0.1 is reachable from every page the user opens: a page can POST to it
 * (a `text/plain` POST needs no CORS preflight) and, through DNS rebinding (a name of the page's
 * own that later resolves to 127.0.0.1), even read its answers. Two checks close that:
 * - `Origin`: a request a browser sends for a page of another origin is a 403, unless that origin
 *   is in `server.allowedOrigins` (which also gets the CORS answers a browser needs);
 * - `Host`: a gateway bound to loopback answers only the loopback names and `server.allowedHosts`,
 *   so a rebound name never reaches it.
 */
import type { Request, RequestHandler, Response } from 'express';
import { isIP } from 'node:net';
import { OdaError } from '../lib/errors.ts';

/** True for an address or name that only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/** The host name of a `Host` header value, lower case, without port, brackets or a trailing dot. */
export function hostName(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  const colon = h.indexOf(':');
  const name = colon === -1 || h.indexOf(':', colon + 1) !== -1 ? h : h.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

export interface OriginGuardOptions {
  /** The address the gateway listens on (`server.host`). */
  listenHost: string;
  /** Origins besides the gateway's own whose pages may call it (`server.allowedOrigins`). */
  allowedOrigins: readonly string[];
  /** Names a loopback gateway answers besides the loopback ones (`server.allowedHosts`). */
  allowedHosts: readonly string[];
}

function forbidden(message: string): OdaError {
  return new OdaError('ODA_ERR_FORBIDDEN', 403, message);
}

/** The origin of an `Origin` header value, or undefined for `null` and anything unparsable. */
function originOf(value: string): URL | undefined {
  if (!URL.canParse(value)) return undefined;
  const url = new URL(value);
  return url.origin === 'null' ? undefined : url;
}

/** Express middleware: 403 for a foreign `Host` (loopback only) or `Origin`; CORS for allowed origins. */
export function originGuard(opts: OriginGuardOptions): RequestHandler {
  const checkHost = isLoopbackHost(opts.listenHost);
  const hosts = new Set([...LOOPBACK_NAMES, ...opts.allowedHosts.map((h) => h.toLowerCase())]);
  const origins = new Set(opts.allowedOrigins);
  return function guardOrigin(req: Request, res: Response, next) {
    const host = req.headers.host;
    // No Host at all is not a browser (browsers always send it); curl -H 'Host:' may.
    if (checkHost && host !== undefined && !hosts.has(hostName(host))) {
      throw forbidden(
        `host "${hostName(host)}" is not a name of this gateway: a gateway bound to loopback answers ` +
          'localhost, 127.0.0.1 and [::1] only (add other names to server.allowedHosts)',
      );
    }
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    const url = originOf(origin);
    // Its own pages (the log viewer) send the gateway's own host; the scheme may differ behind TLS.
    if (url && host !== undefined && url.host === host.toLowerCase()) return next();
    if (url && origins.has(url.origin)) {
      res.setHeader('access-control-allow-origin', url.origin);
      res.setHeader('vary', 'Origin');
      res.setHeader('access-control-expose-headers', '*');
      if (req.method === 'OPTIONS') {
        res.setHeader('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS');
        const asked = req.headers['access-control-request-headers'];
        if (typeof asked === 'string') res.setHeader('access-control-allow-headers', asked);
        res.setHeader('access-control-max-age', '600');
        res.status(204).end();
        return;
      }
      return next();
    }
    throw forbidden(
      `requests from web pages of other origins are refused: origin "${origin.slice(0, 200)}" is not ` +
        "this gateway's own and not in server.allowedOrigins",
    );
  };
}
