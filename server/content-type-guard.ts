/**
 * Every POST body the gateway takes is JSON, and it says so (SPEC section 14): a body sent as
 * anything but `application/json` (parameters such as `charset` allowed) is a 415. Browsers send
 * `text/plain`, form and multipart bodies cross-origin without asking first; a JSON content type
 * makes them ask (a CORS preflight the gateway does not grant), so a page cannot post to it.
 */
import type { RequestHandler } from 'express';
import { OdaError } from '../lib/errors.ts';

/** True when a Content-Type value names application/json, with or without parameters. */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const type = value.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json';
}

/** True when the request carries a body (a length above zero, or a chunked one). */
export function hasBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return headers['transfer-encoding'] !== undefined;
}

/**
 * The POST routes the gateway serves. A POST to any other path is not refused for its content type:
 * it gets the 404 that says the gateway does not serve it (an audio upload, a file upload).
 */
const SERVED_POST =
  /^\/v1\/(chat\/completions|messages(\/count_tokens)?|responses(\/input_tokens|\/compact|\/[^/]+\/cancel)?|embeddings|sessions)\/?$/i;

/** Express middleware: 415 for a POST to a served route whose body is not declared application/json. */
export function jsonContentTypeOnly(): RequestHandler {
  return function requireJsonContentType(req, _res, next) {
    if (req.method !== 'POST' || !hasBody(req.headers) || !SERVED_POST.test(req.path)) return next();
    const type = req.headers['content-type'];
    if (!isJsonContentType(type)) {
      throw new OdaError(
        'ODA_ERR_UNSUPPORTED_MEDIA_TYPE',
        415,
        `request body must be sent as application/json, got ${type === undefined ? 'no content type' : `"${type.slice(0, 100)}"`}`,
        { param: 'content-type' },
      );
    }
    next();
  };
}
