import type { GatewayErrorInfo } from '../provider.ts';
import { isObj, str } from '../wire-json.ts';

const TYPES: Record<GatewayErrorInfo['kind'], string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  not_found: 'not_found_error',
  request_too_large: 'request_too_large',
  rate_limit: 'rate_limit_error',
  api_error: 'api_error',
  overloaded: 'overloaded_error',
  timeout: 'timeout_error',
};

/**
 * An Anthropic-shaped error body: `{"type":"error","error":{"type","message"}}`.
 * @see https://docs.anthropic.com/en/api/errors
 */
export function anthropicErrorBody(info: GatewayErrorInfo): unknown {
  return { type: 'error', error: { type: TYPES[info.kind], message: info.message } };
}

/** The type and message of an Anthropic error body (also the edge's 413 without a top-level type). */
export function anthropicErrorText(bodyText: string): string {
  try {
    const o = JSON.parse(bodyText) as { error?: { type?: unknown; message?: unknown } };
    if (o && typeof o === 'object' && o.error && typeof o.error === 'object') {
      return [o.error.type, o.error.message].filter((v) => typeof v === 'string').join(' ');
    }
  } catch {
    // not JSON: classify on the raw text
  }
  return bodyText;
}

/**
 * The message of an error body sent as a 2xx answer (a proxy or compatible server that answers
 * 200 with `{"type":"error","error":{...}}`, or the edge's shape without a top-level `type`), or
 * undefined for a message.
 * @see https://docs.anthropic.com/en/api/errors
 */
export function anthropicInBandError(value: unknown): string | undefined {
  if (!isObj(value) || !(value.type === 'error' || (value.type === undefined && isObj(value.error))))
    return undefined;
  return (isObj(value.error) ? str(value.error.message) : undefined) || 'error';
}
