import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyAnthropicRefusal } from './anthropic/anthropic-refusal-classifier.ts';
import { classifyOpenaiRefusal } from './openai/openai-refusal-classifier.ts';
import type { Refusal } from './provider.ts';

const anthropic = (type: string, message: string) =>
  JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_011CTest' });
const openai = (message: string, code: string | number | null = null, type = 'invalid_request_error') =>
  JSON.stringify({ error: { message, type, param: null, code } });

interface Row {
  name: string;
  classify: (status: number, body: string, images: number) => Refusal;
  status: number;
  body: string;
  images?: number;
  expect: Refusal;
}

// Every recorded real message (provider-errors.md), one row each.
const rows: Row[] = [
  // Anthropic: context overflow
  {
    name: 'anthropic prompt is too long',
    classify: classifyAnthropicRefusal,
    status: 400,
    body: anthropic('invalid_request_error', 'prompt is too long: 209353 tokens > 199999 maximum'),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'anthropic exceed context limit',
    classify: classifyAnthropicRefusal,
    status: 400,
    body: anthropic(
      'invalid_request_error',
      'input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again',
    ),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'anthropic 413 context window',
    classify: classifyAnthropicRefusal,
    status: 413,
    body: anthropic('invalid_request_error', 'Request size exceeds model context window'),
    expect: { kind: 'context-overflow' },
  },
  // Anthropic: images
  {
    name: 'anthropic image exceeds 5 MB',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 2,
    body: anthropic(
      'invalid_request_error',
      'messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 6418576 bytes > 5242880 bytes',
    ),
    expect: { kind: 'image-limit', imagePath: ['messages', 0, 'content', 1] },
  },
  {
    name: 'anthropic image exceeds 5 MB in tool result',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 3,
    body: anthropic(
      'invalid_request_error',
      'messages.168.content.0.tool_result.content.1.image.source.base64: image exceeds 5 MB maximum: 6418576 bytes > 5242880 bytes',
    ),
    expect: { kind: 'image-limit', imagePath: ['messages', 168, 'content', 0, 'content', 1] },
  },
  {
    name: 'anthropic too much media',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 102,
    body: anthropic('invalid_request_error', 'Too much media: 0 document pages + 102 images > 100'),
    expect: { kind: 'image-limit', count: { sent: 102, max: 100 } },
  },
  {
    name: 'anthropic too many images and documents',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 104,
    body: anthropic('invalid_request_error', 'too many images and documents: 104 + 1 > 100'),
    expect: { kind: 'image-limit', count: { sent: 105, max: 100 } },
  },
  {
    name: 'anthropic many-image dimensions',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 30,
    body: anthropic(
      'invalid_request_error',
      'messages.19.content.27.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels',
    ),
    expect: { kind: 'image-limit', imagePath: ['messages', 19, 'content', 27] },
  },
  {
    name: 'anthropic 8000 px dimensions',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 1,
    body: anthropic(
      'invalid_request_error',
      'messages.2.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels',
    ),
    expect: { kind: 'image-limit', imagePath: ['messages', 2, 'content', 0] },
  },
  {
    name: 'anthropic 413 request_too_large with images',
    classify: classifyAnthropicRefusal,
    status: 413,
    images: 5,
    body: JSON.stringify({
      error: { type: 'request_too_large', message: 'Request exceeds the maximum size' },
    }),
    expect: { kind: 'image-limit' },
  },
  {
    name: 'anthropic 413 request_too_large without images',
    classify: classifyAnthropicRefusal,
    status: 413,
    images: 0,
    body: JSON.stringify({
      error: { type: 'request_too_large', message: 'Request exceeds the maximum size' },
    }),
    expect: { kind: 'other' },
  },
  {
    name: 'anthropic image message without images in the request',
    classify: classifyAnthropicRefusal,
    status: 400,
    images: 0,
    body: anthropic('invalid_request_error', 'Too much media: 0 document pages + 102 images > 100'),
    expect: { kind: 'other' },
  },
  // Anthropic: transient
  {
    name: 'anthropic overloaded 529',
    classify: classifyAnthropicRefusal,
    status: 529,
    body: anthropic('overloaded_error', 'Overloaded'),
    expect: { kind: 'transient' },
  },
  {
    name: 'anthropic rate limit 429',
    classify: classifyAnthropicRefusal,
    status: 429,
    body: anthropic('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'),
    expect: { kind: 'transient' },
  },
  {
    name: 'anthropic 500',
    classify: classifyAnthropicRefusal,
    status: 500,
    body: anthropic('api_error', 'Internal server error'),
    expect: { kind: 'transient' },
  },
  {
    name: 'anthropic plain 400',
    classify: classifyAnthropicRefusal,
    status: 400,
    body: anthropic('invalid_request_error', 'messages: roles must alternate between "user" and "assistant"'),
    expect: { kind: 'other' },
  },
  // OpenAI
  {
    name: 'openai context_length_exceeded',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: openai(
      "This model's maximum context length is 16385 tokens. However, your messages resulted in 16468 tokens. Please reduce the length of the messages.",
      'context_length_exceeded',
    ),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'openai requested variant',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: openai(
      "This model's maximum context length is 4097 tokens. However, you requested 4295 tokens (3245 in the messages, 1050 in the completion). Please reduce the length of the messages or completion.",
      'context_length_exceeded',
    ),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'openai responses api overflow',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: openai(
      'Your input exceeds the context window of this model. Please adjust your input and try again.',
      'context_length_exceeded',
    ),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'vllm context',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: JSON.stringify({
      error: {
        message:
          "This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages.",
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'vllm max_tokens too large',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: JSON.stringify({
      object: 'error',
      message:
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778).",
      type: 'BadRequestError',
      param: null,
      code: 400,
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'llama.cpp exceed_context_size_error',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: JSON.stringify({
      error: {
        code: 400,
        message: 'request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it',
        type: 'exceed_context_size_error',
      },
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'ollama context',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: openai(
      'the prompt is longer than the context length currently available to the model; try a smaller prompt',
    ),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'openrouter context',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: JSON.stringify({
      error: {
        code: 400,
        message:
          'This endpoint\'s maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
        metadata: { provider_name: null },
      },
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'gemini array body',
    classify: classifyOpenaiRefusal,
    status: 400,
    body: JSON.stringify([
      {
        error: {
          code: 400,
          message: 'The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).',
          status: 'INVALID_ARGUMENT',
        },
      },
    ]),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'vllm at most 1 image',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 3,
    body: JSON.stringify({
      error: {
        message:
          'At most 1 image(s) may be provided in one request. You can set `--limit-mm-per-prompt` to increase this limit if the model supports it.',
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    }),
    expect: { kind: 'image-limit', count: { sent: 3, max: 1 } },
  },
  {
    name: 'gateway too many images 54 > 30',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 54,
    body: openai('Too many images in request: 54 > 30'),
    expect: { kind: 'image-limit', count: { sent: 54, max: 30 } },
  },
  {
    name: 'gateway too many images 11 > 8',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 11,
    body: openai('Too many images in request: 11 > 8'),
    expect: { kind: 'image-limit', count: { sent: 11, max: 8 } },
  },
  {
    name: 'host 52 images exceeding 50',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 52,
    body: openai('request contains 52 images, exceeding the maximum of 50 allowed per request'),
    expect: { kind: 'image-limit', count: { sent: 52, max: 50 } },
  },
  {
    name: 'host image count 6 exceeds limit 4',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 6,
    body: openai('Image count 6 exceeds limit 4 per request.'),
    expect: { kind: 'image-limit', count: { sent: 6, max: 4 } },
  },
  {
    name: 'host too many images were provided',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 60,
    body: openai('Too many images were provided (60).'),
    expect: { kind: 'image-limit' },
  },
  {
    name: 'host max data-uri',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 251,
    body: openai('Exceeded limit on max data-uri per request: 250'),
    expect: { kind: 'image-limit' },
  },
  {
    name: 'ollama mllama one image',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 2,
    body: openai('this model only supports one image while more than one image requested'),
    expect: { kind: 'image-limit' },
  },
  {
    name: 'openai unsupported image is not a limit',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 1,
    body: openai(
      'You uploaded an unsupported image. Please make sure your image is valid.',
      'image_parse_error',
    ),
    expect: { kind: 'other' },
  },
  {
    name: 'openai responses image_too_large code',
    classify: classifyOpenaiRefusal,
    status: 400,
    images: 1,
    body: openai('The image is too large.', 'image_too_large'),
    expect: { kind: 'image-limit' },
  },
  {
    name: 'openai 429',
    classify: classifyOpenaiRefusal,
    status: 429,
    body: openai('Rate limit reached for gpt-4o', 'rate_limit_exceeded', 'requests'),
    expect: { kind: 'transient' },
  },
  {
    name: 'openai 503',
    classify: classifyOpenaiRefusal,
    status: 503,
    body: openai('The server is overloaded or not ready yet.', null, 'server_error'),
    expect: { kind: 'transient' },
  },
  {
    name: 'openai 408 and 409',
    classify: classifyOpenaiRefusal,
    status: 409,
    body: openai('conflict'),
    expect: { kind: 'transient' },
  },
  {
    name: 'openai 401 is final',
    classify: classifyOpenaiRefusal,
    status: 401,
    body: openai('Incorrect API key provided', 'invalid_api_key'),
    expect: { kind: 'other' },
  },
  {
    name: 'non-JSON body',
    classify: classifyOpenaiRefusal,
    status: 502,
    body: '<html>Bad Gateway</html>',
    expect: { kind: 'transient' },
  },
];

describe('refusal classifiers: one row per recorded provider message', () => {
  for (const row of rows) {
    test(row.name, () => {
      assert.deepEqual(row.classify(row.status, row.body, row.images ?? 0), row.expect);
    });
  }
});
