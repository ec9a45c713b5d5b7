import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestView, ViewEdit } from './request-view.ts';
import { createAnthropicRequestView } from './anthropic/request-view.ts';
import { createOpenaiRequestView } from './openai/request-view.ts';
import { createResponsesRequestView } from './responses/request-view.ts';

// One chat in each format: a user message with string content (index 0), an assistant tool call
// (1), its tool result (2), and a user message with text parts (3).
const formats: Array<{
  name: string;
  body: () => Record<string, unknown>;
  view: (b: Record<string, unknown>) => RequestView;
}> = [
  {
    name: 'anthropic',
    view: createAnthropicRequestView,
    body: () => ({
      model: 'm',
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'file body' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part a' },
            { type: 'text', text: 'part b' },
          ],
        },
      ],
    }),
  },
  {
    name: 'openai',
    view: createOpenaiRequestView,
    body: () => ({
      model: 'm',
      messages: [
        { role: 'user', content: 'first question' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'read', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 't1', content: 'file body' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part a' },
            { type: 'text', text: 'part b' },
          ],
        },
      ],
    }),
  },
  {
    name: 'responses',
    view: createResponsesRequestView,
    body: () => ({
      model: 'm',
      input: [
        { role: 'user', content: 'first question' },
        { type: 'function_call', call_id: 't1', name: 'read', arguments: '{}' },
        { type: 'function_call_output', call_id: 't1', output: 'file body' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'part a' },
            { type: 'input_text', text: 'part b' },
          ],
        },
      ],
    }),
  },
];

for (const format of formats) {
  describe(`a view's text edits (${format.name})`, () => {
    test('each edit through a message or tool-result slot is reported and marks its own element', () => {
      const body = format.body();
      const view = format.view(body);
      const edits: ViewEdit[] = [];
      view.onEdit!((edit) => edits.push(edit));
      const messages = view.messages();
      const first = messages.find((m) => m.index === 0)!;
      const last = messages.find((m) => m.index === 3)!;
      first.texts[0]!.set('first question');
      assert.equal(view.changed, false, 'the same text is no edit');
      assert.equal(last.texts.length, 2);
      last.texts[1]!.set('part B');
      view.toolResults()[0]!.texts[0]!.set('[cleared]');
      first.texts[0]!.set('first');
      assert.deepEqual(edits, [
        { kind: 'text', before: 'part b', after: 'part B' },
        { kind: 'text', before: 'file body', after: '[cleared]' },
        { kind: 'text', before: 'first question', after: 'first' },
      ]);
      assert.equal(view.changed, true);
      const places = view.editedPlaces!();
      assert.deepEqual([...places.messages].sort(), [0, 2, 3]);
      assert.deepEqual([...places.members], []);
      // Slots read the body as it is now, and the edits are in it.
      assert.equal(last.texts[1]!.text, 'part B');
      const list = (body.messages ?? body.input) as Array<Record<string, unknown>>;
      assert.equal(list[0]!.content, 'first');
    });

    test('without a listener, edits still change the body and mark their places', () => {
      const view = format.view(format.body());
      view
        .messages()
        .find((m) => m.index === 0)!
        .texts[0]!.set('changed');
      assert.equal(view.changed, true);
      assert.deepEqual([...view.editedPlaces!().messages], [0]);
    });
  });
}

test('a string `input` (Responses) is one slot whose edit is reported and marks the member', () => {
  const body: Record<string, unknown> = { model: 'm', input: 'just a question' };
  const view = createResponsesRequestView(body);
  const edits: ViewEdit[] = [];
  view.onEdit!((edit) => edits.push(edit));
  view.messages()[0]!.texts[0]!.set('a question');
  assert.deepEqual(edits, [{ kind: 'text', before: 'just a question', after: 'a question' }]);
  assert.deepEqual([...view.editedPlaces!().members], ['input']);
  assert.equal(body.input, 'a question');
});

test('a prompt_cache_key the view added is taken back to what the client sent; the client’s own stays', () => {
  for (const create of [createOpenaiRequestView, createResponsesRequestView]) {
    // The client sent no key: the member goes again.
    const none: Record<string, unknown> = { model: 'm', input: 'q', messages: [] };
    const view = create(none);
    assert.equal(view.removeAddedPromptCacheKey!(), false);
    assert.equal(view.setPromptCacheKey!('chat-1'), true);
    assert.equal(view.removeAddedPromptCacheKey!(), true);
    assert.equal(Object.hasOwn(none, 'prompt_cache_key'), false);
    assert.deepEqual([...view.editedPlaces!().members], ['prompt_cache_key']);
    // Taken back once: a second time there is nothing the view added.
    assert.equal(view.removeAddedPromptCacheKey!(), false);

    // The client sent null: null it is again.
    const nulled: Record<string, unknown> = { model: 'm', input: 'q', messages: [], prompt_cache_key: null };
    const fromNull = create(nulled);
    assert.equal(fromNull.setPromptCacheKey!('chat-1'), true);
    assert.equal(fromNull.removeAddedPromptCacheKey!(), true);
    assert.equal(nulled.prompt_cache_key, null);

    // The client's own key is never taken out.
    const own: Record<string, unknown> = { model: 'm', input: 'q', messages: [], prompt_cache_key: 'mine' };
    const ownView = create(own);
    assert.equal(ownView.setPromptCacheKey!('chat-1'), false);
    assert.equal(ownView.removeAddedPromptCacheKey!(), false);
    assert.equal(own.prompt_cache_key, 'mine');
    assert.equal(ownView.changed, false);
  }
});
