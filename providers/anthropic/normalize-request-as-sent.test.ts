// normalizeAnthropicRequest: every message the model receives is logged as sent, system messages
// inside `messages`, unknown blocks and unknown roles included.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeAnthropicRequest } from './normalize.ts';
import { webSearchResult } from './test-web-search-result.ts';

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
