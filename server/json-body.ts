import { OdaError } from '../lib/errors.ts';
import { decodeUtf8 } from '../lib/utf8.ts';

/** Parses the raw body as a JSON object, refusing anything else with a 400 that names the problem. */
export function parseJsonBody(raw: unknown): { raw: Buffer; body: Record<string, unknown> } {
  const buf = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
  if (buf.length === 0)
    throw new OdaError('ODA_ERR_BAD_JSON', 400, 'request body is empty; expected a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(decodeUtf8(buf));
  } catch (e) {
    throw new OdaError('ODA_ERR_BAD_JSON', 400, `request body is not valid JSON: ${(e as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'request body must be a JSON object');
  }
  return { raw: buf, body: parsed as Record<string, unknown> };
}
