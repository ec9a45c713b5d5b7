// normalizeAnthropicRequest: the system prompt, roles, content kinds, tools and settings of a
// Messages request, and fromIndex.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { normalizeAnthropicRequest } from './normalize.ts';
import { assertReusedCallIdsNamed } from '../../test/helpers/reused-call-ids.ts';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const readTool = {
  name: 'Read',
  description: 'Read a file',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

function agentBody(): Record<string, unknown> {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 4096,
    stream: true,
    thinking: { type: 'enabled', budget_tokens: 2048 },
    metadata: { user_id: 'u1' },
    system: [
      { type: 'text', text: 'You are an agent.' },
      { type: 'text', text: 'Project notes.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ],
    tools: [{ ...readTool, cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Check the report and screenshot.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/s.png' } },
          {
            type: 'document',
            title: 'report.pdf',
            source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQ=' },
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Read first.', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'EncryptedBlob' },
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.ts' } },
          { type: 'tool_use', id: 'toolu_2', name: 'Read', input: { path: 'b.ts' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'export const a = 1;' },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            is_error: true,
            content: [
              { type: 'text', text: 'ENOENT' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            ],
          },
          { type: 'text', text: 'b.ts is gone, never mind.', cache_control: { type: 'ephemeral' } },
        ],
      },
      { role: 'assistant', content: 'OK.' },
    ],
  };
}

describe('normalizeAnthropicRequest', () => {
  test('maps system, roles, content kinds; tool results become their own messages', () => {
    const normalized = normalizeAnthropicRequest(agentBody());
    assert.equal(normalized.model, 'claude-sonnet-4-5');
    assert.equal(normalized.system, 'You are an agent.\n\nProject notes.');
    assert.equal(normalized.stream, true);
    assert.deepEqual(normalized.settings, {
      max_tokens: 4096,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      metadata: { user_id: 'u1' },
    });
    assert.deepEqual(normalized.messages, [
      {
        role: 'user',
        content: [
          { kind: 'text', text: 'Check the report and screenshot.' },
          { kind: 'image', source: { kind: 'base64', mediaType: 'image/jpeg', data: '/9j/4AAQ' } },
          { kind: 'image', source: { kind: 'url', url: 'https://example.com/s.png' } },
          {
            kind: 'file',
            name: 'report.pdf',
            mediaType: 'application/pdf',
            url: 'data:application/pdf;base64,JVBERi0xLjQ=',
            sha256: sha256('%PDF-1.4'),
            bytes: 8,
          },
        ],
      },
      {
        role: 'model',
        content: [
          { kind: 'reasoning', text: 'Read first.', signature: 'sig-1' },
          { kind: 'reasoning', text: '', redacted: true, signature: 'EncryptedBlob' },
          { kind: 'text', text: 'Reading.' },
          { kind: 'tool-call', id: 'toolu_1', name: 'Read', args: '{"path":"a.ts"}' },
          { kind: 'tool-call', id: 'toolu_2', name: 'Read', args: '{"path":"b.ts"}' },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            kind: 'tool-result',
            callId: 'toolu_1',
            toolName: 'Read',
            failed: false,
            content: [{ kind: 'text', text: 'export const a = 1;' }],
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            kind: 'tool-result',
            callId: 'toolu_2',
            toolName: 'Read',
            failed: true,
            content: [
              { kind: 'text', text: 'ENOENT' },
              { kind: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
            ],
          },
        ],
      },
      { role: 'user', content: [{ kind: 'text', text: 'b.ts is gone, never mind.' }] },
      { role: 'model', content: [{ kind: 'text', text: 'OK.' }] },
    ]);
  });

  test('a user turn of tool results only gives no empty user message', () => {
    const body = agentBody();
    const messages = body.messages as Array<{ content: unknown[] }>;
    messages[2]!.content.pop();
    assert.deepEqual(
      normalizeAnthropicRequest(body).messages.map((m) => m.role),
      ['user', 'model', 'tool', 'tool', 'model'],
    );
  });

  test('a tool-use id handed out again: each result is named by its own call, the same as the chat grows', () => {
    const call = (name: string) => ({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'call_0', name, input: {} }],
    });
    const result = (content: string) => ({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'call_0', content }],
    });
    assertReusedCallIdsNamed((messages) => normalizeAnthropicRequest({ model: 'm', messages }), call, result);
  });

  test('keeps a document with its content; one the file part cannot hold exactly is kept as sent', () => {
    const user = (blocks: unknown[]) =>
      normalizeAnthropicRequest({ model: 'm', messages: [{ role: 'user', content: blocks }] }).messages[0]
        ?.content;
    const text = 'Zażółć gęślą jaźń';
    assert.deepEqual(
      user([{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: text } }]),
      [
        {
          kind: 'file',
          mediaType: 'text/plain',
          url: `data:text/plain;base64,${Buffer.from(text).toString('base64')}`,
          sha256: sha256(text),
          bytes: Buffer.byteLength(text),
        },
      ],
    );
    assert.deepEqual(
      user([{ type: 'document', title: 'A', source: { type: 'url', url: 'https://example.com/a.pdf' } }]),
      [{ kind: 'file', name: 'A', mediaType: 'application/pdf', url: 'https://example.com/a.pdf' }],
    );
    // Citations, context, a Files API id or content blocks: no file part holds them, so as sent.
    const exact = [
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQ=' },
        citations: { enabled: true },
        context: 'Q3 figures',
      },
      { type: 'document', source: { type: 'file', file_id: 'file_011' } },
      { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'a' }] } },
    ];
    assert.deepEqual(
      user(exact.map((b) => ({ ...b, cache_control: { type: 'ephemeral' } }))),
      exact.map((value) => ({ kind: 'raw', value })),
    );
  });

  test('digests tools over their canonical JSON; a moved cache breakpoint is no change', () => {
    const canonical =
      '{"description":"Read a file","input_schema":{"properties":{"path":{"type":"string"}},' +
      '"required":["path"],"type":"object"},"name":"Read"}';
    const expected = [{ name: 'Read', digest: sha256(canonical) }];
    assert.deepEqual(normalizeAnthropicRequest(agentBody()).tools, expected);
    assert.deepEqual(
      normalizeAnthropicRequest({ model: 'm', messages: [], tools: [readTool] }).tools,
      expected,
    );
    const other = { ...readTool, input_schema: { type: 'object' } };
    assert.notEqual(
      normalizeAnthropicRequest({ model: 'm', messages: [], tools: [other] }).tools[0]?.digest,
      sha256(canonical),
    );
  });

  test('a string system prompt is kept as is; none gives undefined', () => {
    assert.equal(
      normalizeAnthropicRequest({ model: 'm', system: 'Be brief.', messages: [] }).system,
      'Be brief.',
    );
    const bare = normalizeAnthropicRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(bare.system, undefined);
    assert.equal(bare.stream, false);
    assert.deepEqual(bare.messages, [{ role: 'user', content: [{ kind: 'text', text: 'hi' }] }]);
  });

  test('malformed input is kept as sent, never thrown on', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.array(fc.jsonValue()), (extra, messages) => {
        assert.ok(Array.isArray(normalizeAnthropicRequest({ ...extra, messages }).messages));
      }),
    );
    const normalized = normalizeAnthropicRequest({
      system: 5,
      messages: [
        null,
        { role: 'user', content: [null, { type: 'tool_result', content: 7 }, { type: 'image', source: 1 }] },
        { role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_011' } }] },
        { role: 'assistant', content: [{ type: 'tool_use' }, { type: 'mystery' }] },
      ],
    });
    assert.equal(normalized.system, undefined);
    assert.deepEqual(normalized.messages, [
      {
        role: 'tool',
        content: [{ kind: 'tool-result', callId: '', failed: false, content: [{ kind: 'raw', value: 7 }] }],
      },
      {
        role: 'user',
        content: [
          { kind: 'raw', value: null },
          { kind: 'raw', value: { type: 'image', source: 1 } },
        ],
      },
      { role: 'user', content: [{ kind: 'file', name: 'file_011' }] },
      {
        role: 'model',
        content: [
          { kind: 'tool-call', id: '', name: '', args: '{}' },
          { kind: 'raw', value: { type: 'mystery' } },
        ],
      },
    ]);
  });
});

test('fromIndex: the same messages as a full normalization from that wire index on', async () => {
  const { normalizeAnthropicRequest: norm } = await import('./normalize.ts');
  const body = {
    model: 'm',
    system: 'sys',
    messages: [
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read', input: { p: 1 } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'r1' },
          { type: 'text', text: 'and' },
        ],
      },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'q2' },
    ],
  };
  const full = norm(body);
  // Wire message i -> how many normalized messages it makes (a tool_result message splits).
  const per = [1, 1, 2, 1, 1];
  for (let from = 0; from <= body.messages.length; from++) {
    const part = norm(body, { fromIndex: from });
    const skipped = per.slice(0, from).reduce((a, b) => a + b, 0);
    assert.deepEqual(part.messages, full.messages.slice(skipped), `from ${from}`);
    assert.equal(part.system, full.system);
  }
});
