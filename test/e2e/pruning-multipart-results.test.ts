/**
 * Pruning a tool result made of several text blocks (MCP tools answer that way) never leaves an
 * empty text block behind: Anthropic refuses one anywhere in the messages ("text content blocks must
 * be non-empty", which the fake provider answers too), and a projection is replayed on every later
 * request, so one empty block would fail the chat until pruning is switched off. A block the soft
 * trim or the hard clear takes whole holds `[...]` instead.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const MINUTE = 60_000;
const PARTS = [3000, 4000, 3000];

type Block = { type: string; text?: string; content?: Block[]; tool_use_id?: string };

/** An agent's history: six tool calls, each answered with three text blocks, then `last`. */
function history(last: string): Array<{ role: string; content: Block[] | string }> {
  const messages: Array<{ role: string; content: Block[] | string }> = [
    { role: 'user', content: 'Look around.' },
  ];
  for (let i = 1; i <= 6; i++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'read', input: { part: i } } as Block],
    });
    messages.push({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: `toolu_${i}`,
          content: PARTS.map((n, j) => ({ type: 'text', text: `${i}.${j} `.repeat(n).slice(0, n) })),
        },
      ],
    });
  }
  messages.push({ role: 'assistant', content: 'Done looking.' }, { role: 'user', content: last });
  return messages;
}

/** The text blocks of every tool result the provider received, by tool call. */
function receivedParts(body: Record<string, unknown>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of body.messages as Array<{ content: Block[] | string }>) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) {
      if (b.type === 'tool_result')
        out.set(
          b.tool_use_id!,
          (b.content ?? []).map((p) => p.text ?? ''),
        );
    }
  }
  return out;
}

for (const [name, pruning, expectCleared] of [
  ['soft trim', { minPrunableToolChars: 1000 }, false],
  ['hard clear', { minPrunableToolChars: 1000, softTrim: { maxChars: 100_000 } }, true],
] as const) {
  describe(`pruning tool results of several text blocks (${name})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({
        config: { models: { 'claude-*': { contextWindow: 20_000 } }, pruning: { ...pruning } },
      });
    });
    after(() => gw.close());

    test('no empty text block reaches the provider, on the pruning request and the ones after', async () => {
      const send = async (last: string) => {
        const res = await fetch(`${gw.url}/v1/messages`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-session-id': `multipart-${name.replace(' ', '-')}`,
          },
          body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: history(last) }),
        });
        const text = await res.text();
        assert.equal(res.status, 200, text);
        return receivedParts(gw.fake.requests.at(-1)!.json!);
      };
      await send('First question.');
      gw.clock.advance(10 * MINUTE);
      const pruned = await send('First question.');
      gw.clock.advance(MINUTE);
      const next = await send('First question.');

      const changed = [...pruned].filter(([, parts]) => parts.join('').length < 10_000);
      assert.ok(changed.length > 0, 'some results were pruned');
      for (const [id, parts] of pruned) {
        assert.equal(parts.length, 3, id);
        for (const part of parts) assert.notEqual(part, '', `${id}: no empty block`);
      }
      if (expectCleared) {
        assert.ok(changed.some(([, parts]) => parts[0] === '[Old tool result content cleared]'));
        for (const [, parts] of changed) assert.deepEqual(parts.slice(1), ['[...]', '[...]']);
      } else {
        // The middle block lies wholly in the cut of a 10,000-character result trimmed to 1500 + 1500.
        for (const [, parts] of changed) assert.equal(parts[1], '[...]');
      }
      // The projection is replayed as it was on the next request.
      assert.deepEqual([...next], [...pruned]);
    });
  });
}
