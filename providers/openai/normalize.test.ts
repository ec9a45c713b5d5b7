import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { normalizeOpenaiRequest, normalizeOpenaiResponse } from './normalize.ts';
import { createOpenaiStreamAccumulator } from './openai-stream-accumulator.ts';
import { readSseText } from '../../lib/sse-reader.ts';
import { assertReusedCallIdsNamed } from '../../test/helpers/reused-call-ids.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');

function accumulate(name: string) {
  const accumulator = createOpenaiStreamAccumulator();
  for (const { event, data } of readSseText(fixture(name))) accumulator.push(event, data);
  return accumulator.result();
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { unit: { type: 'string' }, city: { type: 'string' } } },
  },
};

function chatBody(): Record<string, unknown> {
  return {
    model: 'gpt-4.1',
    temperature: 0.2,
    stream: true,
    stream_options: { include_usage: true },
    x_vendor: { any: 'thing' },
    tools: [weatherTool],
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather where this photo was taken?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/p.jpg', detail: 'low' } },
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          { type: 'file', file: { filename: 'trip.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'Looks like Oslo.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [
          { type: 'text', text: '12 C, rain' },
          { type: 'image_url', image_url: { url: 'https://example.com/radar.png' } },
        ],
      },
      { role: 'assistant', content: '12 C and rain.' },
      { role: 'developer', content: 'Tools changed.' },
      { role: 'system', content: 'Late system note.' },
      { role: 'user', content: 'Thanks' },
    ],
  };
}

describe('normalizeOpenaiRequest', () => {
  test('maps roles, content kinds, the system prompt, tools and settings', () => {
    const normalized = normalizeOpenaiRequest(chatBody());
    assert.equal(normalized.model, 'gpt-4.1');
    assert.equal(normalized.system, 'You are terse.\n\nUse metric units.');
    assert.equal(normalized.stream, true);
    assert.deepEqual(normalized.settings, {
      temperature: 0.2,
      stream: true,
      stream_options: { include_usage: true },
      x_vendor: { any: 'thing' },
    });
    assert.deepEqual(normalized.messages, [
      {
        role: 'user',
        content: [
          { kind: 'text', text: 'Weather where this photo was taken?' },
          { kind: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
          { kind: 'image', source: { kind: 'url', url: 'https://example.com/p.jpg' } },
          {
            kind: 'file',
            mediaType: 'audio/wav',
            url: 'data:audio/wav;base64,UklGRg==',
            sha256: sha256('RIFF'),
            bytes: 4,
          },
          {
            kind: 'file',
            name: 'trip.pdf',
            mediaType: 'application/pdf',
            url: 'data:application/pdf;base64,JVBERi0=',
            sha256: sha256('%PDF-'),
            bytes: 5,
          },
        ],
      },
      {
        role: 'model',
        content: [
          { kind: 'reasoning', text: 'Looks like Oslo.' },
          { kind: 'tool-call', id: 'call_1', name: 'get_weather', args: '{"city":"Oslo"}' },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            kind: 'tool-result',
            callId: 'call_1',
            toolName: 'get_weather',
            failed: false,
            content: [
              { kind: 'text', text: '12 C, rain' },
              { kind: 'image', source: { kind: 'url', url: 'https://example.com/radar.png' } },
            ],
          },
        ],
      },
      { role: 'model', content: [{ kind: 'text', text: '12 C and rain.' }] },
      { role: 'developer', content: [{ kind: 'text', text: 'Tools changed.' }] },
      { role: 'system', content: [{ kind: 'text', text: 'Late system note.' }] },
      { role: 'user', content: [{ kind: 'text', text: 'Thanks' }] },
    ]);
  });

  test('keeps files and audio with their content; a part the file kind cannot hold exactly as sent', () => {
    const user = (parts: unknown[]) =>
      normalizeOpenaiRequest({ model: 'm', messages: [{ role: 'user', content: parts }] }).messages[0]
        ?.content;
    assert.deepEqual(user([{ type: 'file', file: { file_id: 'file-abc' } }]), [
      { kind: 'file', name: 'file-abc' },
    ]);
    const exact = [
      { type: 'file', file: { file_id: 'file-abc', filename: 'a.pdf' } },
      {
        type: 'file',
        file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf', extra: 1 },
      },
      { type: 'input_audio', input_audio: { data: 'UklGRg==' } },
    ];
    assert.deepEqual(
      user(exact),
      exact.map((value) => ({ kind: 'raw', value })),
    );
    // Data that is not base64 is still kept as sent, without size or digest.
    assert.deepEqual(user([{ type: 'file', file: { file_data: 'data:application/pdf;base64,@@' } }]), [
      { kind: 'file', mediaType: 'application/pdf', url: 'data:application/pdf;base64,@@' },
    ]);
  });

  test('digests tools over their canonical JSON, independent of key order', () => {
    const [tool] = normalizeOpenaiRequest(chatBody()).tools;
    const canonical =
      '{"function":{"description":"Weather for a city","name":"get_weather","parameters":' +
      '{"properties":{"city":{"type":"string"},"unit":{"type":"string"}},"type":"object"}},"type":"function"}';
    assert.deepEqual(tool, { name: 'get_weather', digest: sha256(canonical) });
    const { name, description, parameters } = weatherTool.function;
    const reordered = { function: { parameters, description, name }, type: 'function' };
    assert.deepEqual(normalizeOpenaiRequest({ model: 'm', messages: [], tools: [reordered] }).tools, [tool]);
    const changed = { ...weatherTool, function: { ...weatherTool.function, description: 'Other' } };
    assert.notEqual(
      normalizeOpenaiRequest({ model: 'm', messages: [], tools: [changed] }).tools[0]?.digest,
      tool?.digest,
    );
  });

  test('without system messages the system prompt is undefined; stream defaults to false', () => {
    const normalized = normalizeOpenaiRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(normalized.system, undefined);
    assert.equal(normalized.stream, false);
    assert.deepEqual(normalized.tools, []);
  });

  test('a call id handed out again: each result is named by its own call, the same as the chat grows', () => {
    // Some OpenAI-compatible servers number calls afresh in every answer (`call_0`).
    const call = (name: string) => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_0', type: 'function', function: { name, arguments: '{}' } }],
    });
    const result = (content: string) => ({ role: 'tool', tool_call_id: 'call_0', content });
    assertReusedCallIdsNamed((messages) => normalizeOpenaiRequest({ model: 'm', messages }), call, result);
  });

  test('malformed input is kept as sent, never thrown on', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.array(fc.jsonValue()), (extra, messages) => {
        const normalized = normalizeOpenaiRequest({ ...extra, messages });
        assert.ok(Array.isArray(normalized.messages));
      }),
    );
    const normalized = normalizeOpenaiRequest({
      messages: [
        null,
        { role: 'user', content: 5 },
        { role: 'assistant', tool_calls: [null, { function: 1 }] },
      ],
      tools: [null, { type: 'function' }],
    });
    assert.deepEqual(normalized.messages, [
      { role: 'user', content: [{ kind: 'raw', value: 5 }] },
      { role: 'model', content: [] },
    ]);
    assert.deepEqual(normalized.tools, []);
  });
});

describe('normalizeOpenaiRequest: every message the model receives, as sent', () => {
  const unknownParts = [
    { type: 'refusal', refusal: 'No.' },
    {
      type: 'part_from_the_future',
      nested: { list: [1, 2.5, 'three', null, true], deep: { k: '\u00e9\n' } },
    },
    { type: 'text', text: 42 },
  ];
  function body(): Record<string, unknown> {
    return {
      model: 'gpt-4.1',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: 'Metric units.' },
        { role: 'user', content: 'Hi', name: 'alice' },
        { role: 'critic', content: 'Be brief.', weight: 2 },
        { role: 'system', content: [{ type: 'text', text: 'Late note.' }, unknownParts[1]] },
        { role: 'developer', content: 'Late developer note.', name: 'ops' },
        { role: 'user', content: [{ type: 'text', text: 'Look:' }, ...unknownParts] },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Calling.' }, unknownParts[1]],
          name: 'bot',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'ok' }, unknownParts[1]] },
      ],
    };
  }

  test('system and developer messages after the system prompt stay in place, with all their parts', () => {
    const n = normalizeOpenaiRequest(body());
    assert.equal(n.system, 'You are terse.\n\nMetric units.');
    assert.deepEqual(
      n.messages.map((m) => m.role),
      ['user', 'other', 'system', 'developer', 'user', 'model', 'tool'],
    );
    assert.deepEqual(n.messages[2], {
      role: 'system',
      content: [
        { kind: 'text', text: 'Late note.' },
        { kind: 'raw', value: unknownParts[1] },
      ],
    });
    assert.deepEqual(n.messages[3], {
      role: 'developer',
      content: [{ kind: 'text', text: 'Late developer note.' }],
      wire: { role: 'developer', name: 'ops' },
    });
  });

  test('a name goes to wire; an unknown role is role other with its role in wire', () => {
    const n = normalizeOpenaiRequest(body());
    assert.deepEqual(n.messages[0], {
      role: 'user',
      content: [{ kind: 'text', text: 'Hi' }],
      wire: { role: 'user', name: 'alice' },
    });
    assert.deepEqual(n.messages[1], {
      role: 'other',
      content: [{ kind: 'text', text: 'Be brief.' }],
      wire: { role: 'critic', weight: 2 },
    });
    // an unknown role ends the system prompt: a system message after it is a message in place
    const after = normalizeOpenaiRequest({
      messages: [
        { role: 'critic', content: 'x' },
        { role: 'system', content: 'y' },
      ],
    });
    assert.equal(after.system, undefined);
    assert.deepEqual(
      after.messages.map((m) => m.role),
      ['other', 'system'],
    );
  });

  test('unknown content parts are raw parts whose JSON is byte for byte the JSON sent', () => {
    const sent = body();
    const n = normalizeOpenaiRequest(sent);
    const user = n.messages[4]!;
    assert.deepEqual(user.content[0], { kind: 'text', text: 'Look:' });
    assert.equal(
      JSON.stringify(user.content.slice(1).map((p) => (p.kind === 'raw' ? p.value : p))),
      JSON.stringify(unknownParts),
    );
    assert.deepEqual(n.messages[5]?.content, [
      { kind: 'text', text: 'Calling.' },
      { kind: 'raw', value: unknownParts[1] },
      { kind: 'tool-call', id: 'c1', name: 'read', args: '{}' },
    ]);
    // the model's turn is compared with the logged answer, which has no wire fields
    assert.equal(n.messages[5]?.wire, undefined);
    const result = n.messages[6]?.content[0];
    assert.ok(result?.kind === 'tool-result');
    assert.deepEqual(result.content, [
      { kind: 'text', text: 'ok' },
      { kind: 'raw', value: unknownParts[1] },
    ]);
    assert.equal(n.messages[6]?.wire, undefined, 'tool_call_id is held by the tool-result part');
  });
});

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

test('fromIndex: the same messages as a full normalization from that wire index on', async () => {
  const { normalizeOpenaiRequest: norm } = await import('./normalize.ts');
  const body = {
    model: 'm',
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q1' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'r1' },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'q2' },
    ],
  };
  const full = norm(body);
  for (let from = 0; from <= body.messages.length; from++) {
    const part = norm(body, { fromIndex: from });
    assert.equal(part.system, full.system);
    const skippedWire = body.messages.slice(0, from).filter((m) => m.role !== 'system').length;
    assert.deepEqual(part.messages, full.messages.slice(skippedWire), `from ${from}`);
  }
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
