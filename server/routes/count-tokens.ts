import { Router } from 'express';
import { OdaError } from '../../lib/errors.ts';
import { FORMATS } from '../../providers/registry.ts';
import { UpstreamError } from '../../providers/upstream-client.ts';
import type { AppContext } from '../app-context.ts';
import { parseJsonBody } from '../model-call.ts';
import { upstreamHeaders } from '../upstream-headers.ts';

/** POST /v1/messages/count_tokens: forwarded as sent to the Anthropic-format provider for the model. */
export function countTokensRoutes(app: AppContext): Router {
  const r = Router();
  r.post('/v1/messages/count_tokens', async (req, res) => {
    const { raw, body } = parseJsonBody(req.body);
    const model = typeof body.model === 'string' ? body.model : '';
    if (!model)
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'model must be a string', { param: 'model' });
    const provider = app.registry.resolve('anthropic', model);
    if (!provider)
      throw new OdaError(
        'ODA_ERR_NO_PROVIDER',
        404,
        `no configured anthropic provider serves model "${model}"`,
      );
    const adapter = FORMATS.anthropic;
    try {
      const up = await app.upstream.send({
        url: adapter.upstreamUrl(provider.config.baseUrl, req.originalUrl),
        headers: upstreamHeaders(req.headers, adapter, provider.config.apiKey, app.passThroughCredentials),
        body: raw,
      });
      const text = await up.body.text();
      const ct = up.headers['content-type'];
      if (ct) res.setHeader('content-type', ct);
      res.status(up.status).end(text);
    } catch (e) {
      if (e instanceof UpstreamError && e.code === 'timeout') {
        throw new OdaError('ODA_ERR_UPSTREAM_TIMEOUT', 504, `provider "${provider.config.name}" timed out`, {
          cause: e,
        });
      }
      throw new OdaError(
        'ODA_ERR_UPSTREAM_UNREACHABLE',
        502,
        `provider "${provider.config.name}" is unreachable: ${(e as Error).message}`,
        { cause: e },
      );
    }
  });
  return r;
}
