/**
 * A streamed Chat Completions request's `stream_options.include_usage`. OpenAI sends a stream's
 * usage only when the request asks for it (a last chunk with `"choices": []` and the usage); most
 * clients do not ask, and a stream without usage cannot be billed. The gateway asks on their
 * behalf (SPEC section 11) and hides the chunk from a client that did not ask (server/deliver.ts).
 * https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options
 *
 * The ask is merged into the request as sent: `stream_options` gets `include_usage: true` after the
 * members the client set (a client's explicit `false` becomes `true`), or is added when the client
 * sent none (or null). It can be taken back (its provider refused the field): the member is then
 * the client's value again, the same object, so it goes out as the client's bytes.
 */
import { refusesField } from '../unknown-field-refusal.ts';
import { isObj } from '../wire-json.ts';
import { readSseText } from '../../lib/sse-reader.ts';
import { openaiErrorText, openaiInBandError } from './openai-error.ts';

/** The Chat Completions body field that holds the stream's options. */
export const STREAM_OPTIONS_FIELD = 'stream_options';

export class StreamUsageField {
  // What the client sent in the member before the view asked: nothing, null, or its object.
  private sent: { value: unknown } | undefined;
  // Taken back once: the view never asks again (its provider refused the field).
  private withdrawn = false;

  constructor(
    private readonly body: Record<string, unknown>,
    private readonly state: { changed: boolean },
  ) {}

  askStreamUsage(): boolean {
    const body = this.body;
    if (this.sent || this.withdrawn || body.stream !== true) return false;
    const options = body[STREAM_OPTIONS_FIELD];
    if (options !== undefined && options !== null && !isObj(options)) return false;
    if (isObj(options) && options.include_usage === true) return false;
    this.sent = { value: options };
    // A new object, not the client's edited: the client's stays as it came, to be put back.
    body[STREAM_OPTIONS_FIELD] = { ...(isObj(options) ? options : {}), include_usage: true };
    this.state.changed = true;
    return true;
  }

  removeAddedStreamUsage(): 'whole' | 'merged' | undefined {
    if (!this.sent) return undefined;
    const { value } = this.sent;
    if (value === undefined) delete this.body[STREAM_OPTIONS_FIELD];
    else this.body[STREAM_OPTIONS_FIELD] = value;
    this.sent = undefined;
    this.withdrawn = true;
    this.state.changed = true;
    return isObj(value) ? 'merged' : 'whole';
  }
}

/**
 * True when a refusal (400, or FastAPI's 422) says the server does not take `stream_options`: an
 * unknown, unsupported or extra field in any wording `refusesField` knows, or an error message
 * (or plain-text body) that names the field. An OpenAI-compatible server that has no stream
 * options says so in its own words ("stream_options is not supported"); a message that names
 * the field is about it, while the request's echo inside a validation error about another field
 * (FastAPI's `input`) is not a message and does not count.
 */
export function refusesStreamOptions(status: number, bodyText: string): boolean {
  if (status !== 400 && status !== 422) return false;
  if (!bodyText.includes(STREAM_OPTIONS_FIELD)) return false;
  return (
    refusesField(status, bodyText, STREAM_OPTIONS_FIELD) ||
    openaiErrorText(bodyText).includes(STREAM_OPTIONS_FIELD) ||
    errorParam(bodyText) === STREAM_OPTIONS_FIELD
  );
}

/** The `error.param` of an OpenAI-shaped error body, when it has one. */
function errorParam(bodyText: string): unknown {
  try {
    const parsed: unknown = JSON.parse(bodyText);
    return isObj(parsed) && isObj(parsed.error) ? parsed.error.param : undefined;
  } catch {
    return undefined;
  }
}

/** A usage-only chunk is a few hundred bytes; a longer event is not one. */
const MAX_USAGE_EVENT_BYTES = 16 * 1024;
const CHOICES = Buffer.from('"choices"');

/** True when `event` has `"choices"` followed by an empty list (`[]`, spaces allowed). */
function hasEmptyChoices(event: Buffer): boolean {
  for (let at = event.indexOf(CHOICES); at !== -1; at = event.indexOf(CHOICES, at + 1)) {
    let i = at + CHOICES.length;
    const skip = () => {
      while (
        i < event.length &&
        (event[i] === 0x20 || event[i] === 0x09 || event[i] === 0x0a || event[i] === 0x0d)
      )
        i++;
    };
    skip();
    if (event[i++] !== 0x3a) continue; // :
    skip();
    if (event[i++] !== 0x5b) continue; // [
    skip();
    if (event[i] === 0x5d) return true; // ]
  }
  return false;
}

/**
 * True when the SSE event `event` (its bytes, as they came) is the usage-only chunk a Chat
 * Completions stream ends with when asked (`"choices": []` and a `usage` object): the chunk the
 * gateway keeps from a client that did not ask for it. Every other chunk is cheap to pass over: only
 * one with an empty choice list is read.
 */
export function isUsageOnlyChunk(event: Buffer): boolean {
  if (event.length > MAX_USAGE_EVENT_BYTES || !hasEmptyChoices(event)) return false;
  const events = readSseText(event.toString('utf8'));
  if (events.length !== 1 || events[0]!.event !== undefined) return false;
  let chunk: unknown;
  try {
    chunk = JSON.parse(events[0]!.data);
  } catch {
    return false;
  }
  return (
    isObj(chunk) &&
    Array.isArray(chunk.choices) &&
    chunk.choices.length === 0 &&
    isObj(chunk.usage) &&
    openaiInBandError(chunk) === undefined
  );
}
