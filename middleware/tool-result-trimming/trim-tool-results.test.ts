import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { trimEvent } from '../../chat-log/format/current.ts';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { TRIM_MARKER } from '../../lib/trim-marker.ts';
import { cutMiddle, TRIM_MARKER_CHARS } from './cut-middle.ts';
import { replayTrims } from './replay-trims.ts';
import { trimToolResults } from './trim-tool-results.ts';

type Body = Record<string, unknown>;
const cfg = { thresholdChars: 100, headChars: 20, tailChars: 10 };
const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const clone = (body: Body): Body => structuredClone(body);
const cut = (s: string): string => cutMiddle(s, cfg);

const big = 'H'.repeat(19) + '😀' + 'm'.repeat(300) + '🇫🇷' + 't'.repeat(8); // 330 code points
const big2 = '中'.repeat(150);
const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };

function openaiBody(): Body {
  return {
    model: 'gpt-4o',
    temperature: 0.2,
    vendor_extension: { keep: [1, 2, 3] },
    messages: [
      { role: 'system', content: big },
      { role: 'user', content: big },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read', arguments: JSON.stringify({ big }) } },
          { id: 'call_2', type: 'function', function: { name: 'shot', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: big },
      {
        role: 'tool',
        tool_call_id: 'call_2',
        content: [
          { type: 'text', text: big2 },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
          { type: 'text', text: 'short' },
          { type: 'file', file: { file_data: big } },
          { type: 'text', text: big },
        ],
      },
      { role: 'assistant', content: big },
    ],
  };
}

function anthropicBody(): Body {
  return {
    model: 'claude-sonnet-4-5',
    system: [{ type: 'text', text: big, cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: big },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'reading' },
          { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: big } },
          { type: 'tool_use', id: 'toolu_2', name: 'search', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: big, cache_control: { type: 'ephemeral' } },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            is_error: true,
            content: [
              { type: 'text', text: big2 },
              image,
              {
                type: 'search_result',
                source: 'https://x',
                title: 't',
                content: [{ type: 'text', text: big }],
              },
              { type: 'text', text: big, cache_control: { type: 'ephemeral', ttl: '1h' } },
            ],
          },
          { type: 'text', text: big },
        ],
      },
    ],
  };
}

/** What the trim must produce: the same body with exactly the tool-result texts cut. */
function expectedOpenai(): Body {
  const body = openaiBody();
  const messages = body.messages as Body[];
  messages[3]!.content = cut(big);
  const parts = messages[4]!.content as Body[];
  parts[0]!.text = cut(big2);
  parts[4]!.text = cut(big);
  return body;
}

function expectedAnthropic(): Body {
  const body = anthropicBody();
  const blocks = (body.messages as Body[])[2]!.content as Body[];
  blocks[0]!.content = cut(big);
  const inner = blocks[1]!.content as Body[];
  inner[0]!.text = cut(big2);
  inner[3]!.text = cut(big);
  return body;
}

const formats = [
  {
    name: 'openai',
    build: openaiBody,
    expected: expectedOpenai,
    view: createOpenaiRequestView,
    ids: ['call_1', 'call_2'],
    lastPart: 2,
  },
  {
    name: 'anthropic',
    build: anthropicBody,
    expected: expectedAnthropic,
    view: createAnthropicRequestView,
    ids: ['toolu_1', 'toolu_2'],
    lastPart: 1,
  },
] as const;

for (const format of formats) {
  describe(`trimToolResults (${format.name})`, () => {
    test('cuts exactly the over-threshold tool-result texts; everything else stays byte for byte', () => {
      const body = format.build();
      const view = format.view(body);
      trimToolResults(view, cfg, 'threshold');
      assert.deepEqual(body, format.expected());
      assert.equal(JSON.stringify(body), JSON.stringify(format.expected()), 'same key order too');
      assert.equal(view.changed, true);
    });

    test('returns one decision per cut, each a valid tool-result-trimmed event body', () => {
      const view = format.view(format.build());
      const decisions = trimToolResults(view, cfg, 'overflow');
      const [a, b] = format.ids;
      assert.deepEqual(decisions, [
        {
          callId: a,
          part: 0,
          originalChars: 330,
          headChars: 20,
          tailChars: 10,
          digest: sha256(big),
          trigger: 'overflow',
        },
        {
          callId: b,
          part: 0,
          originalChars: 150,
          headChars: 20,
          tailChars: 10,
          digest: sha256(big2),
          trigger: 'overflow',
        },
        // `part` counts text parts only: images and structured parts do not take a number.
        {
          callId: b,
          part: format.lastPart,
          originalChars: 330,
          headChars: 20,
          tailChars: 10,
          digest: sha256(big),
          trigger: 'overflow',
        },
      ]);
      for (const d of decisions) {
        trimEvent.parse({ ...d, seq: 0, at: 0, type: 'tool-result-trimmed', requestId: 'req_1' });
      }
    });

    test('trimming again changes nothing and decides nothing', () => {
      const body = format.build();
      trimToolResults(format.view(body), cfg, 'threshold');
      const once = JSON.stringify(body);
      const view = format.view(body);
      assert.deepEqual(trimToolResults(view, cfg, 'threshold'), []);
      assert.equal(JSON.stringify(body), once);
      assert.equal(view.changed, false);
    });

    test('call ids, error flags and image refs survive the trim', () => {
      const body = format.build();
      const before = format.view(clone(body));
      const view = format.view(body);
      trimToolResults(view, cfg, 'threshold');
      const strip = (v: RequestView) =>
        v.toolResults().map((r) => ({
          callId: r.callId,
          isError: r.isError,
          toolName: r.toolName,
          images: r.images.map((i) => i.path),
        }));
      assert.deepEqual(strip(view), strip(before));
      assert.deepEqual(
        view.images().map((i) => i.source),
        before.images().map((i) => i.source),
      );
    });

    test('replay on a resent history reproduces the first trim byte for byte', () => {
      const first = format.build();
      const decisions = trimToolResults(format.view(first), cfg, 'threshold');
      const resent = format.build();
      const view = format.view(resent);
      assert.equal(replayTrims(view, decisions), decisions.length);
      assert.equal(JSON.stringify(resent), JSON.stringify(first));
      // Replaying onto an already shortened body applies nothing and changes nothing.
      assert.equal(replayTrims(format.view(resent), decisions), 0);
      assert.equal(JSON.stringify(resent), JSON.stringify(first));
    });

    test('the replayed text keeps the recorded head and tail code points', () => {
      const first = format.build();
      const decisions = trimToolResults(format.view(first), cfg, 'threshold');
      const resent = format.build();
      replayTrims(format.view(resent), decisions);
      assert.equal(JSON.stringify(resent), JSON.stringify(first));
      const text = format.view(resent).toolResults()[0]!.texts[0]!.text;
      assert.equal(text, 'H'.repeat(19) + '😀' + TRIM_MARKER + '🇫🇷tttttttt');
    });

    test('replay skips a decision whose text, part or call id differs', () => {
      const decisions = trimToolResults(format.view(format.build()), cfg, 'threshold');
      const edited = format.build();
      const view = format.view(edited);
      view.toolResults()[0]!.texts[0]!.set(big + '!');
      const snapshot = JSON.stringify(edited);
      const misplaced = decisions.map((d) => ({ ...d, part: d.part + 1 }));
      const otherCall = decisions.map((d) => ({ ...d, callId: 'nope' }));
      assert.equal(replayTrims(format.view(edited), [decisions[0]!, ...misplaced, ...otherCall]), 0);
      assert.equal(JSON.stringify(edited), snapshot);
    });

    test('a chain of trims under tighter limits replays in recorded order', () => {
      const tight = { thresholdChars: TRIM_MARKER_CHARS + 6, headChars: 3, tailChars: 3 };
      const first = format.build();
      const d1 = trimToolResults(format.view(first), cfg, 'threshold');
      const d2 = trimToolResults(format.view(first), tight, 'overflow');
      assert.ok(d2.length > 0);
      const resent = format.build();
      assert.equal(replayTrims(format.view(resent), [...d1, ...d2]), d1.length + d2.length);
      assert.equal(JSON.stringify(resent), JSON.stringify(first));
    });

    test('a text of exactly thresholdChars code points is untouched', () => {
      const exact = '😀'.repeat(cfg.thresholdChars);
      const body = format.build();
      const view = format.view(body);
      view.toolResults()[0]!.texts[0]!.set(exact);
      const decisions = trimToolResults(format.view(body), cfg, 'threshold');
      assert.equal(format.view(body).toolResults()[0]!.texts[0]!.text, exact);
      assert.ok(decisions.every((d) => d.callId !== format.ids[0]));
    });
  });
}

describe('trimToolResults over generated tool results', () => {
  type Part = { kind: 'text'; text: string } | { kind: 'image' } | { kind: 'struct'; n: number };
  const text = fc.oneof(
    fc.string({ unit: fc.constantFrom('a', '😀', '𝔘', '👩‍👩‍👧', 'é'), maxLength: 250 }),
    fc.string({ unit: 'binary', maxLength: 200 }),
  );
  const part: fc.Arbitrary<Part> = fc.oneof(
    { weight: 4, arbitrary: text.map((t) => ({ kind: 'text' as const, text: t })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'image' as const }) },
    { weight: 1, arbitrary: fc.nat(9).map((n) => ({ kind: 'struct' as const, n })) },
  );
  const results = fc.array(fc.record({ parts: fc.array(part, { maxLength: 5 }), isError: fc.boolean() }), {
    minLength: 1,
    maxLength: 4,
  });

  function openai(rs: Array<{ parts: Part[]; isError: boolean }>): Body {
    const calls = rs.map((_, i) => ({
      id: `call_${i}`,
      type: 'function',
      function: { name: 't', arguments: '{}' },
    }));
    const tools = rs.map((r, i) => ({
      role: 'tool',
      tool_call_id: `call_${i}`,
      content: r.parts.map((p) =>
        p.kind === 'text'
          ? { type: 'text', text: p.text }
          : p.kind === 'image'
            ? { type: 'image_url', image_url: { url: 'https://img.example/a.png' } }
            : { type: 'file', file: { file_id: `f${p.n}` } },
      ),
    }));
    return {
      model: 'm',
      messages: [{ role: 'user', content: 'go' }, { role: 'assistant', tool_calls: calls }, ...tools],
    };
  }

  function anthropic(rs: Array<{ parts: Part[]; isError: boolean }>): Body {
    const uses = rs.map((_, i) => ({ type: 'tool_use', id: `toolu_${i}`, name: 't', input: {} }));
    const blocks = rs.map((r, i) => ({
      type: 'tool_result',
      tool_use_id: `toolu_${i}`,
      is_error: r.isError,
      content: r.parts.map((p) =>
        p.kind === 'text'
          ? { type: 'text', text: p.text }
          : p.kind === 'image'
            ? image
            : { type: 'search_result', source: `s${p.n}`, title: 't', content: [] },
      ),
    }));
    return {
      model: 'm',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: uses },
        { role: 'user', content: blocks },
      ],
    };
  }

  for (const [name, build, makeView] of [
    ['openai', openai, createOpenaiRequestView],
    ['anthropic', anthropic, createAnthropicRequestView],
  ] as const) {
    test(`${name}: every text part is cut as cutMiddle would, all else in place, replay identical`, () => {
      fc.assert(
        fc.property(results, (rs) => {
          const body = build(rs);
          const decisions = trimToolResults(makeView(body), cfg, 'threshold');
          // The expected body is the generated one with each text replaced by its cut.
          const expected = build(
            rs.map((r) => ({
              ...r,
              parts: r.parts.map((p) => (p.kind === 'text' ? { ...p, text: cut(p.text) } : p)),
            })),
          );
          assert.equal(JSON.stringify(body), JSON.stringify(expected));
          const cutCount = rs
            .flatMap((r) => r.parts)
            .filter((p) => p.kind === 'text' && cut(p.text) !== p.text).length;
          assert.equal(decisions.length, cutCount);
          const resent = build(rs);
          assert.equal(replayTrims(makeView(resent), decisions), cutCount);
          assert.equal(JSON.stringify(resent), JSON.stringify(body));
        }),
        { numRuns: 200 },
      );
    });
  }
});
