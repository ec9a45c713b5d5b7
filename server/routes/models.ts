import { Router } from 'express';
import type { AppContext } from '../app-context.ts';

/** GET /v1/models: the configured providers and the model globs each serves. */
export function modelsRoutes(app: AppContext): Router {
  const r = Router();
  r.get('/v1/models', (_req, res) => {
    const data = app.registry
      .all()
      .flatMap((p) => p.models.map((id) => ({ id, object: 'model', owned_by: p.name, format: p.format })));
    const models = Object.entries(app.config.models).map(([glob, facts]) => ({ glob, ...facts }));
    res.json({ object: 'list', data, models });
  });
  return r;
}
