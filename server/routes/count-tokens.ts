import { Router } from 'express';
import { OdaError } from '../../lib/errors.ts';
import { FORMATS } from '../../providers/registry.ts';
import { toUpstreamError } from '../../providers/upstream-client.ts';
import { buildUpstreamUrl, forwardedQuery } from '../../providers/upstream-url.ts';
import { copyHeaders } from '../deliver.ts';
import { upstreamFailure } from '../upstream-failure.ts';
import type { AppContext } from '../app-context.ts';
import { parseJsonBody } from '../json-body.ts';
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
    const url = buildUpstreamUrl(
      provider.config.baseUrl,
      adapter.apiPath('/v1/messages/count_tokens'),
      forwardedQuery(req.query as Record<string, unknown>, { beta: ['true'] }),
    );
    let up;
    try {
      up = await app.upstream.send({
        url,
        headers: upstreamHeaders(
          req.headers,
          adapter,
          provider.config.apiKey,
          app.passThroughCredentials,
          provider.config.anthropicBetas,
        ),
        body: raw,
      });
    } catch (e) {
      throw upstreamFailure(toUpstreamError(e), provider.config.name);
    }
    const text = await up.body.text().catch((e: unknown) => {
      throw upstreamFailure(toUpstreamError(e), provider.config.name);
    });
    copyHeaders(res, up.headers);
    res.status(up.status).end(text);
  });
  return r;
}
