/**
 * Cache-TTL pruning when a tool-call id comes back (SPEC sections 4 and 11): some
 * OpenAI-compatible servers number their calls afresh in every answer, so one id names several
 * tool results. A pruned result stays pruned while the cache is warm (the warm prefix keeps its
 * bytes), the result that reuses its id is left alone until a cold pass may prune it too, and the
 * old one keeps its projection through every pass. OpenAI Chat (`tool_call_id`), Anthropic
 * (`tool_use_id`) and Responses (`call_id`), official SDKs -> gateway -> fake provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { getEvents, ofType } from '../helpers/sdk-chat-drivers.ts';
import { LOOP_FORMATS, conversation, toolResults } from '../helpers/tool-loop-conversation.ts';
import { softTrimmed } from '../helpers/soft-trimmed.ts';

const MINUTE = 60_000;
const CHARS = 9000;

const resultText = (label: string) => `${label} ${'x'.repeat(CHARS)}`;

describe('cache-TTL pruning with a tool-call id handed out again', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        models: { 'small-*': { contextWindow: 30_000 } },
        pruning: { mode: 'cache-ttl', ttl: '5m' },
        // The warm prefix is compared byte for byte; no breakpoint of the gateway's own moves in it.
        promptCaching: { mode: 'off' },
      },
    });
  });
  after(() => gw.close());

  for (const format of LOOP_FORMATS) {
    test(`${format}: the old result stays pruned while warm, and a cold pass prunes the one reusing its id`, async () => {
      const chat = conversation(gw, format, `reused-ids-${format}`);

      // Turn 1 (no cache yet): six loops of 9,009 characters; the three oldest are soft-trimmed.
      chat.user('go');
      for (let n = 0; n < 6; n++) chat.toolLoop(`call_${n}`, resultText(`result ${n}`));
      const first = await chat.call();
      assert.equal(first.pruned, 'soft=3,cleared=0');
      const pruned = (n: number) => softTrimmed(resultText(`result ${n}`));
      assert.deepEqual(
        toolResults(first.body).slice(0, 3),
        [0, 1, 2].map((n) => [`call_${n}`, pruned(n)]),
      );

      // Turn 2, a minute later (warm): a new loop reuses call_0. Nothing the first call sent changes.
      gw.clock.advance(MINUTE);
      chat.user('again');
      chat.toolLoop('call_0', resultText('new result 0'));
      const second = await chat.call();
      assert.equal(second.pruned, null, 'no pass while the cache is warm');
      const sent = chat.history(first.body);
      assert.equal(
        JSON.stringify(chat.history(second.body).slice(0, sent.length)),
        JSON.stringify(sent),
        'the warm prefix keeps its bytes',
      );
      const reused = toolResults(second.body).filter(([id]) => id === 'call_0');
      assert.deepEqual(reused, [
        ['call_0', pruned(0)],
        ['call_0', resultText('new result 0')],
      ]);

      // Turn 3, twenty minutes later (cold): two more loops put the reusing result in the prunable
      // range; the pass trims it and the rest, and the old call_0 keeps its projection.
      gw.clock.advance(20 * MINUTE);
      chat.user('more');
      chat.toolLoop('call_6', 'short 6');
      chat.toolLoop('call_7', 'short 7');
      const third = await chat.call();
      assert.equal(third.pruned, 'soft=4,cleared=0', 'call_3, call_4, call_5 and the new call_0');
      assert.deepEqual(toolResults(third.body), [
        ...[0, 1, 2, 3, 4, 5].map((n) => [`call_${n}`, pruned(n)]),
        ['call_0', softTrimmed(resultText('new result 0'))],
        ['call_6', 'short 6'],
        ['call_7', 'short 7'],
      ]);

      // The log names both call_0 results, each by the digest of its own text.
      const passes = ofType(await getEvents(gw.url, `reused-ids-${format}`), 'pruning');
      const last = passes.at(-1)!.projection;
      assert.deepEqual(
        last.map((e) => [e.callId, e.action]),
        ['call_0', 'call_1', 'call_2', 'call_3', 'call_4', 'call_5', 'call_0'].map((id) => [id, 'soft']),
      );
      assert.notEqual(last[0]!.digest, last[6]!.digest);
    });
  }
});
