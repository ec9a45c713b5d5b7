/**
 * How a Responses stream starts. The API answers 200 and opens the stream before it has looked at
 * the input closely, so a refusal (context overflow, an image it cannot take) may come as the
 * stream's first real event: a `response.failed` or an `error` event right after
 * `response.created` / `response.in_progress`. Until an output event has gone to the client, such
 * a stream is a refusal like an HTTP error, and the repair loop may act on it.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
import type { SseEventText, StreamStart } from '../provider.ts';
import { isObj, str } from '../wire-json.ts';
import { httpBodyForStreamError, responsesErrorFields, statusForStreamError } from './responses-error.ts';

/** Events that only say the response exists: nothing of the answer yet. */
const LIFECYCLE = new Set(['response.created', 'response.queued', 'response.in_progress']);

/**
 * Reads the first events of a stream, in order: `pending` while only lifecycle events (or empty
 * data) have come, `failed` (with the HTTP status and error body the provider would have answered)
 * when a `response.failed` or `error` event comes before any output, `output` otherwise.
 */
export function peekResponsesStreamStart(events: readonly SseEventText[]): StreamStart {
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
    if (type === 'response.failed' || type === 'error') {
      const fields = responsesErrorFields(text) ?? {
        code: undefined,
        type: undefined,
        message: undefined,
        param: undefined,
      };
      const status = statusForStreamError(fields);
      return { kind: 'failed', status, bodyText: httpBodyForStreamError(fields, status) };
    }
    return { kind: 'output' };
  }
  return { kind: 'pending' };
}
