import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import {
  MAX_BREAKPOINTS,
  MAX_CACHE_KEY_CHARS,
  applyPromptCaching,
  cacheKeyFor,
  promptCachingHeader,
  resolvePromptCachingSettings,
  type PromptCachingSettings,
} from './prompt-caching.ts';

type Obj = Record<string, unknown>;
const EPHEMERAL = { type: 'ephemeral' };
const AUTO: PromptCachingSettings = { mode: 'auto', style: 'breakpoints', cacheKey: true };

/** An agent turn as a client without cache markers sends it. */
function anthropicBody(): Obj {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 1024,
    tools: [
      { name: 'Read', description: 'Read a file', input_schema: { type: 'object' } },
      { name: 'Bash', description: 'Run a command', input_schema: { type: 'object' } },
    ],
    system: [{ type: 'text', text: 'You are an agent.' }],
    messages: [
      { role: 'user', content: 'Fix the build.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Look first.', signature: 's' },
          { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'make' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'error in a.c' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_2', name: 'Read', input: { path: 'a.c' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'int main() {}' }] },
    ],
  };
}

function markersIn(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + markersIn(v), 0);
  if (typeof value !== 'object' || value === null) return 0;
  let n = 0;
  for (const [k, v] of Object.entries(value)) n += k === 'cache_control' ? 1 : markersIn(v);
  return n;
}

const messages = (body: Obj) => body.messages as Obj[];
const blocks = (message: Obj) => message.content as Obj[];

describe('applyPromptCaching, Anthropic format', () => {
  test('no markers: breakpoints at the end of the last message, of the previous turn and of the system prompt', () => {
    const body = anthropicBody();
    const before = structuredClone(body);
    const view = createAnthropicRequestView(body);
    assert.deepEqual(applyPromptCaching(view, AUTO, 'chat-1'), { kind: 'breakpoints', count: 3 });
    assert.equal(view.changed, true);
    assert.deepEqual(blocks(messages(body)[4]!)[0]!.cache_control, EPHEMERAL);
    assert.deepEqual(blocks(messages(body)[2]!)[0]!.cache_control, EPHEMERAL);
    assert.deepEqual((body.system as Obj[])[0]!.cache_control, EPHEMERAL);
    assert.equal(markersIn(body), 3);
    // Nothing else changed: without the three markers the body is the one sent.
    const stripped = JSON.parse(
      JSON.stringify(body, (k, v: unknown) => (k === 'cache_control' ? undefined : v)),
    );
    assert.deepEqual(stripped, before);
  });

  test('a string content becomes one text block carrying the marker', () => {
    const body: Obj = {
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'And now?' },
      ],
    };
    assert.deepEqual(applyPromptCaching(createAnthropicRequestView(body), AUTO, 'c'), {
      kind: 'breakpoints',
      count: 3,
    });
    assert.deepEqual(messages(body)[2]!.content, [
      { type: 'text', text: 'And now?', cache_control: EPHEMERAL },
    ]);
    assert.deepEqual(messages(body)[0]!.content, [{ type: 'text', text: 'Hi', cache_control: EPHEMERAL }]);
    assert.deepEqual(body.system, [{ type: 'text', text: 'Be brief.', cache_control: EPHEMERAL }]);
    assert.equal(messages(body)[1]!.content, 'Hello.');
  });

  test('without a system prompt the last tool definition ends the stable prefix', () => {
    const body = anthropicBody();
    delete body.system;
    applyPromptCaching(createAnthropicRequestView(body), AUTO, 'c');
    const tools = body.tools as Obj[];
    assert.deepEqual(tools[1]!.cache_control, EPHEMERAL);
    assert.equal(tools[0]!.cache_control, undefined);
  });

  test('blocks that cannot carry a marker (thinking, empty text) are passed over', () => {
    const body: Obj = {
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'Go on.' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Partial' },
            { type: 'text', text: '' },
            { type: 'redacted_thinking', data: 'x' },
          ],
        },
      ],
    };
    const result = applyPromptCaching(createAnthropicRequestView(body), AUTO, 'c');
    assert.deepEqual(result, { kind: 'breakpoints', count: 2 });
    const last = blocks(messages(body)[1]!);
    assert.deepEqual(last[0]!.cache_control, EPHEMERAL);
    assert.equal(last[1]!.cache_control, undefined);
    assert.equal(last[2]!.cache_control, undefined);
    // The previous turn of an assistant prefill is the user message before it.
    assert.deepEqual(messages(body)[0]!.content, [
      { type: 'text', text: 'Go on.', cache_control: EPHEMERAL },
    ]);
  });

  const marked: Array<[string, (body: Obj) => void]> = [
    ['the system prompt', (b) => ((b.system as Obj[])[0]!.cache_control = EPHEMERAL)],
    ['a tool', (b) => ((b.tools as Obj[])[0]!.cache_control = { type: 'ephemeral', ttl: '1h' })],
    ['a message block', (b) => (blocks(messages(b)[2]!)[0]!.cache_control = EPHEMERAL)],
    ['the request (automatic caching)', (b) => (b.cache_control = EPHEMERAL)],
  ];
  for (const [where, mark] of marked) {
    test(`a client marker on ${where}: the request is left as it is`, () => {
      const body = anthropicBody();
      mark(body);
      const before = JSON.stringify(body);
      const view = createAnthropicRequestView(body);
      assert.deepEqual(applyPromptCaching(view, AUTO, 'c'), { kind: 'none' });
      assert.equal(JSON.stringify(body), before);
      assert.equal(view.changed, false);
    });
  }

  test('a cache_control key in free-form JSON (a tool parameter, a call argument, metadata) is no marker', () => {
    const body = anthropicBody();
    (body.tools as Obj[])[0]!.input_schema = {
      type: 'object',
      properties: { cache_control: { type: 'string', description: 'the Cache-Control header' } },
    };
    (blocks(messages(body)[1]!)[1]!.input as Obj).cache_control = { type: 'ephemeral', ttl: '1h' };
    body.metadata = { user_id: 'u', cache_control: 'no-store' };
    const view = createAnthropicRequestView(body);
    assert.equal(view.hasCacheMarkers?.(), false);
    assert.equal(view.cacheTtlHint(), undefined);
    assert.deepEqual(applyPromptCaching(view, AUTO, 'c'), { kind: 'breakpoints', count: 3 });
    assert.deepEqual(blocks(messages(body)[4]!)[0]!.cache_control, EPHEMERAL);
    // The client's data is left as it was.
    assert.deepEqual((blocks(messages(body)[1]!)[1]!.input as Obj).cache_control, {
      type: 'ephemeral',
      ttl: '1h',
    });
  });

  test('style automatic: one request-level marker and nothing else', () => {
    const body = anthropicBody();
    const result = applyPromptCaching(createAnthropicRequestView(body), { ...AUTO, style: 'automatic' }, 'c');
    assert.deepEqual(result, { kind: 'automatic' });
    assert.deepEqual(body.cache_control, EPHEMERAL);
    assert.equal(markersIn(body), 1);
  });

  test('mode off: nothing is added', () => {
    const body = anthropicBody();
    const before = JSON.stringify(body);
    assert.deepEqual(applyPromptCaching(createAnthropicRequestView(body), { ...AUTO, mode: 'off' }, 'c'), {
      kind: 'none',
    });
    assert.equal(JSON.stringify(body), before);
  });

  test(`never more than ${MAX_BREAKPOINTS} breakpoints, whatever the plan asks`, () => {
    const body = anthropicBody();
    const plan = [
      'last-message',
      'previous-turn',
      'system',
      'last-message',
      'previous-turn',
      'system',
    ] as const;
    const result = applyPromptCaching(createAnthropicRequestView(body), AUTO, 'c', plan);
    assert.deepEqual(result, { kind: 'breakpoints', count: 3 });
    assert.equal(markersIn(body), 3);
  });

  test('over generated chats: at most 4 markers, and only where blocks accept them', () => {
    const block = fc.oneof(
      fc.string({ maxLength: 3 }).map((text) => ({ type: 'text', text })),
      fc.constant({ type: 'thinking', thinking: 't', signature: 's' }),
      fc.constant({ type: 'tool_use', id: 'toolu_x', name: 'T', input: {} }),
      fc.constant({ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }),
    );
    const message = fc.record({
      role: fc.constantFrom('user', 'assistant'),
      content: fc.oneof(fc.string({ maxLength: 3 }), fc.array(block, { maxLength: 3 })),
    });
    const chat = fc.record({
      system: fc.option(fc.oneof(fc.string({ maxLength: 3 }), fc.array(block, { maxLength: 2 })), {
        nil: undefined,
      }),
      tools: fc.option(fc.constant([{ name: 'T', input_schema: { type: 'object' } }]), { nil: undefined }),
      messages: fc.array(message, { maxLength: 6 }),
    });
    fc.assert(
      fc.property(chat, (c) => {
        // fast-check shares constant values (between runs and within one chat): edit a JSON copy.
        const body = JSON.parse(JSON.stringify({ model: 'claude-x', max_tokens: 5, ...c })) as Obj;
        const result = applyPromptCaching(createAnthropicRequestView(body), AUTO, 'c');
        const n = markersIn(body);
        assert.ok(n <= MAX_BREAKPOINTS);
        assert.equal(n, result.kind === 'breakpoints' ? result.count : 0);
        const bad = (value: unknown): boolean => {
          if (Array.isArray(value)) return value.some(bad);
          if (typeof value !== 'object' || value === null) return false;
          const o = value as Obj;
          if (o.cache_control && (o.type === 'thinking' || (o.type === 'text' && o.text === ''))) return true;
          return Object.values(o).some(bad);
        };
        assert.equal(bad(body), false);
      }),
      { numRuns: 300 },
    );
  });
});

describe('applyPromptCaching, OpenAI format', () => {
  const body = (): Obj => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] });

  test('no prompt_cache_key: the chat id becomes the key', () => {
    const b = body();
    const view = createOpenaiRequestView(b);
    assert.deepEqual(applyPromptCaching(view, AUTO, 'chat-7'), { kind: 'key', key: 'chat-7' });
    assert.equal(b.prompt_cache_key, 'chat-7');
    assert.equal(view.changed, true);
    assert.deepEqual(b.messages, body().messages);
  });

  test('a key the client set stays, even an empty one', () => {
    for (const key of ['mine', '']) {
      const b = { ...body(), prompt_cache_key: key };
      const view = createOpenaiRequestView(b);
      assert.deepEqual(applyPromptCaching(view, AUTO, 'chat-7'), { kind: 'none' });
      assert.equal(b.prompt_cache_key, key);
      assert.equal(view.changed, false);
    }
  });

  test('a provider that does not accept the field gets none', () => {
    const b = body();
    assert.deepEqual(applyPromptCaching(createOpenaiRequestView(b), { ...AUTO, cacheKey: false }, 'c'), {
      kind: 'none',
    });
    assert.equal('prompt_cache_key' in b, false);
  });

  test('no breakpoints in the OpenAI format', () => {
    const b = body();
    applyPromptCaching(createOpenaiRequestView(b), { ...AUTO, style: 'automatic' }, 'c');
    assert.equal(markersIn(b), 0);
  });
});

describe('cache keys, settings and the header', () => {
  test('a chat id too long for the field becomes a digest of it', () => {
    const id = `t:research:${'x'.repeat(100)}`;
    const key = cacheKeyFor(id);
    assert.ok(key.length <= MAX_CACHE_KEY_CHARS);
    assert.match(key, /^oda:[0-9a-f]{60}$/);
    assert.equal(cacheKeyFor(id), key);
    assert.notEqual(cacheKeyFor(`${id}y`), key);
    assert.equal(cacheKeyFor('t:research:fix-login'), 't:research:fix-login');
  });

  test("a branch's key is the key of the chat it branched from, through nested branches", () => {
    assert.equal(cacheKeyFor('fix-login.b0123456789ab'), 'fix-login');
    assert.equal(cacheKeyFor('fix-login.b0123456789ab.bba9876543210'), 'fix-login');
    const long = `t:research:${'x'.repeat(100)}`;
    assert.equal(cacheKeyFor(`${long}.b0123456789ab`), cacheKeyFor(long));
    // Only a whole branch suffix is one: a side chat, a sub-agent or an id that looks like one keep theirs.
    assert.equal(
      cacheKeyFor('fix-login.side-compaction-0123456789ab'),
      'fix-login.side-compaction-0123456789ab',
    );
    assert.equal(cacheKeyFor('fix-login.b0123'), 'fix-login.b0123');
    assert.equal(cacheKeyFor('.b0123456789ab'), '.b0123456789ab');
  });

  test("the provider's mode wins over the gateway's", () => {
    const provider = { style: 'automatic' as const, cacheKey: false };
    assert.deepEqual(resolvePromptCachingSettings({ mode: 'auto' }, { ...provider, mode: 'off' }), {
      mode: 'off',
      style: 'automatic',
      cacheKey: false,
    });
    assert.equal(resolvePromptCachingSettings({ mode: 'off' }, provider).mode, 'off');
    assert.equal(resolvePromptCachingSettings({ mode: 'auto' }, undefined).style, 'breakpoints');
  });

  test('header values', () => {
    assert.equal(promptCachingHeader({ kind: 'breakpoints', count: 2 }), 'breakpoints=2');
    assert.equal(promptCachingHeader({ kind: 'automatic' }), 'automatic');
    assert.equal(promptCachingHeader({ kind: 'key', key: 'k' }), 'key');
    assert.equal(promptCachingHeader({ kind: 'none' }), undefined);
  });
});
