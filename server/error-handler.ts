/** The only place errors become HTTP bodies, in the error shape of the endpoint's format. */
import type { ErrorRequestHandler, Request, Response } from 'express';
import { OdaError, isOdaError, type OdaErrorCode } from '../lib/errors.ts';
import { FORMATS } from '../providers/registry.ts';
import type { WireFormat } from '../providers/provider.ts';
import type { Logger } from './logger.ts';
import { cutShort } from './cut-short.ts';
import { requestSource, type LimitedLog } from './limited-log.ts';

/**
 * The error shape a request gets: Anthropic's on the Messages endpoints, OpenAI's on the OpenAI
 * and the gateway's own ones; on `/v1/models` the caller's (`anthropic-version`: Anthropic); on any
 * other path the shape of the format the request looks like (`anthropic-version` or `x-api-key`).
 */
export function formatFor(req: Pick<Request, 'path' | 'headers'>): WireFormat {
  const path = req.path.toLowerCase();
  const h = req.headers;
  if (path.startsWith('/v1/messages')) return 'anthropic';
  if (
    /^\/v1\/(chat|responses|embeddings|sessions|usage)(\/|$)/.test(path) ||
    (path.startsWith('/') && !path.startsWith('/v1/'))
  )
    return 'openai';
  if (/^\/v1\/models(\/|$)/.test(path)) return h['anthropic-version'] !== undefined ? 'anthropic' : 'openai';
  return h['anthropic-version'] !== undefined || h['x-api-key'] !== undefined ? 'anthropic' : 'openai';
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

/**
 * Server errors a retry cannot change (a chat log damaged on disk, a configuration the store
 * refuses): they say `x-should-retry: false`, or an SDK would ask again, twice by default.
 */
const FINAL_SERVER_ERRORS: ReadonlySet<OdaErrorCode> = new Set(['ODA_ERR_LOG_READ', 'ODA_ERR_CONFIG']);

/** Writes an OdaError in the format of the endpoint that `req` addressed. */
export function sendError(req: Request, res: import('express').Response, err: OdaError): void {
  const adapter = FORMATS[formatFor(req)];
  if (FINAL_SERVER_ERRORS.has(err.code)) res.setHeader('x-should-retry', 'false');
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res
    .status(err.status)
    .json(adapter.errorBody({ kind: err.kind, message: err.message, param: err.param, code: err.code }));
}

/** `res.locals` key: the error the stage that threw it has logged already. */
const LOGGED = 'loggedError';

/**
 * Says that `err`, about to be thrown for `res`, is logged already, in a line that knew more (the
 * chat, the call's counts): the error handler renders it without a second line for one failure.
 */
export function markLogged(res: Response, err: unknown): void {
  (res.locals as Record<string, unknown>)[LOGGED] = err;
}

/**
 * Renders what a request threw. A server error is logged at `error`, each one; a refusal (4xx: a
 * wrong key, a 429, a malformed body, an unknown path), which any caller can cause at will, at
 * `info` through `limitedLog`, per code and team (or address, before a team is known).
 */
export function errorHandler(logger: Logger, limitedLog: LimitedLog): ErrorRequestHandler {
  return function odaErrorHandler(err, req, res, _next) {
    const oda = toOdaError(err);
    // An error logged where it was thrown is only rendered here.
    if ((res.locals as Record<string, unknown>)[LOGGED] !== err) {
      const reqId = res.locals.requestId as string | undefined;
      if (oda.status >= 500) logger.error({ err, reqId, code: oda.code }, oda.message);
      else
        limitedLog.write({
          level: 'info',
          kind: `${oda.code} ${oda.status}`,
          source: requestSource(req, res),
          reqId,
          fields: { code: oda.code, status: oda.status },
          msg: oda.message,
        });
    }
    if (res.headersSent) {
      // Bytes already went out (a stream): the only honest thing left is to end the response.
      cutShort(res, 'error');
      return;
    }
    // Refused before its body was in (401, 413, 429...): close instead of draining the rest.
    if (!req.complete) res.setHeader('connection', 'close');
    sendError(req, res, oda);
  };
}
