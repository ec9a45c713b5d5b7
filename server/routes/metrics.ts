import { Router } from 'express';
import type { AppContext } from '../app-context.ts';

/** GET /metrics in Prometheus text format. */
export function metricsRoutes(app: AppContext): Router {
  const r = Router();
  r.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', app.metrics.registry.contentType);
    res.end(await app.metrics.registry.metrics());
  });
  return r;
}
