/**
 * Error bodies of the Responses API: the gateway's own errors (OpenAI's shape), and the readable
 * fields of a provider's error, whichever of its shapes it came in:
 * - an HTTP error: `{"error":{"message","type","param","code"}}`;
 * - an `error` stream event: `{"type":"error","code","message","param","sequence_number"}`, or
 *   with the same fields nested under `error` (as the API sends it);
 * - a `response.failed` stream event: `{"type":"response.failed","response":{"error":{"code","message"}}}`.
 * @see https://platform.openai.com/docs/guides/error-codes
 * @see https://platform.openai.com/docs/api-reference/responses-streaming/error
 */
import type { GatewayErrorInfo } from '../provider.ts';
import { openaiErrorBody } from '../openai/openai-error.ts';
import { isObj, str, type Obj } from '../wire-json.ts';

/** The gateway's own error in OpenAI's shape, as the Responses API answers errors. */
export function responsesErrorBody(info: GatewayErrorInfo): unknown {
  return openaiErrorBody(info);
}

/** What an error says, whichever shape carried it. */
export interface ResponsesErrorFields {
  code: string | undefined;
  type: string | undefined;
  message: string | undefined;
  param: string | undefined;
}

/** The error object inside a parsed body: `error`, `response.error`, or the body itself. */
function errorObject(body: Obj): Obj {
  if (isObj(body.error)) return body.error;
  if (isObj(body.response) && isObj(body.response.error)) return body.response.error;
  return body;
}

/** The fields of an error body or error event; undefined when the text is not a JSON object. */
export function responsesErrorFields(bodyText: string): ResponsesErrorFields | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    return undefined;
  }
  const first: unknown = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!isObj(first)) return undefined;
  const err = errorObject(first);
  const code = typeof err.code === 'number' ? String(err.code) : str(err.code);
  // An event's own `type` (`error`, `response.failed`) is not the error's type.
  const type = err === first ? undefined : str(err.type);
  return { code, type, message: str(err.message), param: str(err.param) };
}

/** The readable text of an error body: code, type and message. */
export function responsesErrorText(bodyText: string): string {
  const fields = responsesErrorFields(bodyText);
  if (!fields) return bodyText;
  return [fields.code, fields.type, fields.message].filter((v) => v !== undefined).join(' ');
}

/** Error codes that fail a request for what it sent (HTTP 400 when answered before the stream). */
const REQUEST_ERROR =
  /^(context_length_exceeded|invalid_|image_|empty_image|unsupported_image|failed_to_download_image|bio_policy|data_residency_mismatch)/;

/**
 * The HTTP status the provider would have answered for an error it sent inside a stream instead:
 * 400 for an error in the request, 429 for rate limits and quota, 500 otherwise.
 */
export function statusForStreamError(fields: ResponsesErrorFields): number {
  const code = fields.code ?? '';
  if (code === 'rate_limit_exceeded' || code === 'insufficient_quota' || fields.type === 'rate_limit_error')
    return 429;
  if (REQUEST_ERROR.test(code) || fields.type === 'invalid_request_error') return 400;
  return 500;
}

/** The HTTP error body (OpenAI's shape) for an error that arrived as a stream event. */
export function httpBodyForStreamError(fields: ResponsesErrorFields, status: number): string {
  const type =
    fields.type ??
    (status === 400 ? 'invalid_request_error' : status === 429 ? 'rate_limit_error' : 'server_error');
  return JSON.stringify({
    error: { message: fields.message ?? '', type, param: fields.param ?? null, code: fields.code ?? null },
  });
}

/**
 * The message of a 2xx JSON answer that says the call failed: an error body sent with 200
 * (`{"error":{...}}`), or a response whose `status` is `failed` (its `error.message`); undefined
 * for any other answer (a completed or incomplete response has `error: null`).
 */
export function responsesInBandError(value: unknown): string | undefined {
  const first: unknown = Array.isArray(value) ? value[0] : value;
  if (!isObj(first)) return undefined;
  if (isObj(first.error)) return str(first.error.message) || 'error';
  if (first.status === 'failed') return 'response.failed';
  return undefined;
}
