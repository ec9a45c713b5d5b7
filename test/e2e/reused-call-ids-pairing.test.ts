/**
 * A tool result answers the nearest call before it with its id (SPEC section 4), also when the
 * model hands an id out again: some OpenAI-compatible servers number their calls afresh in every
 * answer, so `call_0` names one tool in one turn and another tool in the next. Here the fake
 * provider hands out `call_0` for `exec`, then `read_file`, then `grep`; pruning's tool rules judge
 * each result by the tool that made it, the log names each result the same in every request, so
 * a restarted gateway finds the chat again (SPEC section 6), and the received view labels each
 * result with what pruning did to it. OpenAI Chat, Anthropic and Responses, official SDKs ->
 * gateway -> fake provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { getEvents, ofType } from '../helpers/sdk-chat-drivers.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { LOOP_FORMATS, conversation, toolResults } from '../helpers/tool-loop-conversation.ts';
import { softTrimmed } from '../helpers/soft-trimmed.ts';

const MINUTE = 60_000;
const TOOLS = ['exec', 'read_file', 'grep'];

const resultText = (label: string) => `${label} ${'x'.repeat(9000)}`;

describe('a tool-call id handed out again: each result answers the call before it', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        models: { 'small-*': { contextWindow: 10_000 } },
        pruning: {
          mode: 'cache-ttl',
          ttl: '5m',
          keepLastAssistants: 1,
          tools: { allow: [], deny: ['exec'] },
        },
      },
    });
  });
  after(() => gw.close());

  for (const format of LOOP_FORMATS) {
    test(`${format}: pruning's tool rules judge an old result by its own call's tool`, async () => {
      const chat = conversation(gw, format, `reused-pairing-${format}`, TOOLS);
      chat.user('go');
      await chat.modelCalls('call_0', 'exec', resultText('exec output'));
      await chat.modelCalls('call_0', 'read_file', resultText('file text'));
      await chat.modelCalls('call_0', 'grep', 'one hit');

      // Cold: the pass looks at the two results before the last assistant turn (about 0.45 of
      // the window, over softTrimRatio). `exec` is denied, so only the `read_file` result is trimmed,
      // though the last call with their id is `grep`'s.
      gw.clock.advance(20 * MINUTE);
      const out = await chat.call();
      assert.equal(out.pruned, 'soft=1,cleared=0');
      assert.deepEqual(toolResults(out.body), [
        ['call_0', resultText('exec output')],
        ['call_0', softTrimmed(resultText('file text'))],
        ['call_0', 'one hit'],
      ]);
    });
  }
});

describe('a tool-call id handed out again: the log names each result by its own call', () => {
  const fake = new FakeProvider();
  const dirs: string[] = [];
  before(() => fake.start());
  after(async () => {
    await fake.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  for (const format of LOOP_FORMATS) {
    test(`${format}: a restarted gateway finds the chat again and continues it`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'oda-reused-ids-'));
      dirs.push(dataDir);
      const sessionId = `reused-restart-${format}`;
      const first = await startGateway({ dataDir, fakeProvider: fake });
      let chat = conversation(first, format, sessionId, TOOLS);
      try {
        chat.user('go');
        await chat.modelCalls('call_0', 'exec', 'exec output');
        await chat.modelCalls('call_0', 'read_file', 'file text');
        await chat.call();
      } finally {
        await first.close();
      }

      // The new gateway knows no prefix of the chat: it normalizes the whole history and compares
      // it with the log, where the first result is `exec`'s.
      const second = await startGateway({ dataDir, fakeProvider: fake });
      try {
        chat = chat.moveTo(second);
        chat.user('more');
        await chat.call();
        const res = await fetch(`${second.url}/v1/sessions?limit=50`);
        const listed = ((await res.json()) as { data: Array<{ id: string }> }).data.map((c) => c.id);
        assert.deepEqual(listed, [sessionId], 'the same chat, no branch of it');
        const results = ofType(await getEvents(second.url, sessionId), 'message').flatMap((m) =>
          m.content.flatMap((p) => (p.kind === 'tool-result' ? [[p.callId, p.toolName]] : [])),
        );
        assert.deepEqual(results, [
          ['call_0', 'exec'],
          ['call_0', 'read_file'],
        ]);
      } finally {
        await second.close();
      }
    });
  }
});

describe('a tool-call id handed out again: the received view labels each result apart', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        models: { 'small-*': { contextWindow: 2800 } },
        pruning: { mode: 'cache-ttl', ttl: '5m', keepLastAssistants: 1, minPrunableToolChars: 0 },
        // Only pruning shortens results here.
        toolResultTrimming: { thresholdChars: 1_000_000 },
      },
    });
  });
  after(() => gw.close());

  for (const format of LOOP_FORMATS) {
    test(`${format}: the cleared and the soft-trimmed call_0 each show their own action`, async () => {
      const sessionId = `reused-received-${format}`;
      const chat = conversation(gw, format, sessionId, TOOLS);
      chat.user('go');
      const first = resultText('first read');
      const second = resultText('second read');
      await chat.modelCalls('call_0', 'read_file', first);
      await chat.modelCalls('call_0', 'read_file', second);
      await chat.modelCalls('call_0', 'grep', 'one hit');

      // Cold: both long results are soft-trimmed, which leaves the estimate over hardClearRatio,
      // so the older one is cleared too.
      gw.clock.advance(20 * MINUTE);
      const out = await chat.call();
      assert.equal(out.pruned, 'soft=1,cleared=1');
      assert.deepEqual(toolResults(out.body), [
        ['call_0', '[Old tool result content cleared]'],
        ['call_0', softTrimmed(second)],
        ['call_0', 'one hit'],
      ]);

      const res = await fetch(`${gw.url}/v1/sessions/${sessionId}/received?offset=0&length=100`);
      assert.equal(res.status, 200);
      const { data } = (await res.json()) as { data: Array<{ effects: Array<Record<string, unknown>> }> };
      assert.deepEqual(
        data.flatMap((m) => m.effects).map((e) => [e.by, e.callId, e.action]),
        [
          ['pruned', 'call_0', 'cleared'],
          ['pruned', 'call_0', 'soft'],
        ],
      );
    });
  }
});
