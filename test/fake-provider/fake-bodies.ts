/** Real provider bodies (see provider-errors.md), built by the fake provider. */

export const anthropicError = (type: string, message: string) => ({
  type: 'error',
  error: { type, message },
  request_id: 'req_011CFakeProvider',
});

export const openaiError = (
  message: string,
  code: string | number | null,
  type = 'invalid_request_error',
) => ({
  error: { message, type, param: null, code },
});

export const bodies = {
  openaiContextLength: (max: number, got: number) =>
    openaiError(
      `This model's maximum context length is ${max} tokens. However, your messages resulted in ${got} tokens. Please reduce the length of the messages.`,
      'context_length_exceeded',
    ),
  anthropicPromptTooLong: (got: number, max: number) =>
    anthropicError('invalid_request_error', `prompt is too long: ${got} tokens > ${max} maximum`),
  anthropicTooManyImages: (n: number, max: number) =>
    anthropicError('invalid_request_error', `too many images and documents: ${n} + 0 > ${max}`),
  openaiTooManyImages: (n: number, max: number) =>
    openaiError(`Too many images in request: ${n} > ${max}`, null),
  anthropicImageTooLarge: (path: string, bytes: number, max: number) =>
    anthropicError(
      'invalid_request_error',
      `${path}.image.source.base64: image exceeds 5 MB maximum: ${bytes} bytes > ${max} bytes`,
    ),
  anthropicOverloaded: () => anthropicError('overloaded_error', 'Overloaded'),
  anthropicEmptyText: () =>
    anthropicError('invalid_request_error', 'messages: text content blocks must be non-empty'),
  anthropicRequestTooLarge: () => ({
    error: { type: 'request_too_large', message: 'Request exceeds the maximum size' },
  }),
  openaiServerError: () =>
    openaiError(
      'The server had an error while processing your request. Sorry about that!',
      null,
      'server_error',
    ),
};

export function openaiCompletion(model: string, text: string, promptTokens = 10) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: promptTokens, completion_tokens: 5, total_tokens: promptTokens + 5 },
  };
}

export function anthropicMessage(model: string, text: string, inputTokens = 10) {
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: inputTokens,
      output_tokens: 5,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * An OpenAI chat.completion.chunk stream of `pieces`, then [DONE]. With `includeUsage` (the
 * request's `stream_options.include_usage`) it is as OpenAI sends it when asked: every chunk
 * carries `"usage": null`, and a usage-only chunk (`"choices": []`) comes last before [DONE].
 */
export function openaiStream(model: string, pieces: string[], includeUsage = true): SseEvent[] {
  const chunk = (delta: unknown, finish: string | null) => ({
    data: JSON.stringify({
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    }),
  });
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '' }, null)];
  for (const p of pieces) events.push(chunk({ content: p }, null));
  events.push(chunk({}, 'stop'));
  if (includeUsage) {
    events.push({
      data: JSON.stringify({
        id: 'chatcmpl-fake',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model,
        choices: [],
        usage: { prompt_tokens: 10, completion_tokens: pieces.length, total_tokens: 10 + pieces.length },
      }),
    });
  }
  events.push({ data: '[DONE]' });
  return events;
}

/** An Anthropic Messages event stream of `pieces`, with a ping. */
export function anthropicStream(model: string, pieces: string[]): SseEvent[] {
  const ev = (event: string, data: unknown): SseEvent => ({ event, data: JSON.stringify(data) });
  return [
    ev('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_fake',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 10,
          output_tokens: 1,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    }),
    ev('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
    ev('ping', { type: 'ping' }),
    ...pieces.map((p) =>
      ev('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: p },
      }),
    ),
    ev('content_block_stop', { type: 'content_block_stop', index: 0 }),
    ev('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: pieces.length },
    }),
    ev('message_stop', { type: 'message_stop' }),
  ];
}
