import type { GatewayErrorInfo } from '../provider.ts';

const TYPES: Record<GatewayErrorInfo['kind'], string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  not_found: 'not_found_error',
  request_too_large: 'invalid_request_error',
  rate_limit: 'rate_limit_error',
  api_error: 'api_error',
  overloaded: 'server_error',
  timeout: 'timeout_error',
};

/** An OpenAI-shaped error body: `{"error":{"message","type","param","code"}}`. */
export function openaiErrorBody(info: GatewayErrorInfo): unknown {
  return { error: { message: info.message, type: TYPES[info.kind], param: info.param, code: info.code } };
}

/**
 * Pulls the readable parts out of an OpenAI or OpenAI-compatible error body: the standard
 * `{"error":{...}}`, older vLLM `{"object":"error","message":...}`, and Gemini's JSON array.
 */
export function openaiErrorText(bodyText: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    return bodyText;
  }
  const first = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!first || typeof first !== 'object') return bodyText;
  const o = first as Record<string, unknown>;
  const err = (o.error && typeof o.error === 'object' ? o.error : o) as Record<string, unknown>;
  return [err.code, err.type, err.status, err.message].filter((v) => v !== undefined && v !== null).join(' ');
}
