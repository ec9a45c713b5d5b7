import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import {
  createAnthropicStreamAccumulator,
  normalizeAnthropicRequest,
  normalizeAnthropicResponse,
} from './normalize.ts';
import { readSseText } from '../../lib/sse-reader.ts';
import { assertReusedCallIdsNamed } from '../../test/helpers/reused-call-ids.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');

function accumulate(name: string) {
  const accumulator = createAnthropicStreamAccumulator();
  for (const { event, data } of readSseText(fixture(name))) accumulator.push(event, data);
  return accumulator.result();
}

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

const webSearchResult = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_1',
  content: [
    {
      type: 'web_search_result',
      url: 'https://example.com/oda',
      title: 'Oda',
      encrypted_content: 'EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2U',
      page_age: null,
    },
  ],
};

describe('normalizeAnthropicRequest: every message the model receives, as sent', () => {
  /** Claude Code's shape: an environment block as a system message inside `messages`. */
  const environment =
    '<system-reminder>\nWorking directory: /home/dev/app\nPlatform: linux\n</system-reminder>';
  const unknownBlocks = [
    { type: 'container_upload', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' },
    {
      type: 'search_result',
      source: 'https://example.com',
      title: 'T',
      content: [{ type: 'text', text: 'x' }],
      citations: { enabled: true },
    },
    {
      type: 'block_from_the_future',
      nested: { list: [1, 2.5, 'three', null, true], deep: { k: '\u00e9\n' } },
    },
  ];
  function body(): Record<string, unknown> {
    return {
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      system: [{ type: 'text', text: 'You are Claude Code.' }],
      messages: [
        { role: 'user', content: 'Fix the test.' },
        { role: 'system', content: environment },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Searching.' },
            { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'oda' } },
            webSearchResult,
            {
              type: 'mcp_tool_use',
              id: 'mcptoolu_1',
              name: 'fetch',
              server_name: 'web',
              input: { url: 'u' },
            },
          ],
        },
        {
          role: 'user',
          content: [
            ...unknownBlocks,
            {
              type: 'tool_result',
              tool_use_id: 'toolu_9',
              content: [{ type: 'text', text: 'done' }, unknownBlocks[2]],
            },
          ],
        },
        { role: 'system', content: [{ type: 'text', text: 'Second reminder.' }, unknownBlocks[0]] },
        { role: 'critic', content: 'Be brief.', weight: 2 },
      ],
    };
  }

  test('system messages inside messages are logged in their place, the system prompt stays a digest', () => {
    const n = normalizeAnthropicRequest(body());
    assert.equal(n.system, 'You are Claude Code.');
    assert.deepEqual(
      n.messages.map((m) => m.role),
      ['user', 'system', 'model', 'tool', 'user', 'system', 'other'],
    );
    assert.deepEqual(n.messages[1], { role: 'system', content: [{ kind: 'text', text: environment }] });
    assert.deepEqual(n.messages[5], {
      role: 'system',
      content: [
        { kind: 'text', text: 'Second reminder.' },
        { kind: 'raw', value: unknownBlocks[0] },
      ],
    });
  });

  test('unknown blocks are raw parts whose JSON is byte for byte the JSON sent', () => {
    const sent = body();
    const n = normalizeAnthropicRequest(sent);
    const messages = sent.messages as Array<{ content: unknown[] }>;
    const model = n.messages[2]!;
    assert.deepEqual(model.content[0], { kind: 'text', text: 'Searching.' });
    for (const [i, block] of messages[2]!.content.slice(1).entries()) {
      const part = model.content[i + 1];
      assert.equal(part?.kind, 'raw');
      assert.equal(JSON.stringify(part.kind === 'raw' ? part.value : null), JSON.stringify(block));
    }
    const user = n.messages[4]!;
    assert.equal(
      JSON.stringify(user.content.map((p) => (p.kind === 'raw' ? p.value : p))),
      JSON.stringify(unknownBlocks),
    );
    // inside a tool result too
    const result = n.messages[3]!.content[0];
    assert.ok(result?.kind === 'tool-result');
    assert.deepEqual(result.content, [
      { kind: 'text', text: 'done' },
      { kind: 'raw', value: unknownBlocks[2] },
    ]);
  });

  test('an unknown role is role other, with its role and other fields in wire', () => {
    const n = normalizeAnthropicRequest(body());
    assert.deepEqual(n.messages[6], {
      role: 'other',
      content: [{ kind: 'text', text: 'Be brief.' }],
      wire: { role: 'critic', weight: 2 },
    });
  });

  test("a moved cache breakpoint changes no raw part; a user turn's extra fields go to wire", () => {
    const marked = { ...unknownBlocks[0], cache_control: { type: 'ephemeral' } };
    const n = normalizeAnthropicRequest({
      model: 'm',
      messages: [{ role: 'user', content: [marked], note: 'kept' }],
    });
    assert.deepEqual(n.messages, [
      {
        role: 'user',
        content: [{ kind: 'raw', value: unknownBlocks[0] }],
        wire: { role: 'user', note: 'kept' },
      },
    ]);
  });
});

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
      usage: { inputTokens: 472, outputTokens: 148, cacheReadTokens: 10240, cacheWriteTokens: 2048 },
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
