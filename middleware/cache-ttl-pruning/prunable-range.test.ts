import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { WIRE_FORMATS, viewOf, wireBody, type ChatStep } from './__fixtures__/build-wire-chat.ts';
import { placedPrunableToolResults, prunableRange, prunableToolResults } from './prunable-range.ts';
import type { ToolNameRules } from './tool-name-filter.ts';

const noRules: ToolNameRules = { allow: [], deny: [] };

function call(id: string, name = 'read_file'): ChatStep {
  return { kind: 'assistant', calls: [{ id, name }] };
}
function result(id: string, content = 'output'): ChatStep {
  return { kind: 'tool', id, content };
}

/** user, then three tool rounds, then a final answer: assistants c1, c2, c3, final. */
const chat: ChatStep[] = [
  { kind: 'user', text: 'fix the bug' },
  call('c1'),
  result('c1'),
  call('c2'),
  result('c2'),
  call('c3'),
  result('c3'),
  { kind: 'assistant', text: 'done' },
];

function prunableIds(
  steps: readonly ChatStep[],
  format: (typeof WIRE_FORMATS)[number],
  keep: number,
  tools = noRules,
) {
  const view = viewOf(format, wireBody(format, steps));
  return prunableToolResults(view, { keepLastAssistants: keep, tools }).map((r) => r.callId);
}

for (const format of WIRE_FORMATS) {
  describe(`prunable tool results (${format})`, () => {
    test('keepLastAssistants 2: the result just before the 2nd-last assistant is prunable, the one after it is not', () => {
      // The 2nd-last assistant is the call of c3: c2's result sits just before it, c3's just inside.
      assert.deepEqual(prunableIds(chat, format, 2), ['c1', 'c2']);
    });

    test('keepLastAssistants 3 keeps the last three assistant turns', () => {
      assert.deepEqual(prunableIds(chat, format, 3), ['c1']);
    });

    test('keepLastAssistants 1 protects only what follows the last assistant', () => {
      assert.deepEqual(prunableIds(chat, format, 1), ['c1', 'c2', 'c3']);
    });

    test('keepLastAssistants 0 makes every result after the first user message prunable', () => {
      const steps = [...chat, call('c4'), result('c4')];
      assert.deepEqual(prunableIds(steps, format, 0), ['c1', 'c2', 'c3', 'c4']);
    });

    test('fewer assistant messages than keepLastAssistants: nothing', () => {
      assert.deepEqual(prunableIds(chat, format, 5), []);
      // Exactly four assistants: the cutoff is the first one, and nothing lies before it.
      assert.deepEqual(prunableIds(chat, format, 4), []);
    });

    test('nothing before the first user message', () => {
      const steps: ChatStep[] = [
        call('boot'),
        result('boot', 'SOUL.md contents'),
        { kind: 'user', text: 'hello' },
        ...chat.slice(1),
      ];
      assert.deepEqual(prunableIds(steps, format, 1), ['c1', 'c2', 'c3']);
    });

    test('a chat with no user message is not pruned', () => {
      const steps = chat.slice(1);
      assert.deepEqual(prunableIds(steps, format, 0), []);
    });

    test('tool rules filter by the name of the matching call', () => {
      const steps: ChatStep[] = [
        { kind: 'user', text: 'go' },
        call('a', 'Read_File'),
        result('a'),
        call('b', 'exec'),
        result('b'),
        call('c', 'read_secret'),
        result('c'),
        { kind: 'assistant', text: 'done' },
      ];
      assert.deepEqual(prunableIds(steps, format, 1, { allow: ['read*'], deny: ['*SECRET'] }), ['a']);
      assert.deepEqual(prunableIds(steps, format, 1, { allow: [], deny: ['EXEC'] }), ['a', 'c']);
    });

    test('a result whose call is missing has an unknown tool name', () => {
      const steps: ChatStep[] = [
        { kind: 'user', text: 'go' },
        { kind: 'assistant', text: 'thinking' },
        result('orphan'),
        { kind: 'assistant', text: 'done' },
      ];
      assert.deepEqual(prunableIds(steps, format, 1), ['orphan']);
      assert.deepEqual(prunableIds(steps, format, 1, { allow: ['read*'], deny: [] }), []);
      assert.deepEqual(prunableIds(steps, format, 1, { allow: [], deny: ['*'] }), []);
    });

    test('a call id handed out again names each result apart; results sharing both id and text are not candidates', () => {
      const steps: ChatStep[] = [
        { kind: 'user', text: 'go' },
        call('dup'),
        result('dup', 'first output'),
        { kind: 'user', text: 'again' },
        call('dup'),
        result('dup', 'second output'),
        call('dup'),
        result('dup', 'first output'),
        call('ok'),
        result('ok'),
        { kind: 'assistant', text: 'done' },
      ];
      const view = viewOf(format, wireBody(format, steps));
      const placed = placedPrunableToolResults(view, { keepLastAssistants: 1, tools: noRules });
      assert.deepEqual(
        placed.map((p) => [p.index, p.ref.callId]),
        [
          [1, 'dup'],
          [3, 'ok'],
        ],
      );
    });
  });
}

describe('prunableRange', () => {
  test('a user message holding only tool results is not the first user message', () => {
    const view = viewOf(
      'anthropic',
      wireBody('anthropic', [
        call('x'),
        result('x'),
        { kind: 'user', text: 'hi' },
        { kind: 'assistant', text: 'ok' },
      ]),
    );
    assert.deepEqual(prunableRange(view.messages(), 1), { firstUserIndex: 2, cutoffIndex: 3 });
  });
});
