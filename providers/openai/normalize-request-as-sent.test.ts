// normalizeOpenaiRequest: every message the model receives is logged as sent, late system and
// developer messages, names, unknown roles and unknown content parts included.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeOpenaiRequest } from './normalize.ts';

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
