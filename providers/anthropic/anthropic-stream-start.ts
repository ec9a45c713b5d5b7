/**
 * How an Anthropic Messages stream starts. The API answers 200 and sends `message_start` before the
 * model has produced anything, so an overload (or any other error) may come as the stream's first
 * event after it: `event: error` with the error body the API would have answered as HTTP. Until a
 * content event has gone to the client, such a stream is a refused answer like an HTTP 529, and
 * the repair loop may retry it (SPEC section 3: nothing is retried once bytes reached the client).
 * @see https://docs.anthropic.com/en/api/messages-streaming
 */
import type { SseEventText, StreamStart } from '../provider.ts';
import { isObj, str } from '../wire-json.ts';

/** Events that say only that the answer exists: nothing of it yet. */
const LIFECYCLE = new Set(['message_start', 'ping']);

/** The HTTP status the API gives each error type. */
const STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/**
 * Reads the first events of a stream, in order: `pending` while only `message_start` and `ping`
 * have come, `failed` (with the status and body of the HTTP error it stands for) when an `error`
 * event comes before any content, `output` otherwise.
 */
export function peekAnthropicStreamStart(events: readonly SseEventText[]): StreamStart {
  for (const { event, data } of events) {
    const text = data.trim();
    if (text === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { kind: 'output' };
    }
    const type = (isObj(parsed) ? str(parsed.type) : undefined) ?? event;
    if (type !== undefined && LIFECYCLE.has(type)) continue;
    if (type === 'error' && isObj(parsed)) {
      const errorType = isObj(parsed.error) ? str(parsed.error.type) : undefined;
      return { kind: 'failed', status: STATUS[errorType ?? ''] ?? 500, bodyText: text };
    }
    return { kind: 'output' };
  }
  return { kind: 'pending' };
}
