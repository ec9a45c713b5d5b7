/**
 * Who is calling. With `teams` configured every request needs a team key (`Authorization: Bearer`
 * or `x-api-key`), compared by SHA-256 digest in constant time; without teams the gateway is open
 * and the caller is told apart by a digest of the credential it sends (never the credential itself).
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestHandler } from 'express';
import { OdaError } from '../lib/errors.ts';
import type { Config } from '../config/config.ts';
import { sha256Hex } from '../lib/sha256.ts';

export interface Caller {
  /** The team the key belongs to (undefined on an open gateway or for admins). */
  team: string | undefined;
  admin: boolean;
  /** Stable, non-secret identity used in derived chat ids. */
  identity: string;
}

/** The credentials a client sends, `Authorization: Bearer` first, then `x-api-key`. */
export function presentedKeys(headers: IncomingHttpHeaders): string[] {
  const keys: string[] = [];
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) keys.push(m[1]!.trim());
  }
  const x = headers['x-api-key'];
  if (typeof x === 'string' && x.trim()) keys.push(x.trim());
  return keys;
}

/** The credential a client sends, from `Authorization: Bearer` or `x-api-key`. */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  return presentedKeys(headers)[0];
}

function digestEquals(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

/** Resolves the caller of a request, or throws 401 when teams are configured and the key is wrong. */
export function resolveCaller(
  config: Pick<Config, 'teams' | 'adminKeys'>,
  headers: IncomingHttpHeaders,
): Caller {
  const key = presentedKey(headers);
  const teams = config.teams;
  if (!teams || teams.length === 0) {
    if (key && config.adminKeys.some((k) => digestEquals(k, `sha256:${sha256Hex(key)}`))) {
      return { team: undefined, admin: true, identity: 'admin' };
    }
    return {
      team: undefined,
      admin: false,
      identity: key ? `key:${sha256Hex(key).slice(0, 16)}` : 'anonymous',
    };
  }
  if (!key) {
    throw new OdaError(
      'ODA_ERR_UNAUTHORIZED',
      401,
      'a team key is required (Authorization: Bearer <key> or x-api-key)',
    );
  }
  let found: Caller | undefined;
  // A client may send a team key in either header (some send another token in the other one).
  for (const candidate of presentedKeys(headers)) {
    const digest = `sha256:${sha256Hex(candidate)}`;
    // Compare against every key so timing does not reveal which team matched.
    for (const admin of config.adminKeys) {
      if (digestEquals(admin, digest) && !found) found = { team: undefined, admin: true, identity: 'admin' };
    }
    for (const team of teams) {
      for (const k of team.keys) {
        if (digestEquals(k, digest) && !found)
          found = { team: team.name, admin: false, identity: `team:${team.name}` };
      }
    }
  }
  if (!found) throw new OdaError('ODA_ERR_UNAUTHORIZED', 401, 'invalid team key');
  return found;
}

/** Express middleware that puts the Caller in `res.locals.caller`. */
export function authenticate(config: Pick<Config, 'teams' | 'adminKeys'>): RequestHandler {
  return function authenticateCaller(req, res, next) {
    res.locals.caller = resolveCaller(config, req.headers);
    next();
  };
}
