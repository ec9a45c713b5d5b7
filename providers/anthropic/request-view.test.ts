import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createAnthropicRequestView } from './request-view.ts';
import { measureEach } from '../request-view.ts';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

type Obj = Record<string, unknown>;

/** A Claude Code style agent chat: thinking, tool use, tool results with images, cache markers. */
function agentBody(): Obj {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 8192,
    system: [
      { type: 'text', text: 'You are Claude Code.' },
      { type: 'text', text: 'Project notes.', cache_control: { type: 'ephemeral' } },
    ],
    tools: [{ name: 'Read', description: 'Read a file', input_schema: { type: 'object' } }],
    metadata: { user_id: 'u1' },
    x_unknown: true,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Fix the layout shown here.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Read the CSS first.', signature: 'sig1' },
          { type: 'text', text: 'Reading files.' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.css' } },
          { type: 'tool_use', id: 'toolu_2', name: 'Screenshot', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'body { margin: 0 }' },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            is_error: false,
            content: [
              { type: 'text', text: 'Captured.' },
              {
                type: 'image',
                source: { type: 'url', url: 'https://example.com/s.png' },
                cache_control: { type: 'ephemeral' },
              },
            ],
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_3', name: 'Bash', input: { command: 'false' } }],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_3',
            is_error: true,
            content: [{ type: 'text', text: 'exit 1' }],
          },
          { type: 'text', text: 'Try again.', cache_control: { type: 'ephemeral' } },
        ],
      },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Thanks' },
    ],
  };
}

function msg(body: Obj, index: number): Obj {
  return (body.messages as Obj[])[index]!;
}

describe('createAnthropicRequestView', () => {
  test('lists messages; tool_result turns hold own content only with other blocks', () => {
    const view = createAnthropicRequestView(agentBody());
    assert.deepEqual(
      view
        .messages()
        .map((m) => [m.index, m.role, m.hasToolResults, m.hasOwnContent, m.texts.map((t) => t.text)]),
      [
        [0, 'user', false, true, ['Fix the layout shown here.']],
        [1, 'assistant', false, true, ['Reading files.']],
        [2, 'user', true, false, []],
        [3, 'assistant', false, true, []],
        [4, 'user', true, true, ['Try again.']],
        [5, 'assistant', false, true, ['Done.']],
        [6, 'user', false, true, ['Thanks']],
      ],
    );
  });

  test('lists tool results with names, error flags, texts and images', () => {
    const view = createAnthropicRequestView(agentBody());
    const results = view.toolResults();
    assert.deepEqual(
      results.map((r) => [r.messageIndex, r.callId, r.toolName, r.isError, r.texts.map((t) => t.text)]),
      [
        [2, 'toolu_1', 'Read', false, ['body { margin: 0 }']],
        [2, 'toolu_2', 'Screenshot', false, ['Captured.']],
        [4, 'toolu_3', 'Bash', true, ['exit 1']],
      ],
    );
    assert.deepEqual(
      results[1]?.images.map((i) => [i.path, i.inToolResult]),
      [[['messages', 2, 'content', 1, 'content', 1], true]],
    );
  });

  test('setting tool result text writes through (string and block forms)', () => {
    const body = agentBody();
    const expected = agentBody();
    const view = createAnthropicRequestView(body);
    view.toolResults()[0]?.texts[0]?.set('[cleared]');
    view.toolResults()[2]?.texts[0]?.set('exit');
    ((msg(expected, 2).content as Obj[])[0] as Obj).content = '[cleared]';
    (((msg(expected, 4).content as Obj[])[0] as Obj).content as Obj[])[0]!.text = 'exit';
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
    assert.equal(view.changed, true);
  });

  test('setting a message text writes through; the same text is not a change', () => {
    const body = agentBody();
    const view = createAnthropicRequestView(body);
    for (const m of view.messages()) for (const slot of m.texts) slot.set(slot.text);
    for (const r of view.toolResults()) for (const slot of r.texts) slot.set(slot.text);
    assert.equal(view.changed, false);
    assert.equal(JSON.stringify(body), JSON.stringify(agentBody()));
    view.messages()[6]?.texts[0]?.set('Thank you');
    assert.equal(msg(body, 6).content, 'Thank you');
    assert.equal(view.changed, true);
  });

  test('lists images oldest first, user blocks and tool-result blocks', () => {
    const view = createAnthropicRequestView(agentBody());
    assert.deepEqual(
      view.images().map((i) => [i.messageIndex, i.path, i.inToolResult, i.source]),
      [
        [0, ['messages', 0, 'content', 1], false, { kind: 'base64', mediaType: 'image/png', data: PNG }],
        [
          2,
          ['messages', 2, 'content', 1, 'content', 1],
          true,
          { kind: 'url', url: 'https://example.com/s.png' },
        ],
      ],
    );
  });

  test('replacing an image keeps its cache_control and everything else byte-identical', () => {
    const body = agentBody();
    const expected = agentBody();
    const view = createAnthropicRequestView(body);
    const [first, second] = view.images();
    assert.ok(first && second);
    second.replaceWithText('[image set aside: #2]');
    first.replaceWithText('[image set aside: #1]');
    (msg(expected, 0).content as Obj[])[1] = { type: 'text', text: '[image set aside: #1]' };
    (((msg(expected, 2).content as Obj[])[1] as Obj).content as Obj[])[1] = {
      type: 'text',
      text: '[image set aside: #2]',
      cache_control: { type: 'ephemeral' },
    };
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
    assert.deepEqual(view.images(), []);
    assert.deepEqual(
      view.toolResults()[1]?.texts.map((t) => t.text),
      ['Captured.', '[image set aside: #2]'],
    );
    first.replaceWithText('stale');
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
  });

  test('measures text, thinking, tool input JSON and tool result text per message', () => {
    const view = createAnthropicRequestView(agentBody());
    assert.deepEqual(measureEach(view), [
      { texts: ['Fix the layout shown here.'], images: 1 },
      { texts: ['Read the CSS first.', 'Reading files.', '{"path":"a.css"}', '{}'], images: 0 },
      { texts: ['body { margin: 0 }', 'Captured.'], images: 1 },
      { texts: ['{"command":"false"}'], images: 0 },
      { texts: ['exit 1', 'Try again.'], images: 0 },
      { texts: ['Done.'], images: 0 },
      { texts: ['Thanks'], images: 0 },
    ]);
  });

  describe('cacheTtlHint', () => {
    test('5m when markers exist without a 1h ttl', () => {
      assert.equal(createAnthropicRequestView(agentBody()).cacheTtlHint(), '5m');
    });
    test('1h when any marker asks for it, wherever it sits', () => {
      const inTools = agentBody();
      (inTools.tools as Obj[])[0]!.cache_control = { type: 'ephemeral', ttl: '1h' };
      assert.equal(createAnthropicRequestView(inTools).cacheTtlHint(), '1h');
      const nested = agentBody();
      (((msg(nested, 2).content as Obj[])[1] as Obj).content as Obj[])[0]!.cache_control = {
        type: 'ephemeral',
        ttl: '1h',
      };
      assert.equal(createAnthropicRequestView(nested).cacheTtlHint(), '1h');
    });
    test('undefined without any marker', () => {
      assert.equal(
        createAnthropicRequestView({
          model: 'm',
          system: 'hi',
          messages: [{ role: 'user', content: 'x' }],
        }).cacheTtlHint(),
        undefined,
      );
    });
    test('found once per view and updated when the view adds a marker; a null marker is none', () => {
      const body: Obj = {
        model: 'm',
        system: 'hi',
        tools: [{ name: 't', input_schema: { type: 'object' }, cache_control: null }],
        messages: [{ role: 'user', content: 'x' }],
      };
      const view = createAnthropicRequestView(body);
      assert.equal(view.hasCacheMarkers?.(), false);
      assert.equal(view.cacheTtlHint(), undefined);
      assert.equal(view.addCacheBreakpoint?.('system'), true);
      assert.equal(view.hasCacheMarkers?.(), true);
      assert.equal(view.cacheTtlHint(), '5m');
      const automatic = createAnthropicRequestView({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(automatic.hasCacheMarkers?.(), false);
      assert.equal(automatic.setAutomaticCaching?.(), true);
      assert.equal(automatic.hasCacheMarkers?.(), true);
      assert.equal(automatic.cacheTtlHint(), '5m');
    });
    test("from the body's scan: the same answers as the walk, a marker added counted", () => {
      // A body whose scan found no `cache_control` key: no marker, until the view adds one.
      const plain: Obj = { model: 'm', system: 'hi', messages: [{ role: 'user', content: 'x' }] };
      const view = createAnthropicRequestView(plain, { cacheControlKey: false });
      assert.equal(view.hasCacheMarkers?.(), false);
      assert.equal(view.addCacheBreakpoint?.('last-message'), true);
      assert.equal(view.hasCacheMarkers?.(), true);
      assert.equal(view.cacheTtlHint(), '5m');
      // The scan saw the key: the body is walked for it (a marker with its TTL).
      const marked: Obj = {
        model: 'm',
        messages: [
          {
            role: 'user',
            content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '1h' } }],
          },
        ],
      };
      assert.equal(createAnthropicRequestView(marked, { cacheControlKey: true }).cacheTtlHint(), '1h');
      // Trusted as said: a scan that saw no key spares the walk (the body's own marker unread).
      assert.equal(createAnthropicRequestView(marked, { cacheControlKey: false }).hasCacheMarkers?.(), false);
      const ttl = fc.constantFrom(undefined, null, { type: 'ephemeral' }, { type: 'ephemeral', ttl: '1h' });
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.string({ maxLength: 6 }), ttl), { maxLength: 6 }),
          ttl,
          fc.boolean(),
          (blocks, systemMarker, addOne) => {
            const body = (): Obj => ({
              model: 'm',
              system: [
                {
                  type: 'text',
                  text: 's',
                  ...(systemMarker !== undefined && { cache_control: systemMarker }),
                },
              ],
              messages: [
                {
                  role: 'user',
                  content: blocks.map(([t, marker]) => ({
                    type: 'text',
                    text: t,
                    ...(marker !== undefined && { cache_control: marker }),
                  })),
                },
              ],
            });
            // What the scan says of such a body: whether any block carries the key.
            const cacheControlKey =
              systemMarker !== undefined || blocks.some(([, marker]) => marker !== undefined);
            const walked = createAnthropicRequestView(body());
            const scanned = createAnthropicRequestView(body(), { cacheControlKey });
            if (addOne) {
              assert.equal(scanned.addCacheBreakpoint?.('system'), walked.addCacheBreakpoint?.('system'));
            }
            assert.equal(scanned.hasCacheMarkers?.(), walked.hasCacheMarkers?.());
            assert.equal(scanned.cacheTtlHint(), walked.cacheTtlHint());
          },
        ),
        { numRuns: 300 },
      );
    });
    test('a trim, a clear or an image replaced keeps the markers the view found', () => {
      const body = agentBody();
      (body.tools as Obj[])[0]!.cache_control = { type: 'ephemeral', ttl: '1h' };
      const view = createAnthropicRequestView(body);
      assert.equal(view.cacheTtlHint(), '1h');
      for (const image of view.images()) image.replaceWithText('[gone]');
      for (const m of view.messages()) for (const slot of m.texts) slot.set('');
      for (const r of view.toolResults()) for (const slot of r.texts) slot.set('[cleared]');
      assert.equal(view.cacheTtlHint(), '1h');
      assert.equal(createAnthropicRequestView(body).cacheTtlHint(), '1h');
      assert.equal(createAnthropicRequestView(body).hasCacheMarkers?.(), true);
    });
  });

  test('a tool-use id handed out again: each result is named by the call before it with its id', () => {
    const call = (id: string, name: string, type = 'tool_use') => ({
      role: 'assistant',
      content: [{ type, id, name, input: {} }],
    });
    const result = (id: string, text: string) => ({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: text }],
    });
    const view = createAnthropicRequestView({
      model: 'm',
      messages: [
        { role: 'user', content: 'go' },
        call('t1', 'exec'),
        result('t1', 'old'),
        call('t1', 'read_file'),
        result('t1', 'new'),
        call('t1', 'web_search', 'server_tool_use'),
      ],
    });
    assert.deepEqual(
      view.toolResults().map((r) => [r.messageIndex, r.callId, r.toolName]),
      [
        [2, 't1', 'exec'],
        [4, 't1', 'read_file'],
      ],
    );
  });

  test('tool results without a matching tool_use have no name; missing ids read as empty', () => {
    const view = createAnthropicRequestView({
      model: 'm',
      messages: [
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'ghost' }, { type: 'tool_result' }] },
      ],
    });
    assert.deepEqual(
      view.toolResults().map((r) => [r.callId, r.toolName, r.texts.length, r.images.length]),
      [
        ['ghost', undefined, 0, 0],
        ['', undefined, 0, 0],
      ],
    );
  });

  test('malformed messages and blocks are skipped, not thrown on', () => {
    const body: Obj = {
      messages: [
        null,
        42,
        { role: 'user', content: 3 },
        {
          role: 'user',
          content: [null, 'x', { type: 'image' }, { type: 'image', source: { type: 'file', file_id: 'f' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 7, content: { nope: 1 } }, 'junk'] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 5, name: 'x' }, { type: 'text' }] },
        { role: 'system', content: 'no' },
      ],
    };
    const before = JSON.stringify(body);
    const view = createAnthropicRequestView(body);
    assert.deepEqual(
      view.messages().map((m) => [m.index, m.hasToolResults, m.hasOwnContent]),
      [
        [2, false, false],
        [3, false, true],
        [4, true, false],
        [5, false, true],
      ],
    );
    assert.deepEqual(
      view.toolResults().map((r) => [r.callId, r.texts.length]),
      [['', 0]],
    );
    assert.deepEqual(view.images(), []);
    assert.equal(measureEach(view).length, 7);
    assert.equal(view.model, '');
    assert.equal(JSON.stringify(body), before);
  });
});

const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string() }),
  fc.record({
    type: fc.constant('image'),
    source: fc.oneof(
      fc.record({
        type: fc.constant('base64'),
        media_type: fc.constant('image/png'),
        data: fc.base64String(),
      }),
      fc.record({ type: fc.constant('url'), url: fc.webUrl() }),
    ),
  }),
  fc.jsonValue(),
);
const toolResult = fc.record(
  {
    type: fc.constant('tool_result'),
    tool_use_id: fc.constantFrom('a', 'b'),
    is_error: fc.boolean(),
    content: fc.oneof(fc.string(), fc.array(block), fc.jsonValue()),
  },
  { requiredKeys: ['type'] },
);
const message = fc.oneof(
  fc.record({
    role: fc.constantFrom('user', 'assistant', 'other'),
    content: fc.oneof(fc.string(), fc.array(fc.oneof(block, toolResult)), fc.jsonValue()),
  }),
  fc.jsonValue(),
);

describe('createAnthropicRequestView properties', () => {
  test('reading and rewriting slots with their own text never changes the body', () => {
    fc.assert(
      fc.property(fc.array(message), fc.jsonValue(), (messages, system) => {
        const body: Obj = { model: 'm', system, messages };
        const before = JSON.stringify(body);
        const view = createAnthropicRequestView(body);
        view.images();
        measureEach(view);
        view.cacheTtlHint();
        for (const m of view.messages()) for (const slot of m.texts) slot.set(slot.text);
        for (const r of view.toolResults()) for (const slot of r.texts) slot.set(slot.text);
        assert.equal(view.changed, false);
        assert.equal(JSON.stringify(body), before);
      }),
    );
  });

  test('replacing every image leaves none, and only the image parts change', () => {
    fc.assert(
      fc.property(fc.array(message), (messages) => {
        const body: Obj = { model: 'm', messages };
        const view = createAnthropicRequestView(body);
        const images = view.images();
        const imagesMeasured = measureEach(view).reduce((n, m) => n + m.images, 0);
        for (const image of images) image.replaceWithText('gone');
        assert.equal(view.images().length, 0);
        assert.equal(view.changed, images.length > 0);
        // Every listed image was measured, and only listed images went away.
        assert.equal(
          measureEach(view).reduce((n, m) => n + m.images, 0),
          imagesMeasured - images.length,
        );
      }),
    );
  });
});
