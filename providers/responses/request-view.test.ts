import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { measureEach, type ViewEdit } from '../request-view.ts';
import { createResponsesRequestView } from './request-view.ts';
import { SCREENSHOT_PLACEHOLDER_URL } from './responses-items.ts';
import { PNG, SCREENSHOT, codexBody, inputOf } from './__fixtures__/codex-body.ts';

describe('createResponsesRequestView', () => {
  test('lists items with their view roles; a run of model items is one assistant message', () => {
    const view = createResponsesRequestView(codexBody());
    assert.deepEqual(
      view
        .messages()
        .map((m) => [m.index, m.role, m.hasToolResults, m.hasOwnContent, m.texts.map((t) => t.text)]),
      [
        [0, 'system', false, true, ['Sandbox: read-only.']],
        [1, 'user', false, true, ['What is in this screenshot?']],
        [2, 'assistant', false, true, []],
        [4, 'tool', true, false, []],
        [5, 'assistant', false, true, []],
        [6, 'tool', true, false, []],
        [7, 'assistant', false, true, []],
        [8, 'tool', true, false, []],
        [9, 'assistant', false, true, []],
        [10, 'tool', true, false, []],
        [11, 'assistant', false, true, []],
        [12, 'tool', true, false, []],
        [13, 'assistant', false, true, ['The project has a README.']],
        [17, 'user', false, true, ['And now?']],
        [18, 'assistant', false, true, []],
        [19, 'tool', true, false, []],
        [20, 'assistant', false, true, []],
        [21, 'tool', true, false, []],
      ],
    );
    assert.equal(view.model, 'gpt-5-codex');
    assert.equal(view.cacheTtlHint(), undefined);
  });

  test('finds a tool result in every kind of output item, with the tool name from its call', () => {
    const view = createResponsesRequestView(codexBody());
    assert.deepEqual(
      view
        .toolResults()
        .map((r) => [r.messageIndex, r.callId, r.toolName, r.isError, r.texts.map((t) => t.text)]),
      [
        [4, 'call_ls', 'shell', false, ['README.md\nsrc/']],
        [6, 'call_patch', 'apply_patch', false, ['Done.']],
        [8, 'call_sh', 'local_shell', false, ['{"output":"/repo\\n","metadata":{"exit_code":0}}']],
        [10, 'call_shot', 'computer', false, []],
        [12, 'call_cat', 'shell', false, []],
        [19, 'call_sh2', 'shell', false, ['a\n', '']],
        [21, 'call_ap', 'apply_patch', true, ['patch did not apply']],
      ],
    );
  });

  test('a call id handed out again: each result is named by the call before it with its id', () => {
    const view = createResponsesRequestView({
      model: 'm',
      input: [
        { role: 'user', content: 'go' },
        { type: 'function_call', call_id: 'call_0', name: 'exec', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_0', output: 'old' },
        { type: 'shell_call', call_id: 'call_0', action: { commands: ['ls'] } },
        { type: 'shell_call_output', call_id: 'call_0', output: [{ stdout: 'a', stderr: '' }] },
        { type: 'custom_tool_call', call_id: 'call_0', name: 'apply', input: 'x' },
        { type: 'custom_tool_call_output', call_id: 'call_0', output: 'new' },
        { type: 'function_call', call_id: 'call_0', name: 'grep', arguments: '{}' },
      ],
    });
    assert.deepEqual(
      view.toolResults().map((r) => [r.messageIndex, r.callId, r.toolName]),
      [
        [2, 'call_0', 'exec'],
        [4, 'call_0', 'shell'],
        [6, 'call_0', 'apply'],
      ],
    );
  });

  test('finds images in user messages, tool outputs and computer screenshots, oldest first', () => {
    const view = createResponsesRequestView(codexBody());
    assert.deepEqual(
      view.images().map((i) => [i.messageIndex, i.path, i.inToolResult, i.source]),
      [
        [1, ['input', 1, 'content', 1], false, { kind: 'base64', mediaType: 'image/png', data: PNG }],
        [6, ['input', 6, 'output', 1], true, { kind: 'url', url: 'https://example.com/diff.png' }],
        [10, ['input', 10, 'output'], true, { kind: 'base64', mediaType: 'image/png', data: SCREENSHOT }],
        [12, ['input', 12, 'output', 0], true, { kind: 'url', url: 'file_id:file-img1' }],
      ],
    );
    const results = view.toolResults();
    assert.deepEqual(
      results.map((r) => r.images.map((i) => i.path)),
      [[], [['input', 6, 'output', 1]], [], [['input', 10, 'output']], [['input', 12, 'output', 0]], [], []],
    );
  });

  test('edits in place change only what they name, byte for byte', () => {
    const body = codexBody();
    const expected = codexBody();
    const view = createResponsesRequestView(body);
    const results = view.toolResults();
    results[0]!.texts[0]!.set('[cleared]');
    results[1]!.texts[0]!.set('short');
    results[5]!.texts[0]!.set('b\n');
    for (const image of view.images()) image.replaceWithText(`[set aside ${image.messageIndex}]`);
    const items = inputOf(expected);
    items[4]!.output = '[cleared]';
    const patchOutput = items[6]!.output as Array<Record<string, unknown>>;
    patchOutput[0]!.text = 'short';
    patchOutput[1] = { type: 'input_text', text: '[set aside 6]' };
    ((items[19]!.output as unknown[])[0] as Record<string, unknown>).stdout = 'b\n';
    (items[1]!.content as unknown[])[1] = { type: 'input_text', text: '[set aside 1]' };
    items[10]!.output = { type: 'computer_screenshot', image_url: SCREENSHOT_PLACEHOLDER_URL };
    (items[12]!.output as unknown[])[0] = { type: 'input_text', text: '[set aside 12]' };
    assert.equal(JSON.stringify(body), JSON.stringify(expected));
    assert.equal(view.changed, true);
  });

  test('reasoning with encrypted content, server items, references and unknown items stay untouched', () => {
    const body = codexBody();
    const view = createResponsesRequestView(body);
    for (const result of view.toolResults()) for (const slot of result.texts) slot.set('x');
    for (const message of view.messages()) for (const slot of message.texts) slot.set('y');
    for (const image of view.images()) image.replaceWithText('z');
    for (const index of [2, 3, 5, 7, 9, 11, 14, 15, 16, 18, 20]) {
      assert.equal(
        JSON.stringify(inputOf(body)[index]),
        JSON.stringify(inputOf(codexBody())[index]),
        `item ${index}`,
      );
    }
    const { input: _edited, ...rest } = body;
    const { input: _original, ...restOriginal } = codexBody();
    assert.equal(JSON.stringify(rest), JSON.stringify(restOriginal));
  });

  test('setting the same text is not a change', () => {
    const body = codexBody();
    const view = createResponsesRequestView(body);
    for (const message of view.messages()) for (const slot of message.texts) slot.set(slot.text);
    for (const result of view.toolResults()) for (const slot of result.texts) slot.set(slot.text);
    assert.equal(view.changed, false);
    assert.equal(JSON.stringify(body), JSON.stringify(codexBody()));
  });

  test('an image turned to text keeps its prompt-cache breakpoint; a stale ref does nothing', () => {
    const marker = { mode: 'explicit' };
    const body = {
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_image', image_url: 'https://example.com/a.png', prompt_cache_breakpoint: marker },
          ],
        },
      ],
    };
    const view = createResponsesRequestView(body);
    const [image] = view.images();
    image!.replaceWithText('[note]');
    assert.deepEqual(body.input[0]!.content, [
      { type: 'input_text', text: '[note]', prompt_cache_breakpoint: marker },
    ]);
    image!.replaceWithText('[again]');
    assert.deepEqual(body.input[0]!.content[0], {
      type: 'input_text',
      text: '[note]',
      prompt_cache_breakpoint: marker,
    });
  });

  test('a replaced screenshot stays a valid screenshot, and is no longer an image to the view', () => {
    const body = codexBody();
    const view = createResponsesRequestView(body);
    const screenshot = view.images().find((i) => i.messageIndex === 10)!;
    const before = measureEach(view)[10];
    assert.deepEqual(before, { texts: [], images: 1 });
    screenshot.replaceWithText('[Image #3 set aside]');
    assert.deepEqual(inputOf(body)[10]!.output, {
      type: 'computer_screenshot',
      image_url: SCREENSHOT_PLACEHOLDER_URL,
    });
    assert.equal(
      view.images().some((i) => i.messageIndex === 10),
      false,
    );
    assert.deepEqual(measureEach(view)[10], { texts: [], images: 0 });
  });

  test('measures every input item: texts, arguments, reasoning summaries, outputs and images', () => {
    const measure = measureEach(createResponsesRequestView(codexBody()));
    assert.equal(measure.length, 22);
    assert.deepEqual(measure[0], { texts: ['Sandbox: read-only.'], images: 0 });
    assert.deepEqual(measure[1], { texts: ['What is in this screenshot?'], images: 1 });
    assert.deepEqual(measure[2], { texts: ['List the files first.'], images: 0 });
    assert.deepEqual(measure[3], { texts: ['{"command":["ls"]}'], images: 0 });
    assert.deepEqual(measure[4], { texts: ['README.md\nsrc/'], images: 0 });
    assert.deepEqual(measure[5], { texts: ['*** Begin Patch\n*** End Patch'], images: 0 });
    assert.deepEqual(measure[6], { texts: ['Done.'], images: 1 });
    assert.deepEqual(measure[12], { texts: [], images: 1 });
    assert.deepEqual(measure[13], { texts: ['The project has a README.'], images: 0 });
    assert.deepEqual(measure[15], { texts: [], images: 0 });
    assert.deepEqual(measure[19], { texts: ['a\n'], images: 0 });
    assert.ok(measure[14]!.texts[0]!.includes('readme conventions'));
  });

  test('a string input is one user message with no tool results or images', () => {
    const body: Record<string, unknown> = { model: 'gpt-5', instructions: 'Be brief.', input: 'Hi there' };
    const view = createResponsesRequestView(body);
    assert.deepEqual(
      view.messages().map((m) => [m.index, m.role, m.hasOwnContent, m.texts.map((t) => t.text)]),
      [[0, 'user', true, ['Hi there']]],
    );
    assert.deepEqual(view.toolResults(), []);
    assert.deepEqual(view.images(), []);
    assert.deepEqual(measureEach(view), [{ texts: ['Hi there'], images: 0 }]);
    view.messages()[0]!.texts[0]!.set('Hello');
    assert.equal(body.input, 'Hello');
    assert.equal(body.instructions, 'Be brief.');
  });

  test('reports every edit to its listener', () => {
    const view = createResponsesRequestView(codexBody());
    const edits: ViewEdit[] = [];
    view.onEdit?.((edit) => edits.push(edit));
    view.toolResults()[0]!.texts[0]!.set('[cleared]');
    view.images()[0]!.replaceWithText('[note]');
    view
      .images()
      .find((i) => i.messageIndex === 10)!
      .replaceWithText('[shot]');
    view.toolResults()[1]!.texts[0]!.set('Done.');
    assert.deepEqual(edits, [
      { kind: 'text', before: 'README.md\nsrc/', after: '[cleared]' },
      { kind: 'image', after: '[note]' },
      { kind: 'image', after: '[shot]' },
    ]);
  });

  test('prompt caching goes by key; a key the client set is kept', () => {
    const body: Record<string, unknown> = { model: 'm', input: 'hi' };
    const view = createResponsesRequestView(body);
    assert.equal(view.promptCachingStyle, 'key');
    assert.equal(view.addCacheBreakpoint?.('last-message'), false);
    assert.equal(view.setAutomaticCaching?.(), false);
    assert.equal(view.hasCacheMarkers?.(), false);
    assert.equal(view.promptCacheKey?.(), undefined);
    assert.equal(view.setPromptCacheKey?.('chat-1'), true);
    assert.equal(body.prompt_cache_key, 'chat-1');
    assert.equal(view.changed, true);
    const own = createResponsesRequestView(codexBody());
    assert.equal(own.promptCacheKey?.(), 'sess-1');
    assert.equal(own.setPromptCacheKey?.('other'), false);
    assert.equal(own.changed, false);
  });

  test('malformed input is skipped, never thrown on', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (input) => {
        const view = createResponsesRequestView({ model: 'm', input });
        view.messages();
        view.toolResults();
        view.images();
        measureEach(view);
      }),
    );
    const view = createResponsesRequestView({
      model: 'm',
      input: [
        null,
        5,
        { type: 'function_call_output' },
        { type: 'function_call_output', output: 7 },
        { type: 'computer_call_output', call_id: 'c', output: { type: 'computer_screenshot' } },
        { type: 'message', role: 'user', content: [null, { type: 'input_image' }] },
      ],
    });
    assert.deepEqual(
      view.toolResults().map((r) => [r.messageIndex, r.callId, r.texts.length, r.images.length]),
      [
        [3, '', 0, 0],
        [4, 'c', 0, 0],
      ],
    );
    assert.deepEqual(view.images(), []);
  });
});
