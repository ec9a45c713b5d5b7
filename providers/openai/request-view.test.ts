import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createOpenaiRequestView, parseDataUrl } from './request-view.ts';
import { measureEach } from '../request-view.ts';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A multi-turn agent chat as an OpenAI SDK client sends it. */
function agentBody(): Record<string, unknown> {
  return {
    model: 'gpt-4.1',
    x_unknown_field: { keep: [1, 2, 3] },
    messages: [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'developer', content: [{ type: 'text', text: 'Prefer small diffs.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this screenshot?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'high' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'I should list the files first.',
        tool_calls: [
          { id: 'call_ls', type: 'function', function: { name: 'list_files', arguments: '{"dir":"."}' } },
          { id: 'call_shot', type: 'function', function: { name: 'screenshot', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_ls', content: 'README.md\nsrc/\npackage.json' },
      {
        role: 'tool',
        tool_call_id: 'call_shot',
        content: [
          { type: 'text', text: 'Screenshot taken.' },
          {
            type: 'image_url',
            image_url: { url: 'https://example.com/shot.png' },
            cache_control: { type: 'ephemeral' },
          },
          { type: 'text', text: 'End of capture.' },
        ],
      },
      { role: 'assistant', content: 'The project has a README and a src folder.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'And this one?' },
          { type: 'image_url', image_url: 'data:image/jpeg;base64,/9j/4AAQ' },
        ],
      },
    ],
    stream: true,
    stream_options: { include_usage: true },
  };
}

describe('createOpenaiRequestView', () => {
  test('lists messages with their view roles', () => {
    const view = createOpenaiRequestView(agentBody());
    assert.deepEqual(
      view
        .messages()
        .map((m) => [m.index, m.role, m.hasToolResults, m.hasOwnContent, m.texts.map((t) => t.text)]),
      [
        [0, 'system', false, true, ['You are a coding agent.']],
        [1, 'system', false, true, ['Prefer small diffs.']],
        [2, 'user', false, true, ['What is in this screenshot?']],
        [3, 'assistant', false, true, []],
        [4, 'tool', true, false, []],
        [5, 'tool', true, false, []],
        [6, 'assistant', false, true, ['The project has a README and a src folder.']],
        [7, 'user', false, true, ['And this one?']],
      ],
    );
    assert.equal(view.model, 'gpt-4.1');
    assert.equal(view.cacheTtlHint(), undefined);
  });

  test('lists tool results with names resolved from the assistant tool calls', () => {
    const view = createOpenaiRequestView(agentBody());
    const results = view.toolResults();
    assert.deepEqual(
      results.map((r) => [r.messageIndex, r.callId, r.toolName, r.isError, r.texts.map((t) => t.text)]),
      [
        [4, 'call_ls', 'list_files', false, ['README.md\nsrc/\npackage.json']],
        [5, 'call_shot', 'screenshot', false, ['Screenshot taken.', 'End of capture.']],
      ],
    );
    assert.deepEqual(
      results[1]?.images.map((i) => [i.path, i.inToolResult, i.source]),
      [[['messages', 5, 'content', 1], true, { kind: 'url', url: 'https://example.com/shot.png' }]],
    );
  });

  test('a call id handed out again: each result is named by the call before it with its id', () => {
    // Some OpenAI-compatible servers number calls afresh in every answer (`call_0`).
    const call = (id: string, name: string) => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: '{}' } }],
    });
    const view = createOpenaiRequestView({
      model: 'm',
      messages: [
        { role: 'user', content: 'go' },
        call('call_0', 'exec'),
        { role: 'tool', tool_call_id: 'call_0', content: 'old' },
        { role: 'user', content: 'again' },
        call('call_0', 'read_file'),
        { role: 'tool', tool_call_id: 'call_0', content: 'new' },
        call('call_0', 'grep'),
      ],
    });
    assert.deepEqual(
      view.toolResults().map((r) => [r.messageIndex, r.callId, r.toolName]),
      [
        [2, 'call_0', 'exec'],
        [5, 'call_0', 'read_file'],
      ],
    );
  });

  test('setting a string tool result writes through and changes nothing else', () => {
    const body = agentBody();
    const expected = agentBody();
    const view = createOpenaiRequestView(body);
    view.toolResults()[0]?.texts[0]?.set('[cleared]');
    (expected.messages as Array<Record<string, unknown>>)[4]!.content = '[cleared]';
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
    assert.equal(view.changed, true);
    assert.equal(view.toolResults()[0]?.texts[0]?.text, '[cleared]');
  });

  test('setting a text part of an array tool result edits only that part', () => {
    const body = agentBody();
    const expected = agentBody();
    const view = createOpenaiRequestView(body);
    view.toolResults()[1]?.texts[1]?.set('short');
    const parts = (expected.messages as Array<Record<string, unknown>>)[5]!.content as Array<
      Record<string, unknown>
    >;
    parts[2]!.text = 'short';
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
  });

  test('setting the same text is not a change', () => {
    const body = agentBody();
    const view = createOpenaiRequestView(body);
    for (const message of view.messages()) for (const slot of message.texts) slot.set(slot.text);
    for (const result of view.toolResults()) for (const slot of result.texts) slot.set(slot.text);
    assert.equal(view.changed, false);
    assert.equal(JSON.stringify(body), JSON.stringify(agentBody()));
  });

  test('lists images oldest first with decoded sources and paths', () => {
    const view = createOpenaiRequestView(agentBody());
    assert.deepEqual(
      view.images().map((i) => [i.messageIndex, i.path, i.inToolResult, i.source]),
      [
        [2, ['messages', 2, 'content', 1], false, { kind: 'base64', mediaType: 'image/png', data: PNG }],
        [5, ['messages', 5, 'content', 1], true, { kind: 'url', url: 'https://example.com/shot.png' }],
        [
          7,
          ['messages', 7, 'content', 1],
          false,
          { kind: 'base64', mediaType: 'image/jpeg', data: '/9j/4AAQ' },
        ],
      ],
    );
  });

  test('replacing an image keeps its cache_control and leaves the rest byte-identical', () => {
    const body = agentBody();
    const expected = agentBody();
    const view = createOpenaiRequestView(body);
    const image = view.images()[1];
    assert.ok(image);
    image.replaceWithText('[image set aside]');
    const parts = (expected.messages as Array<Record<string, unknown>>)[5]!.content as unknown[];
    parts[1] = { type: 'text', text: '[image set aside]', cache_control: { type: 'ephemeral' } };
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
    assert.equal(view.changed, true);
    // Fresh lists see the edit; the stale ref does nothing more.
    assert.equal(view.images().length, 2);
    assert.deepEqual(
      view.toolResults()[1]?.texts.map((t) => t.text),
      ['Screenshot taken.', '[image set aside]', 'End of capture.'],
    );
    image.replaceWithText('again');
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
  });

  test('a replaced image without cache_control gets a plain text part', () => {
    const body = agentBody();
    const view = createOpenaiRequestView(body);
    view.images()[0]?.replaceWithText('note');
    const parts = (body.messages as Array<Record<string, unknown>>)[2]!.content;
    assert.deepEqual(parts, [
      { type: 'text', text: 'What is in this screenshot?' },
      { type: 'text', text: 'note' },
    ]);
  });

  test('measures text, reasoning, arguments and tool results; the system prompt is left out', () => {
    const view = createOpenaiRequestView(agentBody());
    assert.deepEqual(measureEach(view), [
      { texts: [], images: 0 },
      { texts: [], images: 0 },
      { texts: ['What is in this screenshot?'], images: 1 },
      { texts: ['I should list the files first.', '{"dir":"."}', '{}'], images: 0 },
      { texts: ['README.md\nsrc/\npackage.json'], images: 0 },
      { texts: ['Screenshot taken.', 'End of capture.'], images: 1 },
      { texts: ['The project has a README and a src folder.'], images: 0 },
      { texts: ['And this one?'], images: 1 },
    ]);
  });

  test('a developer message after the conversation started is measured', () => {
    const view = createOpenaiRequestView({
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'developer', content: 'tools changed' },
      ],
    });
    assert.deepEqual(measureEach(view), [
      { texts: ['hi'], images: 0 },
      { texts: ['tools changed'], images: 0 },
    ]);
  });

  test('legacy function messages count as tool results named by the message', () => {
    const view = createOpenaiRequestView({
      model: 'm',
      messages: [
        {
          role: 'assistant',
          content: null,
          function_call: { name: 'weather', arguments: '{"city":"Oslo"}' },
        },
        { role: 'function', name: 'weather', content: 'rain' },
      ],
    });
    assert.deepEqual(
      view.toolResults().map((r) => [r.callId, r.toolName, r.texts.map((t) => t.text)]),
      [['', 'weather', ['rain']]],
    );
    assert.deepEqual(view.messages()[1]?.role, 'tool');
    assert.deepEqual(measureEach(view)[0], { texts: ['{"city":"Oslo"}'], images: 0 });
  });

  test('malformed messages are skipped, not thrown on', () => {
    const body: Record<string, unknown> = {
      model: 42,
      messages: [
        null,
        'text',
        { role: 'user', content: 7 },
        {
          role: 'user',
          content: [null, { type: 'image_url' }, { type: 'image_url', image_url: { url: 3 } }, 'x'],
        },
        { role: 'assistant', tool_calls: [null, { id: 1 }, { id: 'a', function: 'nope' }] },
        { role: 'tool', content: [{ type: 'text', text: 5 }] },
        { role: 'wizard', content: 'hi' },
        { content: 'no role' },
      ],
    };
    const before = JSON.stringify(body);
    const view = createOpenaiRequestView(body);
    assert.equal(view.model, '');
    assert.deepEqual(
      view.messages().map((m) => m.index),
      [2, 3, 4, 5],
    );
    assert.deepEqual(
      view.toolResults().map((r) => [r.callId, r.toolName, r.texts.length]),
      [['', undefined, 0]],
    );
    assert.deepEqual(view.images(), []);
    assert.equal(measureEach(view).length, 8);
    assert.equal(JSON.stringify(body), before);
    assert.deepEqual(createOpenaiRequestView({ messages: 'nope' }).messages(), []);
  });

  test('reading never changes any body, whatever its shape', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.array(fc.jsonValue()), (extra, messages) => {
        const body: Record<string, unknown> = { ...extra, messages };
        const before = JSON.stringify(body);
        const view = createOpenaiRequestView(body);
        view.messages();
        view.toolResults();
        view.images();
        measureEach(view);
        view.cacheTtlHint();
        assert.equal(JSON.stringify(body), before);
        assert.equal(view.changed, false);
      }),
    );
  });
});

/** Message-shaped values with some junk mixed in, for the property tests. */
const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string() }),
  fc.record({
    type: fc.constant('image_url'),
    image_url: fc.record({
      url: fc.oneof(
        fc.webUrl(),
        fc.base64String().map((d) => `data:image/png;base64,${d}`),
      ),
    }),
  }),
  fc.jsonValue(),
);
const message = fc.oneof(
  fc.record(
    {
      role: fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'function', 'other'),
      content: fc.oneof(fc.string(), fc.array(part), fc.jsonValue()),
      tool_call_id: fc.constantFrom('a', 'b'),
      tool_calls: fc.array(
        fc.record({
          id: fc.constantFrom('a', 'b'),
          function: fc.record({ name: fc.string(), arguments: fc.string() }),
        }),
      ),
    },
    { requiredKeys: ['role'] },
  ),
  fc.jsonValue(),
);

describe('createOpenaiRequestView properties', () => {
  test('rewriting every slot with its own text changes nothing', () => {
    fc.assert(
      fc.property(fc.array(message), (messages) => {
        const body: Record<string, unknown> = { model: 'm', messages };
        const before = JSON.stringify(body);
        const view = createOpenaiRequestView(body);
        for (const m of view.messages()) for (const slot of m.texts) slot.set(slot.text);
        for (const r of view.toolResults()) for (const slot of r.texts) slot.set(slot.text);
        assert.equal(view.changed, false);
        assert.equal(JSON.stringify(body), before);
      }),
    );
  });

  test('replacing every image leaves no image and as many new text parts', () => {
    fc.assert(
      fc.property(fc.array(message), (messages) => {
        const body: Record<string, unknown> = { model: 'm', messages };
        const view = createOpenaiRequestView(body);
        const images = view.images();
        const textsBefore = measureEach(view).reduce((n, m) => n + m.texts.length, 0);
        for (const image of images) image.replaceWithText('x');
        assert.equal(view.images().length, 0);
        assert.equal(view.changed, images.length > 0);
        assert.equal(
          measureEach(view).reduce((n, m) => n + m.texts.length, 0),
          textsBefore + images.length,
        );
      }),
    );
  });
});

describe('parseDataUrl', () => {
  test('reads the media type and data of base64 data URLs only', () => {
    assert.deepEqual(parseDataUrl('data:image/webp;base64,UklGR'), {
      mediaType: 'image/webp',
      data: 'UklGR',
    });
    assert.deepEqual(parseDataUrl('data:image/png;name=a.png;base64,AAAA'), {
      mediaType: 'image/png',
      data: 'AAAA',
    });
    assert.equal(parseDataUrl('data:text/plain,hello'), undefined);
    assert.equal(parseDataUrl('https://example.com/a.png'), undefined);
  });
});
