import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readSseText } from '../../lib/sse-reader.ts';
import { classifyOpenaiRefusal } from '../openai/openai-refusal-classifier.ts';
import type { Refusal } from '../provider.ts';
import {
  classifyResponsesRefusal,
  responsesImagePath,
  UNUSABLE_IMAGE_CODES,
} from './responses-refusal-classifier.ts';
import { peekResponsesStreamStart } from './responses-stream-start.ts';

const CONTEXT =
  'Your input exceeds the context window of this model. Please adjust your input and try again.';

/** An HTTP error body of the Responses API. */
const http = (
  message: string,
  code: string | null,
  param: string | null = null,
  type = 'invalid_request_error',
) => JSON.stringify({ error: { message, type, param, code } });

interface Row {
  name: string;
  status: number;
  body: string;
  images?: number;
  expect: Refusal;
}

// Every recorded shape and message of the Responses API, one row each.
const rows: Row[] = [
  {
    name: 'HTTP 400 context_length_exceeded',
    status: 400,
    body: http(CONTEXT, 'context_length_exceeded', 'input'),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'error event, fields nested under error (as the API streams it)',
    status: 200,
    body: JSON.stringify({
      type: 'error',
      sequence_number: 2,
      error: {
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
        message: CONTEXT,
        param: 'input',
      },
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'error event, flat fields (as the SDK types it)',
    status: 200,
    body: JSON.stringify({
      type: 'error',
      code: 'context_length_exceeded',
      message: CONTEXT,
      param: null,
      sequence_number: 2,
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'response.failed event',
    status: 200,
    body: JSON.stringify({
      type: 'response.failed',
      sequence_number: 2,
      response: {
        id: 'resp_1',
        status: 'failed',
        error: { code: 'context_length_exceeded', message: CONTEXT },
      },
    }),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'the message alone, without a code',
    status: 400,
    body: http(CONTEXT, null),
    expect: { kind: 'context-overflow' },
  },
  {
    name: 'image_too_large naming a message image',
    status: 400,
    images: 3,
    body: http('Image too large.', 'image_too_large', 'input[1].content[2].image_url'),
    expect: { kind: 'image-limit', imagePath: ['input', 1, 'content', 2] },
  },
  {
    name: 'image_file_too_large naming a tool output image',
    status: 400,
    images: 3,
    body: http('The image file is too large.', 'image_file_too_large', 'input[6].output[1].image_url'),
    expect: { kind: 'image-limit', imagePath: ['input', 6, 'output', 1] },
  },
  {
    name: 'image_too_large naming a computer screenshot, in response.failed',
    status: 200,
    images: 2,
    body: JSON.stringify({
      type: 'response.failed',
      response: {
        status: 'failed',
        error: { code: 'image_too_large', message: "Invalid 'input[10].output.image_url': image too large." },
      },
    }),
    expect: { kind: 'image-limit', imagePath: ['input', 10, 'output'] },
  },
  {
    name: 'image_too_large naming no image: the oldest goes',
    status: 400,
    images: 2,
    body: http('Image too large.', 'image_too_large'),
    expect: { kind: 'image-limit' },
  },
  {
    name: 'invalid_image naming the image sets it aside',
    status: 400,
    images: 2,
    body: http(
      'The image data you provided does not represent a valid image.',
      'invalid_image',
      'input[3].content[0]',
    ),
    expect: { kind: 'image-limit', imagePath: ['input', 3, 'content', 0] },
  },
  {
    name: 'invalid_image naming no image is final',
    status: 400,
    images: 2,
    body: http('The image data you provided does not represent a valid image.', 'invalid_image'),
    expect: { kind: 'other' },
  },
  {
    name: 'too many images, counts stated',
    status: 400,
    images: 11,
    body: http(
      'Too many images in request: 11 images provided, but the model supports a maximum of 10 images.',
      null,
      'input',
    ),
    expect: { kind: 'image-limit', count: { sent: 11, max: 10 } },
  },
  {
    name: 'too many images, worded as a sentence',
    status: 400,
    images: 11,
    body: http(
      'The request contains too many images: 11 images were provided, but the model supports a maximum of 10 images.',
      null,
    ),
    expect: { kind: 'image-limit', count: { sent: 11, max: 10 } },
  },
  {
    name: 'an image refusal on a request without images is final',
    status: 400,
    body: http('Image too large.', 'image_too_large'),
    expect: { kind: 'other' },
  },
  {
    name: 'rate limit',
    status: 429,
    body: http(
      'Rate limit reached for gpt-5 on tokens per min (TPM).',
      'rate_limit_exceeded',
      null,
      'tokens',
    ),
    expect: { kind: 'transient' },
  },
  {
    name: 'server error',
    status: 500,
    body: http(
      'The server had an error while processing your request. Sorry about that!',
      null,
      null,
      'server_error',
    ),
    expect: { kind: 'transient' },
  },
  {
    name: 'invalid key is final',
    status: 401,
    body: http('Incorrect API key provided: sk-***.', 'invalid_api_key'),
    expect: { kind: 'other' },
  },
  {
    name: 'non-JSON body',
    status: 502,
    body: '<html>Bad Gateway</html>',
    expect: { kind: 'transient' },
  },
];

describe('classifyResponsesRefusal: one row per recorded shape and message', () => {
  for (const row of rows) {
    test(row.name, () => {
      assert.deepEqual(classifyResponsesRefusal(row.status, row.body, row.images ?? 0), row.expect);
    });
  }

  test('every unusable-image code sets aside the image it names', () => {
    for (const code of UNUSABLE_IMAGE_CODES) {
      assert.deepEqual(
        classifyResponsesRefusal(400, http('bad image', code, 'input[2].content[1].image_url'), 1),
        { kind: 'image-limit', imagePath: ['input', 2, 'content', 1] },
        code,
      );
    }
  });

  test('the stated counts are read on Chat Completions too', () => {
    const body = http(
      'Too many images in request: 11 images provided, but the model supports a maximum of 10 images.',
      null,
    );
    assert.deepEqual(classifyOpenaiRefusal(400, body, 11), {
      kind: 'image-limit',
      count: { sent: 11, max: 10 },
    });
  });

  test('image paths from param or message text', () => {
    assert.deepEqual(responsesImagePath('input[0].content[3].image_url'), ['input', 0, 'content', 3]);
    assert.deepEqual(responsesImagePath("Invalid 'input[12].output[0].image_url'."), [
      'input',
      12,
      'output',
      0,
    ]);
    assert.deepEqual(responsesImagePath('input[4].output'), ['input', 4, 'output']);
    assert.equal(responsesImagePath('input'), undefined);
    assert.equal(responsesImagePath(undefined), undefined);
  });
});

const fixture = (name: string) =>
  readSseText(readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8'));

describe('peekResponsesStreamStart', () => {
  test('pending while only lifecycle events have come', () => {
    const events = fixture('stream-tool-call.sse');
    assert.deepEqual(peekResponsesStreamStart(events.slice(0, 0)), { kind: 'pending' });
    assert.deepEqual(peekResponsesStreamStart(events.slice(0, 2)), { kind: 'pending' });
    assert.deepEqual(peekResponsesStreamStart(events.slice(0, 3)), { kind: 'output' });
  });

  test('a response.failed before any output is the refusal the HTTP API would have answered', () => {
    const start = peekResponsesStreamStart(fixture('stream-failed-context.sse'));
    assert.equal(start.kind, 'failed');
    if (start.kind !== 'failed') return;
    assert.equal(start.status, 400);
    assert.deepEqual(JSON.parse(start.bodyText), {
      error: {
        message: CONTEXT,
        type: 'invalid_request_error',
        param: null,
        code: 'context_length_exceeded',
      },
    });
    assert.deepEqual(classifyResponsesRefusal(start.status, start.bodyText, 0), { kind: 'context-overflow' });
  });

  test('an error event before any output likewise', () => {
    const start = peekResponsesStreamStart(fixture('stream-error-context.sse'));
    assert.equal(start.kind, 'failed');
    if (start.kind !== 'failed') return;
    assert.equal(start.status, 400);
    assert.deepEqual(JSON.parse(start.bodyText), {
      error: {
        message: CONTEXT,
        type: 'invalid_request_error',
        param: 'input',
        code: 'context_length_exceeded',
      },
    });
  });

  test('statuses: rate limits 429, server errors and unknown codes 500', () => {
    const failed = (code: string | null) =>
      peekResponsesStreamStart([
        {
          event: 'response.created',
          data: JSON.stringify({ type: 'response.created', response: { id: 'r' } }),
        },
        {
          event: 'response.failed',
          data: JSON.stringify({
            type: 'response.failed',
            response: { status: 'failed', error: { code, message: 'x' } },
          }),
        },
      ]);
    assert.deepEqual(
      [failed('rate_limit_exceeded'), failed('server_error'), failed(null), failed('invalid_prompt')].map(
        (s) => (s.kind === 'failed' ? s.status : s.kind),
      ),
      [429, 500, 500, 400],
    );
  });

  test('a failure after output has started is output, not a refusal', () => {
    const events = fixture('stream-tool-call.sse').slice(0, 4);
    events.push({
      event: 'error',
      data: JSON.stringify({ type: 'error', code: 'server_error', message: 'x' }),
    });
    assert.deepEqual(peekResponsesStreamStart(events), { kind: 'output' });
  });
});
