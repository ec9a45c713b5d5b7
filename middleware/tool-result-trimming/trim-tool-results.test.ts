import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
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

/** The first 20 code points of `big2`, the marker, the last 10 of `big`: a result of several parts. */
const big2Head = '中'.repeat(20) + TRIM_MARKER;
const bigTail = '🇫🇷tttttttt';

/**
 * What the trim must produce: the same body with exactly the tool-result texts cut. The second
 * result's text parts are one text: its head comes from the first part, its tail from the last,
 * and a part wholly in the cut holds `[...]`.
 */
function expectedOpenai(): Body {
  const body = openaiBody();
  const messages = body.messages as Body[];
  messages[3]!.content = cut(big);
  const parts = messages[4]!.content as Body[];
  parts[0]!.text = big2Head;
  parts[2]!.text = '[...]';
  parts[4]!.text = bigTail;
  return body;
}

function expectedAnthropic(): Body {
  const body = anthropicBody();
  const blocks = (body.messages as Body[])[2]!.content as Body[];
  blocks[0]!.content = cut(big);
  const inner = blocks[1]!.content as Body[];
  inner[0]!.text = big2Head;
  inner[3]!.text = bigTail;
  return body;
}

const formats = [
  {
    name: 'openai',
    build: openaiBody,
    expected: expectedOpenai,
    view: createOpenaiRequestView,
    ids: ['call_1', 'call_2'],
    texts2: [big2, 'short', big],
  },
  {
    name: 'anthropic',
    build: anthropicBody,
    expected: expectedAnthropic,
    view: createAnthropicRequestView,
    ids: ['toolu_1', 'toolu_2'],
    texts2: [big2, big],
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

    test('returns one decision per trimmed result, each a valid tool-result-trimmed event body', () => {
      const view = format.view(format.build());
      const decisions = trimToolResults(view, cfg, 'overflow');
      const [a, b] = format.ids;
      const texts2 = format.texts2 as readonly string[];
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
        // One text over several parts: measured and named as a whole, and part by part.
        {
          callId: b,
          part: 0,
          originalChars: texts2.reduce((n, t) => n + [...t].length, 0),
          headChars: 20,
          tailChars: 10,
          digest: sha256(texts2.join('')),
          trigger: 'overflow',
          parts: texts2.map((t) => ({ chars: [...t].length, digest: sha256(t) })),
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

    test('replay skips a decision whose text or call id differs', () => {
      const decisions = trimToolResults(format.view(format.build()), cfg, 'threshold');
      const edited = format.build();
      const view = format.view(edited);
      view.toolResults()[0]!.texts[0]!.set(big + '!');
      view.toolResults()[1]!.texts[0]!.set(big2 + '!');
      const snapshot = JSON.stringify(edited);
      const otherCall = decisions.map((d) => ({ ...d, callId: 'nope' }));
      assert.equal(replayTrims(format.view(edited), [...decisions, ...otherCall]), 0);
      assert.equal(JSON.stringify(edited), snapshot);
    });

    test('replay finds the text by digest when its part moved', () => {
      const first = format.build();
      const decisions = trimToolResults(format.view(first), cfg, 'threshold');
      const resent = format.build();
      // A recorded part that no longer holds the text (say an image became a text part before it).
      const moved = decisions.map((d) => ({ ...d, part: d.part + 3 }));
      assert.equal(replayTrims(format.view(resent), moved), decisions.length);
      assert.equal(JSON.stringify(resent), JSON.stringify(first));
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

    test('decisions logged before results were trimmed as one text (one per long part) still replay', () => {
      // Earlier builds cut each long text part on its own and recorded its text-part index.
      const texts2 = format.texts2 as readonly string[];
      const old = [
        { callId: format.ids[0], part: 0, text: big },
        { callId: format.ids[1], part: 0, text: big2 },
        { callId: format.ids[1], part: texts2.length - 1, text: big },
      ].map(({ callId, part, text }) => ({
        callId,
        part,
        originalChars: [...text].length,
        headChars: 20,
        tailChars: 10,
        digest: sha256(text),
      }));
      const body = format.build();
      assert.equal(replayTrims(format.view(body), old), 3);
      const results = format.view(body).toolResults();
      assert.equal(results[0]!.texts[0]!.text, cut(big));
      assert.equal(results[1]!.texts[0]!.text, cut(big2));
      assert.equal(results[1]!.texts[texts2.length - 1]!.text, cut(big));
      // Trimming then measures the result's parts as one text: it is cut once more, and that cut
      // is a decision of its own, replayed after the old ones.
      const again = trimToolResults(format.view(body), cfg, 'threshold');
      const twice = JSON.stringify(body);
      const resent = format.build();
      assert.equal(replayTrims(format.view(resent), [...old, ...again]), old.length + again.length);
      assert.equal(JSON.stringify(resent), twice);
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
