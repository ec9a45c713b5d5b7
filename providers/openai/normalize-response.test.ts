// normalizeOpenaiResponse and createOpenaiStreamAccumulator: the answer, non-streamed and streamed,
// folds into the same normalized message; stream errors, tool call deltas and the end of a stream.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { normalizeOpenaiResponse } from './normalize.ts';
import { createOpenaiStreamAccumulator } from './openai-stream-accumulator.ts';
import { readSseText } from '../../lib/sse-reader.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');

function accumulate(name: string) {
  const accumulator = createOpenaiStreamAccumulator();
  for (const { event, data } of readSseText(fixture(name))) accumulator.push(event, data);
  return accumulator.result();
}

describe('normalizeOpenaiResponse', () => {
  test('maps content, tool calls, usage and finish reason', () => {
    const response = normalizeOpenaiResponse(JSON.parse(fixture('stream-tool-calls.json')));
    assert.deepEqual(response, {
      message: {
        role: 'model',
        content: [
          { kind: 'text', text: 'Let me check both cities.' },
          {
            kind: 'tool-call',
            id: 'call_Wk3sTq0d1',
            name: 'get_weather',
            args: '{"city":"Oslo","unit":"c"}',
          },
          {
            kind: 'tool-call',
            id: 'call_Pq81zZr4m',
            name: 'get_weather',
            args: '{"city":"Bergen","unit":"c"}',
          },
        ],
      },
      usage: { inputTokens: 1082, outputTokens: 61, cacheReadTokens: 1024 },
      stopReason: 'tool_calls',
      model: 'gpt-4.1-2025-04-14',
      responseId: 'chatcmpl-BZq7x2Lk9TfYwq1',
    });
  });

  test('keeps reasoning_content of compatible servers', () => {
    const response = normalizeOpenaiResponse(JSON.parse(fixture('stream-reasoning.json')));
    assert.deepEqual(response.message.content, [
      { kind: 'reasoning', text: 'The user asks for 17 * 23. 17*20=340, 17*3=51, total 391.' },
      { kind: 'text', text: '17 × 23 = **391**.' },
    ]);
    assert.deepEqual(response.usage, { inputTokens: 24, outputTokens: 96, cacheReadTokens: 0 });
  });

  test("reads a compatible server's own cache count (DeepSeek's prompt_cache_hit_tokens)", () => {
    const completion = (usage: Record<string, unknown>) => ({
      id: 'c1',
      object: 'chat.completion',
      model: 'deepseek-chat',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage,
    });
    // DeepSeek: prompt_tokens = hit + miss, as OpenAI's prompt_tokens include cached_tokens.
    const deepseek = { prompt_tokens: 1500, completion_tokens: 7, total_tokens: 1507 };
    assert.deepEqual(
      normalizeOpenaiResponse(
        completion({ ...deepseek, prompt_cache_hit_tokens: 1280, prompt_cache_miss_tokens: 220 }),
      ).usage,
      { inputTokens: 1500, outputTokens: 7, cacheReadTokens: 1280 },
    );
    // OpenAI's own field wins when both are there; none of them leaves the count out.
    assert.deepEqual(
      normalizeOpenaiResponse(
        completion({
          ...deepseek,
          prompt_cache_hit_tokens: 1280,
          prompt_tokens_details: { cached_tokens: 1024 },
        }),
      ).usage,
      { inputTokens: 1500, outputTokens: 7, cacheReadTokens: 1024 },
    );
    assert.deepEqual(normalizeOpenaiResponse(completion(deepseek)).usage, {
      inputTokens: 1500,
      outputTokens: 7,
    });
  });

  test('a body that is not a completion gives an empty message', () => {
    assert.deepEqual(normalizeOpenaiResponse('nope'), {
      message: { role: 'model', content: [] },
      usage: undefined,
      stopReason: undefined,
      model: undefined,
    });
  });
});

describe('createOpenaiStreamAccumulator', () => {
  for (const name of ['stream-tool-calls', 'stream-reasoning']) {
    test(`${name}: the stream folds into the non-streamed answer`, () => {
      const streamed = accumulate(`${name}.sse`);
      assert.deepEqual(streamed, normalizeOpenaiResponse(JSON.parse(fixture(`${name}.json`))));
      assert.ok(streamed.message.content.length > 0);
    });
  }

  test('ignores [DONE], comments and unparsable data', () => {
    const accumulator = createOpenaiStreamAccumulator();
    accumulator.push(undefined, '[DONE]');
    accumulator.push(undefined, '{not json');
    accumulator.push(undefined, '');
    accumulator.push(undefined, '42');
    accumulator.push(undefined, JSON.stringify({ choices: [{ index: 0, delta: { content: 'ok' } }] }));
    assert.deepEqual(accumulator.result().message.content, [{ kind: 'text', text: 'ok' }]);
  });

  test('an in-stream error ends the answer with stop reason "error"', () => {
    const accumulator = createOpenaiStreamAccumulator();
    accumulator.push(undefined, JSON.stringify({ choices: [{ index: 0, delta: { content: 'par' } }] }));
    accumulator.push(undefined, JSON.stringify({ error: { message: 'Provider returned error', code: 502 } }));
    const result = accumulator.result();
    assert.equal(result.stopReason, 'error');
    assert.deepEqual(result.message.content, [{ kind: 'text', text: 'par' }]);
  });

  const errorChunks: Array<[string, object, string]> = [
    [
      '{"error":{...}} (vLLM, OpenRouter)',
      { error: { message: 'CUDA out of memory', code: 500 } },
      'CUDA out of memory',
    ],
    [
      '{"object":"error"}',
      { object: 'error', message: 'CUDA out of memory', code: 500 },
      'CUDA out of memory',
    ],
    ['an error without a message', { error: { code: 500 } }, 'error'],
  ];
  for (const [name, errorChunk, message] of errorChunks) {
    test(`failure(): ${name} is the answer's failure, and [DONE] after it does not undo it`, () => {
      const accumulator = createOpenaiStreamAccumulator();
      accumulator.push(undefined, JSON.stringify({ choices: [{ index: 0, delta: { content: 'par' } }] }));
      assert.equal(accumulator.failure?.(), undefined);
      accumulator.push(undefined, JSON.stringify(errorChunk));
      accumulator.push(undefined, '[DONE]');
      assert.equal(accumulator.failure?.(), message);
      assert.equal(accumulator.result().stopReason, 'error');
    });
  }

  /** The tool calls a stream of `tool_calls` deltas folds into, as [id, name, args]. */
  function foldToolCalls(deltas: object[][]): Array<[string, string, string]> {
    const accumulator = createOpenaiStreamAccumulator();
    for (const toolCalls of deltas)
      accumulator.push(
        undefined,
        JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: toolCalls } }] }),
      );
    return accumulator
      .result()
      .message.content.flatMap((part) =>
        part.kind === 'tool-call' ? [[part.id, part.name, part.args] as [string, string, string]] : [],
      );
  }
  const fn = (name: string | undefined, args: string) => ({
    function: { ...(name !== undefined && { name }), arguments: args },
  });

  const toolCallStreams: Array<[string, object[][], Array<[string, string, string]>]> = [
    [
      'deltas without index continue the call their first delta opened',
      [
        [{ id: 'call_1', type: 'function', ...fn('get_weather', '') }],
        [fn(undefined, '{"city": ')],
        [fn(undefined, '"Paris"}')],
      ],
      [['call_1', 'get_weather', '{"city": "Paris"}']],
    ],
    [
      'whole calls without index, each with its id (Ollama, Gemini), stay apart',
      [[{ id: 'call_a', ...fn('get_weather', '{}') }], [{ id: 'call_b', ...fn('get_time', '{}') }]],
      [
        ['call_a', 'get_weather', '{}'],
        ['call_b', 'get_time', '{}'],
      ],
    ],
    [
      'two whole calls without index in one delta stay apart',
      [
        [
          { id: 'call_a', ...fn('get_weather', '{}') },
          { id: 'call_b', ...fn('get_time', '{}') },
        ],
      ],
      [
        ['call_a', 'get_weather', '{}'],
        ['call_b', 'get_time', '{}'],
      ],
    ],
    [
      'the same id repeated on every fragment is one call',
      [[{ id: 'call_1', ...fn('get_weather', '{"a"') }], [{ id: 'call_1', ...fn(undefined, ':1}') }]],
      [['call_1', 'get_weather', '{"a":1}']],
    ],
    [
      'an id arriving after the first fragment completes that call',
      [[fn('get_weather', '{"a"')], [{ id: 'call_1', ...fn(undefined, ':1}') }]],
      [['call_1', 'get_weather', '{"a":1}']],
    ],
    [
      'deltas with index still go by their index',
      [
        [{ index: 0, id: 'call_a', ...fn('get_weather', '') }],
        [{ index: 1, id: 'call_b', ...fn('get_time', '{') }],
        [{ index: 0, ...fn(undefined, '{}') }],
        [{ index: 1, ...fn(undefined, '}') }],
      ],
      [
        ['call_a', 'get_weather', '{}'],
        ['call_b', 'get_time', '{}'],
      ],
    ],
  ];
  for (const [name, deltas, expected] of toolCallStreams) {
    test(`tool calls: ${name}`, () => {
      assert.deepEqual(foldToolCalls(deltas), expected);
    });
  }

  test('failure(): the first error is kept; a whole stream has none', () => {
    const failed = createOpenaiStreamAccumulator();
    failed.push(undefined, JSON.stringify({ error: { message: 'first' } }));
    failed.push(undefined, JSON.stringify({ error: { message: 'second' } }));
    assert.equal(failed.failure?.(), 'first');
    const whole = createOpenaiStreamAccumulator();
    for (const { event, data } of readSseText(fixture('stream-tool-calls.sse'))) whole.push(event, data);
    assert.equal(whole.failure?.(), undefined);
    assert.equal(whole.ended(), true);
  });
});

test('ended(): on [DONE] or a finish reason, not on an in-stream error', () => {
  const chunk = (finish: string | null) =>
    JSON.stringify({
      object: 'chat.completion.chunk',
      model: 'm',
      choices: [{ index: 0, delta: { content: 'x' }, finish_reason: finish }],
    });
  const cut = createOpenaiStreamAccumulator();
  cut.push(undefined, chunk(null));
  assert.equal(cut.ended(), false);
  cut.push(undefined, JSON.stringify({ error: { message: 'overloaded' } }));
  assert.equal(cut.ended(), false);
  const finished = createOpenaiStreamAccumulator();
  finished.push(undefined, chunk('stop'));
  assert.equal(finished.ended(), true);
  const done = createOpenaiStreamAccumulator();
  done.push(undefined, '[DONE]');
  assert.equal(done.ended(), true);
});
