/** The pruning pass over malformed request bodies: odd parts are skipped, never thrown on. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { parseConfig, type ConfigInput } from '../../config/config.ts';
import { estimateChars } from './estimate.ts';
import { resolvePruningSettings, type PruningSettings } from './gate.ts';
import { prunePass } from './prune-pass.ts';

function settings(pruning: ConfigInput['pruning'] = {}): PruningSettings {
  return resolvePruningSettings(parseConfig({ pruning }).pruning, true, undefined);
}

describe('malformed bodies', () => {
  test('OpenAI: odd messages and parts are skipped, valid results still pruned', () => {
    const body: Record<string, unknown> = {
      model: 'gpt-4.1',
      messages: [
        null,
        7,
        'text',
        { role: 'user' },
        { role: 'user', content: 'go' },
        { role: 'assistant', tool_calls: 'nope' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [null, { id: 5 }, { id: 'c1', function: { name: 'read' } }],
        },
        { role: 'tool', content: 'no id' },
        { role: 'tool', tool_call_id: 'c0', content: { not: 'a string' } },
        {
          role: 'tool',
          tool_call_id: 'cx',
          content: [null, 3, { type: 'text' }, { type: 'image_url' }, { type: 'image_url', image_url: 5 }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'z'.repeat(60_000) },
        { role: 'wizard', content: 'x' },
        { role: 'assistant', content: 'done' },
      ],
    };
    const result = prunePass(createOpenaiRequestView(body), settings({ keepLastAssistants: 1 }), 1000);
    assert.deepEqual(
      result.projection.map((e) => [e.callId, e.action]),
      [['c1', 'soft']],
    );
  });

  test('Anthropic: odd blocks are skipped, valid results still pruned', () => {
    const body: Record<string, unknown> = {
      model: 'claude-sonnet-4-5',
      system: 42,
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: [null, { type: 'tool_use' }, { type: 'tool_use', id: 'c1', name: 'read', input: null }],
        },
        {
          role: 'user',
          content: [
            null,
            { type: 'tool_result' },
            { type: 'tool_result', tool_use_id: 'c0', content: 12 },
            {
              type: 'tool_result',
              tool_use_id: 'cx',
              content: [null, { type: 'text' }, { type: 'image', source: null }],
            },
            { type: 'tool_result', tool_use_id: 'c1', content: [{ type: 'text', text: 'z'.repeat(60_000) }] },
          ],
        },
        { role: 'user', content: 5 },
        { role: 'assistant', content: 'done' },
      ],
    };
    const result = prunePass(createAnthropicRequestView(body), settings({ keepLastAssistants: 1 }), 1000);
    assert.deepEqual(
      result.projection.map((e) => [e.callId, e.action]),
      [['c1', 'soft']],
    );
  });

  test('bodies without a message list change nothing', () => {
    for (const body of [{ model: 'm' }, { model: 'm', messages: {} }]) {
      for (const view of [
        createOpenaiRequestView(structuredClone(body)),
        createAnthropicRequestView(structuredClone(body)),
      ]) {
        const result = prunePass(view, settings({ softTrimRatio: 0 }), 1000);
        assert.equal(result.changed, false);
        assert.equal(estimateChars(view), 0);
      }
    }
  });
});
