// normalizeAnthropicResponse and createAnthropicStreamAccumulator: the answer, non-streamed and
// streamed, folds into the same normalized message.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { normalizeAnthropicRequest } from './normalize.ts';
import { createAnthropicStreamAccumulator, normalizeAnthropicResponse } from './normalize-answer.ts';
import { readSseText } from '../../lib/sse-reader.ts';
import { webSearchResult } from './test-web-search-result.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');

function accumulate(name: string) {
  const accumulator = createAnthropicStreamAccumulator();
  for (const { event, data } of readSseText(fixture(name))) accumulator.push(event, data);
  return accumulator.result();
}

describe('normalizeAnthropicResponse', () => {
  test('maps blocks, usage with cache tokens and the stop reason', () => {
    assert.deepEqual(normalizeAnthropicResponse(JSON.parse(fixture('stream-tool-use.json'))), {
      message: {
        role: 'model',
        content: [
          {
            kind: 'reasoning',
            text: 'The user wants the test failure fixed. I should read the test file first.',
            signature:
              'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDCq0eHIDkh8pUUz4iMH3M6tFDGMPLBSvRUH7XpLSNFWD7ja1JX8lHWqWXlDl8WEX1GDMn2Pe3o1oT7ZPwVCoQDY2s8fRWUMILOQ==',
          },
          { kind: 'text', text: "I'll read the failing test first." },
          {
            kind: 'tool-call',
            id: 'toolu_01A09q90qw90lq917835lq9',
            name: 'Read',
            args: '{"file_path":"/repo/test/app.test.ts","limit":200}',
          },
          { kind: 'tool-call', id: 'toolu_01B7sQm2XbH4kK9yG3n8pR1w', name: 'TodoRead', args: '{}' },
        ],
      },
      usage: {
        inputTokens: 472,
        outputTokens: 148,
        cacheReadTokens: 10240,
        cacheWriteTokens: 2048,
        cacheWrite1hTokens: 0,
      },
      stopReason: 'tool_use',
      model: 'claude-sonnet-4-5-20250929',
      responseId: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    });
  });

  test('server tool calls and their results are kept as sent, in the model turn', () => {
    const response = normalizeAnthropicResponse({
      content: [
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'oda' } },
        {
          type: 'web_search_tool_result',
          tool_use_id: 'srvtoolu_1',
          content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
        },
      ],
    });
    assert.deepEqual(response.message.content, [
      {
        kind: 'raw',
        value: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'oda' } },
      },
      {
        kind: 'raw',
        value: {
          type: 'web_search_tool_result',
          tool_use_id: 'srvtoolu_1',
          content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
        },
      },
    ]);
  });
});

describe('one-hour cache writes', () => {
  // Usage as the API gives it when a request's breakpoints ask for both TTLs.
  const usage = {
    input_tokens: 30,
    cache_creation_input_tokens: 5000,
    cache_read_input_tokens: 1200,
    cache_creation: { ephemeral_5m_input_tokens: 1500, ephemeral_1h_input_tokens: 3500 },
    output_tokens: 9,
  };
  const expected = {
    inputTokens: 30,
    outputTokens: 9,
    cacheReadTokens: 1200,
    cacheWriteTokens: 5000,
    cacheWrite1hTokens: 3500,
  };

  test('a whole answer: the one-hour part of the cache writes', () => {
    const response = normalizeAnthropicResponse({ id: 'msg_1', content: [], usage });
    assert.deepEqual(response.usage, expected);
  });

  test('a stream: message_start carries the split, message_delta the output', () => {
    const accumulator = createAnthropicStreamAccumulator();
    const start = {
      type: 'message_start',
      message: { id: 'msg_2', model: 'm', usage: { ...usage, output_tokens: 1 } },
    };
    accumulator.push('message_start', JSON.stringify(start));
    accumulator.push(
      'message_delta',
      JSON.stringify({ type: 'message_delta', delta: {}, usage: { output_tokens: 9 } }),
    );
    accumulator.push('message_stop', JSON.stringify({ type: 'message_stop' }));
    assert.deepEqual(accumulator.result().usage, expected);
  });

  test('without `cache_creation` (older API versions, compatible servers) no write is a one-hour one', () => {
    const { cache_creation: _split, ...plain } = usage;
    const response = normalizeAnthropicResponse({ id: 'msg_3', content: [], usage: plain });
    const { cacheWrite1hTokens: _oneHour, ...rest } = expected;
    assert.deepEqual(response.usage, rest);
  });
});

describe('createAnthropicStreamAccumulator', () => {
  test('the stream folds into the non-streamed answer', () => {
    const streamed = accumulate('stream-tool-use.sse');
    assert.deepEqual(streamed, normalizeAnthropicResponse(JSON.parse(fixture('stream-tool-use.json'))));
    assert.equal(streamed.message.content.length, 4);
  });

  test('an in-stream error keeps what arrived and ends with stop reason "error"', () => {
    assert.deepEqual(accumulate('stream-overloaded.sse'), {
      message: { role: 'model', content: [{ kind: 'text', text: 'Here is the first' }] },
      usage: { inputTokens: 12, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
      stopReason: 'error',
      model: 'claude-sonnet-4-5-20250929',
      responseId: 'msg_01Hq2m7PZ1xv4vGk9CkQ1bJr',
    });
  });

  test('a streamed server tool call and its result fold into the raw blocks the client sends back', () => {
    const accumulator = createAnthropicStreamAccumulator();
    const events: Array<Record<string, unknown>> = [
      { type: 'message_start', message: { id: 'msg_s', model: 'claude-sonnet-4-5', usage: {} } },
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} },
      },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: '{"query":' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"oda"}' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: webSearchResult },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_stop' },
    ];
    for (const e of events) accumulator.push(String(e.type), JSON.stringify(e));
    const serverToolUse = {
      type: 'server_tool_use',
      id: 'srvtoolu_1',
      name: 'web_search',
      input: { query: 'oda' },
    };
    assert.deepEqual(accumulator.result().message.content, [
      { kind: 'raw', value: serverToolUse },
      { kind: 'raw', value: webSearchResult },
    ]);
    // The client sends the same blocks back in its history: they normalize to the same parts.
    const history = normalizeAnthropicRequest({
      model: 'm',
      messages: [{ role: 'assistant', content: [serverToolUse, webSearchResult] }],
    });
    assert.deepEqual(history.messages[0]?.content, accumulator.result().message.content);
  });

  test('a tool input cut mid-stream keeps its JSON text as sent', () => {
    const accumulator = createAnthropicStreamAccumulator();
    accumulator.push(
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}',
    );
    accumulator.push(
      'content_block_delta',
      '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"command\\": \\"ls"}}',
    );
    accumulator.push('bogus', 'not json');
    assert.deepEqual(accumulator.result().message.content, [
      { kind: 'tool-call', id: 't', name: 'Bash', args: '{"command": "ls' },
    ]);
  });
});

test('ended(): only once message_stop arrived', () => {
  const acc = createAnthropicStreamAccumulator();
  acc.push('message_start', JSON.stringify({ type: 'message_start', message: { model: 'm', usage: {} } }));
  acc.push(
    'content_block_start',
    JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  );
  assert.equal(acc.ended(), false);
  acc.push('message_stop', JSON.stringify({ type: 'message_stop' }));
  assert.equal(acc.ended(), true);
});
