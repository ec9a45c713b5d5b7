/**
 * The log viewer (SPEC section 12): `GET /ui` serves a static page (plain ES modules and CSS from
 * `ui/`, no build step) that reads the session routes with the caller's own key. The page and its
 * files need no key (a browser cannot send one when it navigates); every piece of chat data comes
 * from the key-checked API routes below, which `createApp` mounts behind authentication.
 *
 * Chat content is untrusted, so the page's Content-Security-Policy lets only the gateway's own
 * scripts run, forbids inline script, remote loads and framing, and requires Trusted Types, so a
 * string can never be assigned as HTML.
 */
import { Router, type Response } from 'express';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppContext } from '../app-context.ts';
import { sessionAttachmentRoutes } from './session-attachments.ts';
import { sessionReceivedRoutes } from './session-received.ts';
import { sessionTailRoutes } from './session-tail.ts';

export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

interface Asset {
  type: string;
  body: Buffer;
}

/** The page's files, read once: `ui/<name>` for the names and types above, nothing else. */
function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (!type || !/^[a-z0-9][a-z0-9.-]*$/.test(name)) continue;
    assets.set(name, { type, body: readFileSync(join(dir, name)) });
  }
  return assets;
}

function send(res: Response, asset: Asset): void {
  res.setHeader('content-type', asset.type);
  res.setHeader('content-security-policy', UI_CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  res.setHeader('cross-origin-resource-policy', 'same-origin');
  res.setHeader('cache-control', 'no-cache');
  res.end(asset.body);
}

/** `GET /ui` and `GET /ui/<file>`: the page and its static files; no key needed, no chat data. */
export function logViewerPageRoutes(dir = fileURLToPath(new URL('../../ui/', import.meta.url))): Router {
  const r = Router();
  const assets = loadAssets(dir);
  const index = assets.get('index.html');
  r.get(['/ui', '/ui/'], (_req, res, next) => (index ? send(res, index) : next()));
  r.get('/ui/:file', (req, res, next) => {
    const asset = req.params.file === 'index.html' ? undefined : assets.get(req.params.file);
    if (asset) send(res, asset);
    else next();
  });
  return r;
}

/** The API routes the viewer adds next to the session routes; mounted behind authentication. */
export function logViewerApiRoutes(app: AppContext): Router {
  const r = Router();
  r.use(sessionReceivedRoutes(app));
  r.use(sessionAttachmentRoutes(app));
  r.use(sessionTailRoutes(app));
  return r;
}
