import { Router } from 'express';
import { readFileSync } from 'node:fs';

/** GET /openapi.yaml: the client-facing contract, served from the repository root. */
export function openapiRoutes(): Router {
  const r = Router();
  const text = readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8');
  r.get('/openapi.yaml', (_req, res) => {
    res.setHeader('content-type', 'application/yaml; charset=utf-8');
    res.end(text);
  });
  return r;
}
