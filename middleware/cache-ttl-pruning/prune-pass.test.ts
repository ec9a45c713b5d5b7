import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { pruningEvent } from '../../chat-log/format/current.ts';
import { parseConfig, type ConfigInput } from '../../config/config.ts';
import {
  WIRE_FORMATS,
  toolResultText,
  viewOf,
  wireBody,
  type ChatStep,
} from './__fixtures__/build-wire-chat.ts';
import { IMAGE_PRUNED_TEXT } from './edit-tool-result.ts';
import { estimateTokens } from './estimate.ts';
import { resolvePruningSettings, type PruningSettings } from './gate.ts';
import { prunePass } from './prune-pass.ts';
import { REMOVED_PART_TEXT, SOFT_TRIM_SEPARATOR, softTrimNote } from './soft-trim.ts';

const PLACEHOLDER = '[Old tool result content cleared]';

function settings(pruning: ConfigInput['pruning'] = {}): PruningSettings {
  return resolvePruningSettings(parseConfig({ pruning }).pruning, true, undefined);
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** An assistant call of `name` and its result. */
function round(
  id: string,
  content: Extract<ChatStep, { kind: 'tool' }>['content'],
  name = 'read_file',
): ChatStep[] {
  return [
    { kind: 'assistant', calls: [{ id, name, args: '{"path":"a.ts"}' }] },
    { kind: 'tool', id, content },
  ];
}

for (const format of WIRE_FORMATS) {
  describe(`prunePass (${format})`, () => {
    test('under softTrimRatio nothing changes and the clock must stay', () => {
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', 'x'.repeat(8000)),
        { kind: 'assistant', text: 'done' },
      ]);
      const before = JSON.stringify(body);
      const view = viewOf(format, body);
      const result = prunePass(view, settings({ keepLastAssistants: 1 }), 1_000_000);
      assert.equal(result.changed, false);
      assert.deepEqual(result.projection, []);
      assert.equal(result.estimateAfter, result.estimateBefore);
      assert.equal(JSON.stringify(body), before);
    });

    test('an unknown context window is never measured against a ratio', () => {
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', 'x'.repeat(8000)),
        { kind: 'assistant', text: 'done' },
      ]);
      const before = JSON.stringify(body);
      const s = settings({ keepLastAssistants: 1, softTrimRatio: 0 });
      assert.equal(prunePass(viewOf(format, body), s, undefined).changed, false);
      assert.equal(prunePass(viewOf(format, body), s, 0).changed, false);
      assert.equal(JSON.stringify(body), before);
    });

    test('soft trim: oversized result keeps head and tail with the note, its images become text', () => {
      const big = 'H'.repeat(1500) + 'm'.repeat(3000) + 'T'.repeat(1500);
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', [{ text: big }, { image: true }]),
        ...round('c2', 'small'),
        { kind: 'assistant', text: 'done' },
      ]);
      const view = viewOf(format, body);
      const result = prunePass(
        view,
        settings({ keepLastAssistants: 1, hardClear: { enabled: false } }),
        4000,
      );
      const trimmed =
        'H'.repeat(1500) + SOFT_TRIM_SEPARATOR + 'T'.repeat(1500) + softTrimNote(1500, 1500, 6000);
      const fresh = viewOf(format, body);
      assert.equal(toolResultText(fresh, 'c1'), trimmed + IMAGE_PRUNED_TEXT);
      assert.equal(fresh.toolResults()[0]?.images.length, 0);
      assert.equal(toolResultText(fresh, 'c2'), 'small');
      assert.deepEqual(result.projection, [{ callId: 'c1', action: 'soft', digest: sha256(big) }]);
      assert.equal(result.soft, 1);
      assert.equal(result.cleared, 0);
      assert.equal(result.changed, true);
      assert.equal(result.estimateAfter, estimateTokens(fresh));
      assert.ok(result.estimateAfter < result.estimateBefore);
      assert.equal(result.charsRemoved, 6000 + 8000 - [...(trimmed + IMAGE_PRUNED_TEXT)].length);
    });

    test('soft trim across several text blocks keeps every block in place', () => {
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', [{ text: 'a'.repeat(3000) }, { image: true }, { text: 'b'.repeat(3000) }]),
        { kind: 'assistant', text: 'done' },
      ]);
      prunePass(
        viewOf(format, body),
        settings({ keepLastAssistants: 1, hardClear: { enabled: false } }),
        4000,
      );
      const messages = body.messages as Array<Record<string, unknown>>;
      const wire =
        format === 'openai'
          ? messages[3]?.content
          : (messages[2]?.content as Array<Record<string, unknown>>)[0]?.content;
      assert.deepEqual(wire, [
        { type: 'text', text: 'a'.repeat(1500) + SOFT_TRIM_SEPARATOR },
        { type: 'text', text: IMAGE_PRUNED_TEXT },
        { type: 'text', text: 'b'.repeat(1500) + softTrimNote(1500, 1500, 6000) },
      ]);
    });

    test('keepLastAssistants boundary: the result just before the Kth-last assistant is trimmed, the one inside is not', () => {
      const big = (c: string) => c.repeat(6000);
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('before', big('b')),
        ...round('inside', big('i')),
        { kind: 'assistant', text: 'done' },
      ]);
      // Assistants: call(before), call(inside), done. The 2nd-last is call(inside).
      const view = viewOf(format, body);
      const result = prunePass(
        view,
        settings({ keepLastAssistants: 2, hardClear: { enabled: false } }),
        3000,
      );
      assert.deepEqual(
        result.projection.map((e) => e.callId),
        ['before'],
      );
      assert.equal(toolResultText(viewOf(format, body), 'inside'), big('i'));
      assert.ok(toolResultText(viewOf(format, body), 'before').endsWith(softTrimNote(1500, 1500, 6000)));
    });

    test('nothing before the first user message, even far over the ratio', () => {
      const body = wireBody(format, [
        ...round('boot', 'S'.repeat(50_000)),
        { kind: 'user', text: 'go' },
        ...round('c1', 'x'.repeat(50_000)),
        { kind: 'assistant', text: 'done' },
      ]);
      const result = prunePass(
        viewOf(format, body),
        settings({ keepLastAssistants: 1, minPrunableToolChars: 0 }),
        1000,
      );
      assert.deepEqual(
        result.projection.map((e) => [e.callId, e.action]),
        [['c1', 'cleared']],
      );
      assert.equal(toolResultText(viewOf(format, body), 'boot'), 'S'.repeat(50_000));
    });

    test('tool rules: denied results stay, case-insensitively, and deny wins', () => {
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('a', 'a'.repeat(6000), 'Read_File'),
        ...round('b', 'b'.repeat(6000), 'read_SECRET'),
        ...round('c', 'c'.repeat(6000), 'exec'),
        { kind: 'assistant', text: 'done' },
      ]);
      const s = settings({
        keepLastAssistants: 1,
        hardClear: { enabled: false },
        tools: { allow: ['READ*'], deny: ['*secret'] },
      });
      const result = prunePass(viewOf(format, body), s, 1000);
      assert.deepEqual(
        result.projection.map((e) => e.callId),
        ['a'],
      );
      assert.equal(toolResultText(viewOf(format, body), 'b'), 'b'.repeat(6000));
      assert.equal(toolResultText(viewOf(format, body), 'c'), 'c'.repeat(6000));
    });

    describe('hard clear', () => {
      // Window 1000 tokens, hard clear at 0.5; soft trim switched off (maxChars huge) to isolate it.
      // keepLastAssistants 2 protects the result of 'kept' (its call is the 2nd-last assistant).
      const base = {
        keepLastAssistants: 2,
        softTrimRatio: 0.1,
        hardClearRatio: 0.5,
        minPrunableToolChars: 0,
        softTrim: { maxChars: 1_000_000 },
      };
      const steps: ChatStep[] = [
        { kind: 'user', text: 'go' },
        ...round('big', 'B'.repeat(2400)),
        ...round('next', 'N'.repeat(400)),
        ...round('kept', 'K'.repeat(800)),
        { kind: 'assistant', text: 'done' },
      ];

      test('clears oldest first and stops as soon as the estimate is under hardClearRatio', () => {
        const body = wireBody(format, steps);
        const view = viewOf(format, body);
        assert.ok(estimateTokens(view) / 1000 >= 0.5);
        const result = prunePass(view, settings(base), 1000);
        assert.deepEqual(result.projection, [
          { callId: 'big', action: 'cleared', digest: sha256('B'.repeat(2400)) },
        ]);
        assert.equal(result.cleared, 1);
        const fresh = viewOf(format, body);
        assert.equal(toolResultText(fresh, 'big'), PLACEHOLDER);
        assert.equal(toolResultText(fresh, 'next'), 'N'.repeat(400));
        assert.ok(result.estimateAfter / 1000 < 0.5);
      });

      test('goes on while the estimate stays at or over the ratio', () => {
        const body = wireBody(format, steps);
        const result = prunePass(viewOf(format, body), settings({ ...base, hardClearRatio: 0.3 }), 1000);
        assert.deepEqual(
          result.projection.map((e) => [e.callId, e.action]),
          [
            ['big', 'cleared'],
            ['next', 'cleared'],
          ],
        );
        assert.equal(toolResultText(viewOf(format, body), 'kept'), 'K'.repeat(800));
      });

      test('not at all when the prunable results hold fewer than minPrunableToolChars', () => {
        const body = wireBody(format, steps);
        const before = JSON.stringify(body);
        const result = prunePass(
          viewOf(format, body),
          settings({ ...base, minPrunableToolChars: 2801 }),
          1000,
        );
        assert.equal(result.changed, false);
        assert.equal(JSON.stringify(body), before);
        // 2400 + 400 prunable characters are enough at 2800.
        assert.equal(
          prunePass(viewOf(format, body), settings({ ...base, minPrunableToolChars: 2800 }), 1000).cleared,
          1,
        );
      });

      test('not at all when hard clear is disabled', () => {
        const body = wireBody(format, steps);
        const result = prunePass(
          viewOf(format, body),
          settings({ ...base, hardClear: { enabled: false } }),
          1000,
        );
        assert.equal(result.changed, false);
      });

      test('a soft-trimmed result is cleared with the digest of its original text', () => {
        const body = wireBody(format, [
          { kind: 'user', text: 'go' },
          ...round('c1', [{ text: 'x'.repeat(20_000) }, { text: 'y'.repeat(20_000) }, { image: true }]),
          { kind: 'assistant', text: 'done' },
        ]);
        const result = prunePass(
          viewOf(format, body),
          settings({ keepLastAssistants: 1, minPrunableToolChars: 0 }),
          1000,
        );
        assert.deepEqual(result.projection, [
          {
            callId: 'c1',
            action: 'cleared',
            digest: sha256('x'.repeat(20_000) + '\u0000' + 'y'.repeat(20_000)),
          },
        ]);
        assert.equal(result.soft, 0);
        const ref = viewOf(format, body).toolResults()[0];
        assert.deepEqual(
          ref?.texts.map((s) => s.text),
          [PLACEHOLDER, REMOVED_PART_TEXT, IMAGE_PRUNED_TEXT],
        );
      });

      test('a result too small to shrink is skipped, not grown', () => {
        const body = wireBody(format, [
          { kind: 'user', text: 'go' },
          ...round('tiny', 'ok'),
          ...round('big', 'B'.repeat(4000)),
          { kind: 'assistant', text: 'done' },
        ]);
        const result = prunePass(viewOf(format, body), settings({ ...base, keepLastAssistants: 1 }), 1000);
        assert.deepEqual(
          result.projection.map((e) => e.callId),
          ['big'],
        );
        assert.equal(toolResultText(viewOf(format, body), 'tiny'), 'ok');
      });
    });

    test('plain conversation text is never changed', () => {
      const userText = 'U'.repeat(40_000);
      const assistantText = 'A'.repeat(40_000);
      const body = wireBody(format, [
        { kind: 'user', text: userText },
        { kind: 'assistant', text: assistantText, calls: [{ id: 'c1', name: 'read_file' }] },
        { kind: 'tool', id: 'c1', content: 'r'.repeat(40_000) },
        { kind: 'user', text: userText },
        { kind: 'assistant', text: 'done' },
      ]);
      const result = prunePass(
        viewOf(format, body),
        settings({ keepLastAssistants: 1, minPrunableToolChars: 0 }),
        1000,
      );
      assert.equal(result.cleared, 1);
      const texts = viewOf(format, body)
        .messages()
        .flatMap((m) => m.texts.map((s) => s.text));
      assert.deepEqual(
        texts.filter((t) => t.length >= 40_000),
        [userText, assistantText, userText],
      );
    });

    test('CJK results weigh about a token per character and make the chat prunable', () => {
      const s = settings({
        keepLastAssistants: 1,
        hardClear: { enabled: false },
        softTrim: { maxChars: 1000, headChars: 100, tailChars: 100 },
      });
      const ascii = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', 'x'.repeat(2000)),
        { kind: 'assistant', text: 'done' },
      ]);
      const cjk = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', '漢'.repeat(2000)),
        { kind: 'assistant', text: 'done' },
      ]);
      assert.equal(prunePass(viewOf(format, ascii), s, 4000).changed, false);
      const result = prunePass(viewOf(format, cjk), s, 4000);
      assert.equal(result.changed, true);
      assert.ok(result.estimateBefore >= 2000);
    });

    test('the result maps onto the chat log pruning event', () => {
      const body = wireBody(format, [
        { kind: 'user', text: 'go' },
        ...round('c1', 'x'.repeat(30_000)),
        ...round('c2', 'y'.repeat(30_000)),
        { kind: 'assistant', text: 'done' },
      ]);
      const result = prunePass(viewOf(format, body), settings({ keepLastAssistants: 1 }), 10_000);
      assert.equal(result.changed, true);
      const event = pruningEvent.parse({ seq: 3, at: 1, type: 'pruning', requestId: 'req_1', ...result });
      assert.deepEqual(event.projection, result.projection);
    });
  });
}
