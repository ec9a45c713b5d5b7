// normalizeOpenaiRequest: the system prompt, roles, content kinds, tools and settings of a Chat
// Completions request, and fromIndex.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { normalizeOpenaiRequest } from './normalize.ts';
import { assertReusedCallIdsNamed } from '../../test/helpers/reused-call-ids.ts';

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
