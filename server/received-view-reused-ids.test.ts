/**
 * What the log viewer shows as received when a call id names several tool results (some
 * OpenAI-compatible servers hand `call_0` out in every answer): each changed part is labelled with
 * the decision that changed its own result, not with one of another result that has its id.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { receivedView, type ViewDecisions } from './received-view.ts';
import type { PageMessage } from './log-request-view.ts';
import { call, longText, msg, none, result, settings, sha, text } from '../test/helpers/log-page.ts';

const older = longText(6000);
const newer = `${longText(10_000)}!`;

/** Two turns whose tool calls the server gave the same id, for two tools. */
const page: PageMessage[] = [
  msg(0, 'user', [text('go')]),
  msg(1, 'model', [call('call_0', 'exec')]),
  msg(2, 'tool', [result('call_0', [text(older)], 'exec')]),
  msg(3, 'user', [text('again')]),
  msg(4, 'model', [call('call_0', 'read_file')]),
  msg(5, 'tool', [result('call_0', [text(newer)])]),
];

describe('received view: results sharing a call id', () => {
  for (const format of ['openai', 'anthropic', 'responses']) {
    test(`${format}: one cleared and one soft-trimmed result each carry their own action`, () => {
      const decisions: ViewDecisions = {
        ...none,
        pruning: {
          seq: 30,
          projection: [
            { callId: 'call_0', action: 'cleared', digest: sha(older) },
            { callId: 'call_0', action: 'soft', digest: sha(newer) },
          ],
        },
      };
      const out = receivedView({ page, others: [], format, decisions, settings });
      assert.deepEqual(
        out.map((m) => [m.seq, m.effects]),
        [
          [2, [{ by: 'pruned', path: [0, 0], callId: 'call_0', action: 'cleared', decisionSeq: 30 }]],
          [5, [{ by: 'pruned', path: [0, 0], callId: 'call_0', action: 'soft', decisionSeq: 30 }]],
        ],
      );
      const texts = out.map((m) => (m.content[0]!.content as Array<{ text: string }>)[0]!.text);
      assert.equal(texts[0], '[Old tool result content cleared]');
      assert.ok(texts[1]!.startsWith(newer.slice(0, 1500)));
    });

    test(`${format}: two trimmed results each name their own trim decision`, () => {
      const trim = (seq: number, digest: string, originalChars: number, headChars: number) => ({
        seq,
        callId: 'call_0',
        part: 0,
        digest,
        originalChars,
        headChars,
        tailChars: 50,
        trigger: 'threshold',
      });
      const decisions: ViewDecisions = {
        ...none,
        trims: {
          [`call_0:0:${sha(older)}`]: trim(7, sha(older), older.length, 100),
          [`call_0:0:${sha(newer)}`]: trim(9, sha(newer), newer.length, 200),
        },
      };
      const out = receivedView({ page, others: [], format, decisions, settings });
      assert.deepEqual(
        out.map((m) => [
          m.seq,
          m.effects.map((e) => (e.by === 'trimmed' ? [e.decisionSeq, e.headChars] : e)),
        ]),
        [
          [2, [[7, 100]]],
          [5, [[9, 200]]],
        ],
      );
    });
  }
});
