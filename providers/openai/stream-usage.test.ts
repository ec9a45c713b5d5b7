/**
 * The ask for a streamed Chat Completions answer's usage, as the request view makes and takes it
 * back; the refusals of `stream_options` told from other refusals; the usage-only chunk told from
 * the other chunks of a stream.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenaiRequestView } from './request-view.ts';
import { classifyOpenaiRefusal } from './openai-refusal-classifier.ts';
import { isUsageOnlyChunk, refusesStreamOptions } from './stream-usage.ts';
import { unknownFieldRefusal, type UnknownFieldStyle } from '../../test/fake-provider/fake-unknown-field.ts';

type Obj = Record<string, unknown>;

const streamed = (extra: Obj = {}): Obj => ({
  model: 'gpt-x',
  messages: [{ role: 'user', content: 'hi' }],
  stream: true,
  ...extra,
});

describe('askStreamUsage', () => {
  test('a stream without stream_options gets them; taken back, the member is gone again', () => {
    const body = streamed();
    const view = createOpenaiRequestView(body);
    assert.equal(view.askStreamUsage?.(), true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal(view.changed, true);
    assert.deepEqual([...view.editedPlaces!().members], ['stream_options']);
    assert.equal(view.removeAddedStreamUsage?.(), 'whole');
    assert.deepEqual(body, streamed());
    // Taken back once, never asked again; nothing more to take back.
    assert.equal(view.askStreamUsage?.(), false);
    assert.equal(view.removeAddedStreamUsage?.(), undefined);
  });

  test("merged into the client's options, its object left as it came and put back", () => {
    const own = { include_usage: false, include_obfuscation: false };
    const body = streamed({ stream_options: own });
    const view = createOpenaiRequestView(body);
    assert.equal(view.askStreamUsage?.(), true);
    assert.deepEqual(body.stream_options, { include_usage: true, include_obfuscation: false });
    assert.deepEqual(own, { include_usage: false, include_obfuscation: false });
    assert.equal(view.removeAddedStreamUsage?.(), 'merged');
    assert.equal(body.stream_options, own);
  });

  test('null options become the ask, and null again when taken back', () => {
    const body = streamed({ stream_options: null });
    const view = createOpenaiRequestView(body);
    assert.equal(view.askStreamUsage?.(), true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal(view.removeAddedStreamUsage?.(), 'whole');
    assert.equal(body.stream_options, null);
  });

  const untouched: Array<[string, Obj]> = [
    ['a client that asked', streamed({ stream_options: { include_usage: true } })],
    ['no stream', { model: 'gpt-x', messages: [], stream: false }],
    ['stream unset', { model: 'gpt-x', messages: [] }],
    ['options that are no object (the provider says what is wrong)', streamed({ stream_options: 'yes' })],
    ['options that are a list', streamed({ stream_options: [] })],
  ];
  for (const [name, body] of untouched) {
    test(`left as sent: ${name}`, () => {
      const before = JSON.stringify(body);
      const view = createOpenaiRequestView(body);
      assert.equal(view.askStreamUsage?.(), false);
      assert.equal(view.changed, false);
      assert.equal(JSON.stringify(body), before);
      assert.equal(view.removeAddedStreamUsage?.(), undefined);
    });
  }
});

describe('refusesStreamOptions', () => {
  const styles: UnknownFieldStyle[] = ['openai', 'fastapi', 'google', 'unrecognized-argument'];
  for (const style of styles) {
    test(`an unknown-field refusal of stream_options (${style}) is one`, () => {
      const reply = unknownFieldRefusal(style, 'stream_options', { include_usage: true });
      assert.ok('json' in reply);
      const text = JSON.stringify(reply.json);
      assert.equal(refusesStreamOptions(reply.status!, text), true);
      assert.deepEqual(classifyOpenaiRefusal(reply.status!, text, 0), { kind: 'stream-options-refused' });
    });
  }

  const named: Array<[string, number, string]> = [
    [
      'a message that names the field',
      400,
      '{"error":{"message":"stream_options is not supported by this server","type":"invalid_request_error"}}',
    ],
    [
      "OpenAI's param",
      400,
      '{"error":{"message":"Invalid value","type":"invalid_request_error","param":"stream_options","code":null}}',
    ],
    [
      'an older vLLM error object',
      400,
      `{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted'}]","type":"BadRequestError","code":400}`,
    ],
    ['a plain-text body', 400, 'Bad Request: unsupported field stream_options'],
  ];
  for (const [name, status, body] of named) {
    test(`is one: ${name}`, () => {
      assert.equal(refusesStreamOptions(status, body), true);
    });
  }

  const other: Array<[string, number, string]> = [
    ['a server error naming it', 500, '{"error":{"message":"stream_options handler crashed"}}'],
    [
      'a refusal of another field, the request echoed in its input',
      422,
      JSON.stringify({
        detail: [
          {
            type: 'missing',
            loc: ['body', 'messages'],
            msg: 'Field required',
            input: { model: 'm', stream: true, stream_options: { include_usage: true } },
          },
        ],
      }),
    ],
    [
      'a refusal of another field',
      400,
      '{"error":{"message":"Unknown parameter: \'prompt_cache_key\'.","param":"prompt_cache_key","code":"unknown_parameter"}}',
    ],
    [
      'a context overflow',
      400,
      '{"error":{"message":"This model\'s maximum context length is 100 tokens.","code":"context_length_exceeded"}}',
    ],
  ];
  for (const [name, status, body] of other) {
    test(`is none: ${name}`, () => {
      assert.equal(refusesStreamOptions(status, body), false);
    });
  }
});

describe('isUsageOnlyChunk', () => {
  const event = (data: string, eol = '\n') => Buffer.from(`data: ${data}${eol}${eol}`);
  const usage = '{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}';

  test("OpenAI's usage-only chunk is one, however it is spaced", () => {
    const chunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":${usage}}`;
    assert.equal(isUsageOnlyChunk(event(chunk)), true);
    assert.equal(isUsageOnlyChunk(event(chunk, '\r\n')), true);
    const spaced = JSON.stringify(JSON.parse(chunk), null, 1).replace(/\n/g, ' ');
    assert.match(spaced, /"choices": \[\]/);
    assert.equal(isUsageOnlyChunk(event(spaced)), true);
  });

  const not: Array<[string, Buffer]> = [
    [
      'a chunk with a choice and usage null',
      event('{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}'),
    ],
    [
      'a last chunk with its choice and the usage (some compatible servers)',
      event(`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":${usage}}`),
    ],
    ['an empty choice list without usage', event('{"id":"c","choices":[],"usage":null}')],
    ['an error chunk', event(`{"error":{"message":"boom"},"choices":[],"usage":${usage}}`)],
    ['[DONE]', event('[DONE]')],
    ['a named event', Buffer.from(`event: usage\ndata: {"choices":[],"usage":${usage}}\n\n`)],
    ['a comment', Buffer.from(': keep-alive\n\n')],
    ['text that only mentions it', event('{"choices":[{"delta":{"content":"\\"choices\\":[]"}}]}')],
  ];
  for (const [name, bytes] of not) {
    test(`is none: ${name}`, () => {
      assert.equal(isUsageOnlyChunk(bytes), false);
    });
  }
});
