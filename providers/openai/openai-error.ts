import type { GatewayErrorInfo } from '../provider.ts';
import { isObj, str } from '../wire-json.ts';

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

/**
 * The message of an error the provider reports inside a 2xx answer, or undefined for any other
 * value: `{"error":{"message":...}}` (OpenRouter, vLLM; as a stream chunk or as a whole JSON answer
 * sent with 200), a bare `{"object":"error","message":...}` (vLLM's `ErrorResponse` as older
 * compatible servers send it), or Gemini's array of those. See
 * https://openrouter.ai/docs/api-reference/errors#error-during-streaming and vLLM's
 * `create_streaming_error_response` (vllm/entrypoints/openai/serving_engine.py).
 */
export function openaiInBandError(value: unknown): string | undefined {
  const first: unknown = Array.isArray(value) ? value[0] : value;
  if (!isObj(first)) return undefined;
  if (isObj(first.error)) return str(first.error.message) || 'error';
  if (first.object === 'error') return str(first.message) || 'error';
  return undefined;
}

/** The `type` (else the `code`) of an error `openaiInBandError` reads, when it names one. */
export function openaiInBandErrorType(value: unknown): string | undefined {
  const first: unknown = Array.isArray(value) ? value[0] : value;
  if (!isObj(first)) return undefined;
  const error = isObj(first.error) ? first.error : first;
  return str(error.type) ?? (typeof error.code === 'number' ? String(error.code) : str(error.code));
}
