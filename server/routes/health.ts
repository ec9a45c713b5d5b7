import { Router } from 'express';
import type { AppContext } from '../app-context.ts';

/** GET /healthz (alive) and GET /readyz (the chat store is reachable). */
export function healthRoutes(app: AppContext): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const ok = await app.chatLog.ping().catch(() => false);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'unavailable', store: app.config.store.kind });
  });
  return r;
}
