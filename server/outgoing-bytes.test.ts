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
import { outgoingBytes, type CallContext } from '../middleware/call-context.ts';

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

test('the spliced bytes parse to the edited body, and unedited messages keep their bytes', () => {
  fc.assert(
    fc.property(body, edits, fc.constantFrom(undefined, 1, '\t'), fc.nat(), (sent, todo, indent, pick) => {
      const raw = Buffer.from(JSON.stringify(sent, null, indent));
      const scan = new JsonShapeScan(raw, DEFAULT_JSON_LIMITS);
      scan.step(raw.length);
      const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      const view = createAnthropicRequestView(parsed);
      for (const e of todo) {
        if (e === 'system' || e === 'last-message' || e === 'previous-turn') view.addCacheBreakpoint!(e);
        else if (e === 'texts') {
          const messages = view.messages();
          for (const slot of messages[pick % messages.length]!.texts) slot.set('edited ✂');
        } else if (e === 'images') for (const img of view.images()) img.replaceWithText('[image gone]');
        else for (const r of view.toolResults()) for (const slot of r.texts) slot.set('[cleared]');
      }
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

test('without a layout, or after the view added a member, the body is written whole', () => {
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
  view.setAutomaticCaching!();
  const whole = outgoingBytes({ raw, body: parsed, view, layout } as unknown as CallContext);
  assert.equal(whole.toString('utf8'), JSON.stringify(parsed));
});
