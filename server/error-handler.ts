/** The only place errors become HTTP bodies, in the error shape of the endpoint's format. */
import type { ErrorRequestHandler, Request } from 'express';
import { OdaError, isOdaError } from '../lib/errors.ts';
import { FORMATS } from '../providers/registry.ts';
import type { WireFormat } from '../providers/provider.ts';
import type { Logger } from './logger.ts';

/** Anthropic endpoints answer in Anthropic's shape; everything else in OpenAI's. */
export function formatForPath(path: string): WireFormat {
  return path.startsWith('/v1/messages') ? 'anthropic' : 'openai';
}

/** Turns any thrown value into an OdaError. */
export function toOdaError(err: unknown): OdaError {
  if (isOdaError(err)) return err;
  const e = err as { type?: string; status?: number; statusCode?: number; limit?: number; message?: string };
  if (e?.type === 'entity.too.large') {
    return new OdaError(
      'ODA_ERR_BODY_TOO_LARGE',
      413,
      `request body is larger than the limit of ${e.limit} bytes`,
      {
        cause: err,
      },
    );
  }
  if (e?.type === 'entity.parse.failed') {
    return new OdaError('ODA_ERR_BAD_JSON', 400, `request body is not valid JSON: ${e.message}`, {
      cause: err,
    });
  }
  if (e?.type === 'request.aborted') {
    return new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'request aborted by the client', { cause: err });
  }
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new OdaError('ODA_ERR_INVALID_REQUEST', status, e?.message ?? 'bad request', { cause: err });
  }
  return new OdaError('ODA_ERR_INTERNAL', 500, 'internal gateway error', { cause: err });
}

/** Writes an OdaError in the format of the endpoint that `req` addressed. */
export function sendError(req: Request, res: import('express').Response, err: OdaError): void {
  const adapter = FORMATS[formatForPath(req.path)];
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res
    .status(err.status)
    .json(adapter.errorBody({ kind: err.kind, message: err.message, param: err.param, code: err.code }));
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return function odaErrorHandler(err, req, res, _next) {
    const oda = toOdaError(err);
    if (oda.status >= 500) logger.error({ err, reqId: res.locals.requestId, code: oda.code }, oda.message);
    else logger.info({ reqId: res.locals.requestId, code: oda.code, status: oda.status }, oda.message);
    if (res.headersSent) {
      // Bytes already went out (a stream): the only honest thing left is to end the response.
      res.destroy();
      return;
    }
    sendError(req, res, oda);
  };
}
