/**
 * An edited request goes out as the client's bytes with only the edited values written again
 * (providers/splice-edits.ts, from the shape scan's layout and the view's edited places). What the
 * provider parses must be exactly the edited body, and what no edit touched the client's own bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_JSON_LIMITS, JsonShapeScan } from './json-limits.ts';
import { createAnthropicRequestView } from '../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../providers/openai/request-view.ts';
import { createResponsesRequestView } from '../providers/responses/request-view.ts';
import type { RequestView } from '../providers/request-view.ts';
import { spliceEdits } from '../providers/splice-edits.ts';
import {
  JOIN_PARTS_BELOW,
  outgoingBody,
  outgoingBytes,
  type CallContext,
} from '../middleware/call-context.ts';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } };

const text = fc.string({ maxLength: 12, unit: 'grapheme' });
const userContent = fc.oneof(
  text,
  fc.array(
    fc.oneof(
      text.map((t) => ({ type: 'text', text: t })),
      fc.constant(image),
      fc.record({
        type: fc.constant('tool_result'),
        tool_use_id: fc.constantFrom('t1', 't2'),
        content: fc.oneof(
          text,
          fc.array(
            fc.oneof(
              text.map((t) => ({ type: 'text', text: t })),
              fc.constant(image),
            ),
          ),
        ),
      }),
    ),
    { maxLength: 4 },
  ),
);
const assistantContent = fc.oneof(
  text,
  fc.array(
    fc.oneof(
      text.map((t) => ({ type: 'text', text: t })),
      fc.record({
        type: fc.constant('tool_use'),
        id: fc.constantFrom('t1', 't2'),
        name: fc.constant('read'),
        input: fc.constant({ p: 1 }),
      }),
    ),
    { minLength: 1, maxLength: 3 },
  ),
);
const body = fc
  .record(
    {
      model: fc.constant('claude-test'),
      max_tokens: fc.constant(10),
      system: fc.oneof(
        text,
        fc.array(
          text.map((t) => ({ type: 'text', text: t })),
          { maxLength: 2 },
        ),
      ),
      tools: fc.array(fc.record({ name: text, input_schema: fc.constant({ type: 'object' }) }), {
        maxLength: 2,
      }),
      messages: fc.array(
        fc.tuple(userContent, assistantContent).map(([u, a]) => [
          { role: 'user', content: u },
          { role: 'assistant', content: a },
        ]),
        { minLength: 1, maxLength: 4 },
      ),
      metadata: fc.constant({ user_id: 'u' }),
    },
    { requiredKeys: ['model', 'max_tokens', 'messages'] },
  )
  .map((b) => ({ ...b, messages: [...b.messages.flat(), { role: 'user', content: 'last' }] }));

type Edit = 'system' | 'last-message' | 'previous-turn' | 'texts' | 'images' | 'tool-results';
const edits = fc.array(
  fc.constantFrom<Edit>('system', 'last-message', 'previous-turn', 'texts', 'images', 'tool-results'),
  { maxLength: 4 },
);

function applyAnthropicEdits(view: RequestView, todo: readonly Edit[], pick: number): void {
  for (const e of todo) {
    if (e === 'system' || e === 'last-message' || e === 'previous-turn') view.addCacheBreakpoint!(e);
    else if (e === 'texts') {
      const messages = view.messages();
      for (const slot of messages[pick % messages.length]!.texts) slot.set('edited ✂');
    } else if (e === 'images') for (const img of view.images()) img.replaceWithText('[image gone]');
    else for (const r of view.toolResults()) for (const slot of r.texts) slot.set('[cleared]');
  }
}

test('the spliced bytes parse to the edited body, and unedited messages keep their bytes', () => {
  fc.assert(
    fc.property(body, edits, fc.constantFrom(undefined, 1, '\t'), fc.nat(), (sent, todo, indent, pick) => {
      const raw = Buffer.from(JSON.stringify(sent, null, indent));
      const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
      scan.step(raw.length);
      const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      const view = createAnthropicRequestView(parsed);
      applyAnthropicEdits(view, todo, pick);
      const ctx = { raw, body: parsed, view, layout: { list: scan.list, members: scan.members } };
      const out = outgoingBytes(ctx as unknown as CallContext);
      assert.deepEqual(JSON.parse(out.toString('utf8')), parsed);
      if (!view.changed) assert.equal(out, raw);
      // Every message no edit touched is the client's bytes, found verbatim in what goes out.
      const places = view.editedPlaces!();
      const ranges = scan.list!.ranges;
      for (let i = 0; i < ranges.length / 2; i++) {
        if (places.messages.has(i)) continue;
        assert.ok(out.includes(raw.subarray(ranges[2 * i], ranges[2 * i + 1])), `message ${i}`);
      }
      if (indent !== undefined && view.changed) assert.notDeepEqual(out, Buffer.from(JSON.stringify(parsed)));
    }),
    { numRuns: 400 },
  );
});

/** Earlier copies of top-level keys the body repeats; JSON.parse (and a provider's parser) keeps the last. */
const earlierCopies = fc
  .subarray(['system', 'metadata', 'messages', 'max_tokens', 'tools'])
  .map((keys) =>
    keys.map((key): [string, string] => [
      key,
      key === 'messages'
        ? '[{"role":"user","content":"an older history"}]'
        : key === 'max_tokens'
          ? '1.0'
          : '"old"',
    ]),
  );

test('a repeated top-level key: the edits go where the last copy stands, the earlier copies as sent', () => {
  fc.assert(
    fc.property(
      body,
      earlierCopies,
      edits,
      fc.constantFrom(undefined, 1),
      fc.nat(),
      (sent, earlier, todo, indent, pick) => {
        // Only keys the body has again later: the last copy is the one JSON.parse keeps.
        const copies = earlier.filter(([key]) => Object.hasOwn(sent, key)).map(([key, v]) => `"${key}":${v}`);
        const prefix = copies.length > 0 ? `{${copies.join(',')},` : '{';
        const raw = Buffer.from(prefix + JSON.stringify(sent, null, indent).slice(1));
        const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
        scan.step(raw.length);
        assert.equal(scan.repeatedKeys, copies.length > 0);
        const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
        assert.deepEqual(parsed, JSON.parse(JSON.stringify(sent)));
        const view = createAnthropicRequestView(parsed);
        applyAnthropicEdits(view, todo, pick);
        const ctx = { raw, body: parsed, view, layout: { list: scan.list, members: scan.members } };
        const out = outgoingBytes(ctx as unknown as CallContext);
        assert.deepEqual(JSON.parse(out.toString('utf8')), parsed);
        if (!view.changed) assert.equal(out, raw);
        // The earlier copies go out as the client sent them, and so does every message no edit touched.
        assert.ok(out.subarray(0, prefix.length).equals(raw.subarray(0, prefix.length)), 'earlier copies');
        const places = view.editedPlaces!();
        const ranges = scan.list!.ranges;
        for (let i = 0; i < ranges.length / 2; i++) {
          if (places.messages.has(i)) continue;
          assert.ok(out.includes(raw.subarray(ranges[2 * i], ranges[2 * i + 1])), `message ${i}`);
        }
      },
    ),
    { numRuns: 300 },
  );
});

/** The bytes `view`'s edits of `parsed` (sent as `raw`) go out as, and the checks every format shares. */
function sendAndCheck(raw: Buffer, parsed: Record<string, unknown>, view: RequestView): Buffer {
  const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
  scan.step(raw.length);
  const ctx = { raw, body: parsed, view, layout: { list: scan.list, members: scan.members } };
  const out = outgoingBytes(ctx as unknown as CallContext);
  assert.deepEqual(JSON.parse(out.toString('utf8')), parsed);
  if (!view.changed) assert.equal(out, raw);
  const places = view.editedPlaces!();
  const ranges = scan.list?.ranges ?? [];
  for (let i = 0; i < ranges.length / 2; i++) {
    if (places.messages.has(i)) continue;
    assert.ok(out.includes(raw.subarray(ranges[2 * i], ranges[2 * i + 1])), `message ${i}`);
  }
  return out;
}

const openaiBody = fc.record({
  model: fc.constant('gpt-test'),
  messages: fc
    .array(
      fc.tuple(
        fc.oneof(
          text,
          fc.array(
            fc.oneof(
              text.map((t) => ({ type: 'text', text: t })),
              fc.constant({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }),
            ),
            { maxLength: 3 },
          ),
        ),
        text,
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((turns) => [
      { role: 'system', content: 'be brief' },
      ...turns.flatMap(([user, result], i) => [
        { role: 'user', content: user },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: `c${i}`, content: result },
      ]),
    ]),
  prompt_cache_key: fc.constantFrom(undefined, null, 'client-key'),
});

const responsesBody = fc.record({
  model: fc.constant('gpt-test'),
  instructions: text,
  input: fc.oneof(
    text,
    fc
      .array(
        fc.tuple(
          fc.array(
            fc.oneof(
              text.map((t) => ({ type: 'input_text', text: t })),
              fc.constant({ type: 'input_image', image_url: `data:image/png;base64,${PNG}` }),
            ),
            { maxLength: 3 },
          ),
          text,
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((turns) =>
        turns.flatMap(([content, output], i) => [
          { type: 'message', role: 'user', content },
          { type: 'function_call', call_id: `c${i}`, name: 'read', arguments: '{}' },
          { type: 'function_call_output', call_id: `c${i}`, output },
        ]),
      ),
  ),
});

type OpenaiEdit = 'key' | 'unkey' | 'texts' | 'images' | 'tool-results';
const openaiEdits = fc.array(fc.constantFrom<OpenaiEdit>('key', 'unkey', 'texts', 'images', 'tool-results'), {
  maxLength: 4,
});

function applyOpenaiEdits(view: RequestView, todo: readonly OpenaiEdit[], pick: number): void {
  for (const e of todo) {
    if (e === 'key') view.setPromptCacheKey!('chat-1');
    else if (e === 'unkey') view.removeAddedPromptCacheKey!();
    else if (e === 'texts') {
      const messages = view.messages();
      for (const slot of messages[pick % messages.length]!.texts) slot.set('edited ✂');
    } else if (e === 'images') for (const img of view.images()) img.replaceWithText('[image gone]');
    else for (const r of view.toolResults()) for (const slot of r.texts) slot.set('[cleared]');
  }
}

/** The property for an OpenAI-format view: any edits, spliced, parse to the edited body. */
function openaiFormatProperty(
  bodies: fc.Arbitrary<Record<string, unknown>>,
  createView: (body: Record<string, unknown>) => RequestView,
): void {
  fc.assert(
    fc.property(bodies, openaiEdits, fc.constantFrom(undefined, 2), fc.nat(), (sent, todo, indent, pick) => {
      const raw = Buffer.from(JSON.stringify(sent, null, indent));
      const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      const view = createView(parsed);
      applyOpenaiEdits(view, todo, pick);
      const out = sendAndCheck(raw, parsed, view);
      if (indent !== undefined && view.changed) assert.notDeepEqual(out, Buffer.from(JSON.stringify(parsed)));
    }),
    { numRuns: 300 },
  );
}

test('OpenAI Chat Completions: spliced bytes parse to the edited body, an added key goes last', () => {
  openaiFormatProperty(openaiBody, createOpenaiRequestView);
});

test('OpenAI Responses: spliced bytes parse to the edited body, a string input is a member', () => {
  openaiFormatProperty(responsesBody, createResponsesRequestView);
});

test("a prompt_cache_key added and taken back leaves the client's bytes exactly", () => {
  // The client sent no key (Chat Completions), or a null one (Responses).
  for (const [create, sent] of [
    [createOpenaiRequestView, { model: 'm', messages: [{ role: 'user', content: 'hi ✂' }], max_tokens: 5 }],
    [createResponsesRequestView, { model: 'm', input: 'hi ✂', prompt_cache_key: null, store: false }],
  ] as const) {
    const raw = Buffer.from(JSON.stringify(sent, null, 2) + '\n');
    const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
    scan.step(raw.length);
    const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    const view = create(parsed);
    const layout = { list: scan.list, members: scan.members };
    const ctx = { raw, body: parsed, view, layout } as unknown as CallContext;
    assert.equal(view.setPromptCacheKey!('chat-1'), true);
    assert.match(outgoingBytes(ctx).toString('utf8'), /"prompt_cache_key": ?"chat-1"/);
    assert.equal(view.removeAddedPromptCacheKey!(), true);
    assert.equal(outgoingBytes(ctx).toString('utf8'), raw.toString('utf8'));
  }
});

test("an added member goes before the closing brace; the rest is the client's bytes", () => {
  const sent = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
  const raw = Buffer.from(JSON.stringify(sent, null, 2) + '\n');
  const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
  scan.step(raw.length);
  const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const view = createAnthropicRequestView(parsed);
  const layout = { list: scan.list, members: scan.members };
  view.setAutomaticCaching!();
  const out = outgoingBytes({ raw, body: parsed, view, layout } as unknown as CallContext).toString('utf8');
  const close = raw.toString('utf8').lastIndexOf('}');
  assert.equal(
    out,
    raw.toString('utf8', 0, close) + ',"cache_control":{"type":"ephemeral"}' + raw.toString('utf8', close),
  );
  // A body of no members takes the added one without a comma.
  const empty = Buffer.from('{ }');
  const none = spliceEdits(
    empty,
    { a: 1 },
    { list: undefined, members: new Map() },
    {
      list: 'messages',
      messages: new Set(),
      members: new Set(['a']),
    },
  );
  assert.equal(none && Buffer.concat(none).toString('utf8'), '{ "a":1}');
  // A member the view removed (undefined) cannot be spliced: the whole body is written.
  const gone = spliceEdits(raw, { ...parsed, max_tokens: undefined }, layout, {
    list: 'messages',
    messages: new Set(),
    members: new Set(['max_tokens']),
  });
  assert.equal(gone, undefined);
  // A changed body whose view names no edited place: the client's bytes would lose the edit, so
  // only the whole body says it.
  const unplaced = spliceEdits(raw, { ...parsed, max_tokens: 2 }, layout, {
    list: 'messages',
    messages: new Set(),
    members: new Set(),
  });
  assert.equal(unplaced, undefined);
});

test('without a layout the body is written whole', () => {
  const sent = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
  const raw = Buffer.from(JSON.stringify(sent, null, 2));
  const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
  scan.step(raw.length);
  const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const view = createAnthropicRequestView(parsed);
  view.addCacheBreakpoint!('last-message');
  const noLayout = outgoingBytes({ raw, body: parsed, view } as unknown as CallContext);
  assert.equal(noLayout.toString('utf8'), JSON.stringify(parsed));
  const layout = { list: scan.list, members: scan.members };
  const spliced = outgoingBytes({ raw, body: parsed, view, layout } as unknown as CallContext);
  assert.notEqual(spliced.toString('utf8'), JSON.stringify(parsed));
  assert.deepEqual(JSON.parse(spliced.toString('utf8')), parsed);
});

test('a small edited body goes out as one buffer, a large one as slices of the client bytes', () => {
  const build = (text: string) => {
    const sent = {
      model: 'm',
      max_tokens: 1,
      messages: [
        { role: 'user', content: text },
        { role: 'user', content: 'hi' },
      ],
    };
    const raw = Buffer.from(JSON.stringify(sent));
    const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
    scan.step(raw.length);
    const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    const view = createAnthropicRequestView(parsed);
    view.addCacheBreakpoint!('last-message');
    const ctx = { raw, body: parsed, view, layout: { list: scan.list, members: scan.members } };
    return { raw, ctx: ctx as unknown as CallContext };
  };
  const small = build('a'.repeat(100));
  const one = outgoingBody(small.ctx);
  assert.ok(Buffer.isBuffer(one.body));
  assert.equal(one.length, one.body.length);
  assert.ok(one.body.equals(outgoingBytes(small.ctx)));
  const large = build('b'.repeat(JOIN_PARTS_BELOW));
  const parts = outgoingBody(large.ctx);
  assert.ok(Array.isArray(parts.body) && parts.body.length > 1);
  const joined = Buffer.concat(parts.body as Buffer[]);
  assert.equal(parts.length, joined.length);
  assert.ok(joined.equals(outgoingBytes(large.ctx)));
  // The untouched first message is a slice of the client's buffer, not a copy.
  assert.equal((parts.body as Buffer[])[0]!.buffer, large.raw.buffer);
});

test("inside an edited member or message, what the edit did not change keeps the client's bytes", () => {
  const schema =
    '{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615,"minimum":0.0,"10":"x","a":"y","2":"z"}}}';
  const result = '{"type":"tool_result","tool_use_id":"t1","content":"ok","zz":12345678901234567890}';
  const sent =
    `{"model":"m","max_tokens":1,"tools":[{"name":"t","input_schema":${schema}}],"messages":[` +
    '{"role":"user","content":"go"},' +
    '{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"t","input":{"n":1.0}}]},' +
    `{"role":"user","content":[ ${result} ]}]}`;
  const raw = Buffer.from(sent);
  const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
  scan.step(raw.length);
  const parsed = JSON.parse(sent) as Record<string, unknown>;
  const view = createAnthropicRequestView(parsed);
  // No system prompt: the breakpoint goes on the last tool.
  assert.equal(view.addCacheBreakpoint!('system'), true);
  assert.equal(view.addCacheBreakpoint!('last-message'), true);
  const out = outgoingBytes({
    raw,
    body: parsed,
    view,
    layout: { list: scan.list, members: scan.members },
  } as unknown as CallContext).toString('utf8');
  const marker = ',"cache_control":{"type":"ephemeral"}';
  assert.equal(
    out,
    sent
      .replace(`${schema}}]`, `${schema}${marker}}]`)
      .replace(`${result} ]`, `${result.slice(0, -1)}${marker}} ]`),
  );
});
