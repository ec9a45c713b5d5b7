/**
 * The OpenAI Responses API as the fake provider speaks it: response objects and output items in
 * their real shapes, the real event sequence of a streamed answer (with `sequence_number`s), the
 * API's error bodies, and a store of created responses for the `/v1/responses/{id}` routes.
 * Shapes: https://platform.openai.com/docs/api-reference/responses (and the `openai` SDK's types).
 */
import type { SseEvent } from './fake-bodies.ts';
import type { StreamHold } from './fake-provider.ts';
import { openaiError } from './fake-bodies.ts';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A 48-hex-digit id body, like the API's (`resp_68c1...`), from a counter. */
function hexId(prefix: string, n: number, salt: number): string {
  const hex = (n * 2654435761 + salt).toString(16).padStart(12, '0');
  return `${prefix}_${hex.repeat(4).slice(0, 48)}`;
}

/** An assistant `message` output item holding `text`. */
export function responsesMessage(text: string, id = 'msg_fake'): Obj {
  return {
    id,
    type: 'message',
    status: 'completed',
    content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
    role: 'assistant',
  };
}

/** A `function_call` output item. */
export function responsesFunctionCall(name: string, args: string, callId: string, id = `fc_${callId}`): Obj {
  return { id, type: 'function_call', status: 'completed', arguments: args, call_id: callId, name };
}

/** A `reasoning` output item with a summary and (as with `include: ['reasoning.encrypted_content']`) encrypted content. */
export function responsesReasoning(summary: string, encrypted?: string, id = 'rs_fake'): Obj {
  return {
    id,
    type: 'reasoning',
    ...(encrypted !== undefined && { encrypted_content: encrypted }),
    summary: [{ type: 'summary_text', text: summary }],
  };
}

/** The error the API answers (or streams) when the input is over the model's context window. */
export const responsesContextError = {
  code: 'context_length_exceeded',
  message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
  param: 'input',
  type: 'invalid_request_error',
};

export const responsesBodies = {
  contextLength: () =>
    openaiErrorWithParam(responsesContextError.message, responsesContextError.code, 'input'),
  tooManyImages: (n: number, max: number) =>
    openaiErrorWithParam(
      `Too many images in request: ${n} images provided, but the model supports a maximum of ${max} images.`,
      null,
      'input',
    ),
  imageTooLarge: (param: string, bytes: number, max: number) =>
    openaiErrorWithParam(
      `Invalid '${param}': image of ${bytes} bytes is larger than the ${max} bytes allowed.`,
      'image_too_large',
      param,
    ),
  notFound: (id: string) => openaiErrorWithParam(`Response with id '${id}' not found.`, null, null),
  itemNotFound: (id: string) => openaiErrorWithParam(`Item with id '${id}' not found.`, null, 'input'),
  previousNotFound: (id: string) =>
    openaiErrorWithParam(
      `Previous response with id '${id}' not found.`,
      'previous_response_not_found',
      'previous_response_id',
    ),
  cannotCancel: () =>
    openaiErrorWithParam('Only responses created with background=true can be cancelled.', null, null),
};

function openaiErrorWithParam(message: string, code: string | null, param: string | null) {
  const body = openaiError(message, code);
  return { error: { ...body.error, param } };
}

/** What a scripted or default Responses answer holds; the rest of the response comes from the request. */
export interface ResponsesScript {
  output: Obj[];
  status?: 'completed' | 'incomplete' | 'failed';
  /** For `failed`: the error of the response (streamed as `response.failed`). */
  error?: { code: string; message: string };
  /** For `incomplete`: why (`max_output_tokens`, `content_filter`). */
  incompleteReason?: string;
  /** Pieces the text of message items is streamed in (default: word by word). */
  pieces?: string[];
  /** For a streamed answer: hold the stream open after this many events (see `FakeReply`). */
  holdAfter?: StreamHold;
}

/** The response object for `request`, as the API returns it and `response.completed` carries it. */
export function responsesObject(
  request: Obj,
  script: ResponsesScript,
  id: string,
  createdAt: number,
  inputTokens: number,
): Obj {
  const status = script.status ?? 'completed';
  const outputTokens = script.output.reduce((n, item) => n + Math.ceil(JSON.stringify(item).length / 16), 0);
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: request.background === true,
    error:
      status === 'failed' ? (script.error ?? { code: 'server_error', message: 'The model failed.' }) : null,
    incomplete_details:
      status === 'incomplete' ? { reason: script.incompleteReason ?? 'max_output_tokens' } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    max_tool_calls: request.max_tool_calls ?? null,
    model: typeof request.model === 'string' ? request.model : 'gpt-5',
    output: script.output,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    reasoning: request.reasoning ?? { effort: null, summary: null },
    safety_identifier: null,
    service_tier: 'default',
    store: request.store ?? true,
    temperature: request.temperature ?? 1,
    text: request.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_logprobs: 0,
    top_p: request.top_p ?? 1,
    truncation: request.truncation ?? 'disabled',
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    },
    user: null,
    metadata: request.metadata ?? {},
  };
}

/** Splits text into word pieces (each with its leading space), as a model streams it. */
function wordPieces(text: string): string[] {
  return text.match(/\s*\S+/g) ?? (text === '' ? [] : [text]);
}

/** Builds a stream's events, numbering them from 0. */
class EventList {
  readonly events: SseEvent[] = [];
  add(type: string, fields: Obj): void {
    this.events.push({
      event: type,
      data: JSON.stringify({ type, sequence_number: this.events.length, ...fields }),
    });
  }
}

/** The events of one output item, from `added` to `done`. */
function itemEvents(list: EventList, item: Obj, outputIndex: number, pieces: string[] | undefined): void {
  const id = item.id;
  switch (item.type) {
    case 'message': {
      list.add('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', content: [] },
      });
      const content = Array.isArray(item.content) ? item.content : [];
      content.forEach((part, contentIndex) => {
        const at = { item_id: id, output_index: outputIndex, content_index: contentIndex };
        const p = isObj(part) ? part : {};
        const text = typeof p.text === 'string' ? p.text : '';
        list.add('response.content_part.added', { ...at, part: { ...p, text: '' } });
        for (const delta of pieces ?? wordPieces(text)) {
          list.add('response.output_text.delta', { ...at, delta, logprobs: [], obfuscation: 'fk' });
        }
        list.add('response.output_text.done', { ...at, text, logprobs: [] });
        list.add('response.content_part.done', { ...at, part: p });
      });
      break;
    }
    case 'function_call': {
      list.add('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      const args = typeof item.arguments === 'string' ? item.arguments : '';
      const at = { item_id: id, output_index: outputIndex };
      for (let i = 0; i < args.length; i += 16) {
        list.add('response.function_call_arguments.delta', {
          ...at,
          delta: args.slice(i, i + 16),
          obfuscation: 'fk',
        });
      }
      list.add('response.function_call_arguments.done', { ...at, arguments: args });
      break;
    }
    case 'reasoning': {
      list.add('response.output_item.added', { output_index: outputIndex, item: { ...item, summary: [] } });
      const summary = Array.isArray(item.summary) ? item.summary : [];
      summary.forEach((part, summaryIndex) => {
        const at = { item_id: id, output_index: outputIndex, summary_index: summaryIndex };
        const text = isObj(part) && typeof part.text === 'string' ? part.text : '';
        list.add('response.reasoning_summary_part.added', {
          ...at,
          part: { type: 'summary_text', text: '' },
        });
        for (const delta of wordPieces(text)) {
          list.add('response.reasoning_summary_text.delta', { ...at, delta, obfuscation: 'fk' });
        }
        list.add('response.reasoning_summary_text.done', { ...at, text });
        list.add('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text } });
      });
      break;
    }
    default:
      list.add('response.output_item.added', { output_index: outputIndex, item });
  }
  list.add('response.output_item.done', { output_index: outputIndex, item });
}

/** The whole event stream of `response`: created, in progress, every item, then completed/incomplete/failed. */
export function responsesEvents(response: Obj, pieces?: string[]): SseEvent[] {
  const list = new EventList();
  const started = {
    ...response,
    status: 'in_progress',
    output: [],
    usage: null,
    error: null,
    incomplete_details: null,
  };
  list.add('response.created', { response: started });
  list.add('response.in_progress', { response: started });
  const output = Array.isArray(response.output) ? response.output : [];
  output.forEach((item, i) => {
    if (isObj(item)) itemEvents(list, item, i, pieces);
  });
  const closing =
    response.status === 'failed'
      ? 'response.failed'
      : response.status === 'incomplete'
        ? 'response.incomplete'
        : 'response.completed';
  list.add(closing, { response });
  return list.events;
}

/**
 * A stream the API fails before any output: created, in progress, then `response.failed` (with the
 * response's `error`) or an `error` event (the error's fields nested under `error`, as sent).
 */
export function responsesFailedEvents(
  response: Obj,
  error: { code: string | null; message: string; param?: string | null; type?: string },
  via: 'response.failed' | 'error',
): SseEvent[] {
  const list = new EventList();
  const started = { ...response, status: 'in_progress', output: [], usage: null };
  list.add('response.created', { response: started });
  list.add('response.in_progress', { response: started });
  if (via === 'response.failed') {
    list.add('response.failed', {
      response: { ...started, status: 'failed', error: { code: error.code, message: error.message } },
    });
  } else {
    list.add('error', {
      error: {
        type: error.type ?? 'invalid_request_error',
        code: error.code,
        message: error.message,
        param: error.param ?? null,
      },
    });
  }
  return list.events;
}

/** A response the fake created, with the input items it answered (ids added, as the API does). */
export interface StoredResponse {
  response: Obj;
  inputItems: Obj[];
  /** A background response still running: the response it will be once retrieved. */
  finished?: Obj;
}

/** The input items of a request as `input_items` lists them: a string input is one user message. */
export function storedInputItems(request: Obj, idOf: (n: number) => string): Obj[] {
  const input = request.input;
  const items: unknown[] =
    typeof input === 'string'
      ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }]
      : Array.isArray(input)
        ? input
        : [];
  return items.filter(isObj).map((item, i) => ({ id: idOf(i), ...item }));
}

/** Ids the fake hands out: response ids and input item ids, deterministic per fake. */
export function responseIds(counter: number): { response: string; item: (n: number) => string } {
  return {
    response: hexId('resp', counter, 0x68c1),
    item: (n) => hexId('msg', counter * 1000 + n, 0x7a2e),
  };
}

/** Input images of a Responses body: their `param` path and decoded size. */
export function responsesImages(body: Obj): Array<{ param: string; bytes: number }> {
  const out: Array<{ param: string; bytes: number }> = [];
  const size = (url: unknown) =>
    typeof url === 'string' && url.startsWith('data:')
      ? Buffer.byteLength(url.slice(url.indexOf(',') + 1), 'base64')
      : 0;
  const input = Array.isArray(body.input) ? body.input : [];
  input.forEach((item, i) => {
    if (!isObj(item)) return;
    if (item.type === 'computer_call_output' && isObj(item.output)) {
      out.push({ param: `input[${i}].output.image_url`, bytes: size(item.output.image_url) });
      return;
    }
    for (const key of ['content', 'output']) {
      const parts = item[key];
      if (!Array.isArray(parts)) continue;
      parts.forEach((part, j) => {
        if (isObj(part) && part.type === 'input_image') {
          out.push({ param: `input[${i}].${key}[${j}].image_url`, bytes: size(part.image_url) });
        }
      });
    }
  });
  return out;
}
