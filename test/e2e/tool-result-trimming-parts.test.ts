/**
 * A tool result split into many text blocks (MCP tools answer that way) is trimmed as one text
 * (SPEC section 5): a context-overflow refusal of a chat whose only large result is ten 6,000-
 * character blocks is repaired, not passed back. The head comes from the first blocks, the tail
 * from the last, every block keeps its place, a block the cut takes whole holds `[...]` (Anthropic
 * refuses an empty text block, and so does the fake provider), and the next turn carries the same
 * bytes from the start. For Anthropic tool_result blocks, OpenAI chat tool messages with content
 * arrays and Responses function_call_output arrays of input_text, through the official SDKs.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';

/** Written out here, not imported: the test states the contract independently of the code. */
const MARKER = '\n\n[... tool result middle pruned ...]\n\n';
const REMOVED = '[...]';
const HEAD = 4096;
const TAIL = 1024;
const ANSWER = 'Hello from the fake provider.';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Block `i` of an MCP answer: `size` characters of numbered rows, different in every block. */
function block(i: number, size: number): string {
  let out = '';
  for (let row = 0; out.length < size; row++) out += `block ${i} row ${row}: ${'v'.repeat(row % 17)}|\n`;
  return out.slice(0, size);
}

/**
 * The blocks as trimmed, from the contract: the first HEAD characters of the blocks laid end to
 * end, the marker where the cut starts, the last TAIL characters; a block with nothing left holds
 * `[...]`. All ASCII here, so characters are code units.
 */
function expectedBlocks(blocks: readonly string[]): string[] {
  const total = blocks.reduce((n, b) => n + b.length, 0);
  let start = 0;
  return blocks.map((b) => {
    const end = start + b.length;
    let out = '';
    if (start < HEAD) out += b.slice(0, Math.min(end, HEAD) - start);
    if (start <= HEAD && HEAD < end) out += MARKER;
    if (end > total - TAIL) out += b.slice(Math.max(start, total - TAIL) - start);
    start = end;
    return out === '' ? REMOVED : out;
  });
}

/** One wire format: a chat whose last message is a tool result of `blocks`, and how to read it back. */
interface WireCase {
  name: string;
  /** For session ids. */
  slug: string;
  path: string;
  callId: string;
  send(gw: TestGateway, session: string, blocks: readonly string[], turn: 1 | 2): Promise<Headers>;
  /** The tool result's text blocks in a request the provider received. */
  received(json: Record<string, unknown> | undefined): string[];
}

type Obj = Record<string, unknown>;
const items = (v: unknown) => v as Obj[];

const anthropicChat = (blocks: readonly string[], turn: 1 | 2) => [
  { role: 'user' as const, content: 'Query the orders table.' },
  {
    role: 'assistant' as const,
    content: [{ type: 'tool_use' as const, id: 'toolu_mcp', name: 'mcp__db__query', input: { q: 'orders' } }],
  },
  {
    role: 'user' as const,
    content: [
      {
        type: 'tool_result' as const,
        tool_use_id: 'toolu_mcp',
        content: blocks.map((text) => ({ type: 'text' as const, text })),
      },
    ],
  },
  ...(turn === 2
    ? [
        { role: 'assistant' as const, content: ANSWER },
        { role: 'user' as const, content: 'Which order is the oldest?' },
      ]
    : []),
];

const openaiChat = (blocks: readonly string[], turn: 1 | 2): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'user', content: 'Query the orders table.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_mcp', type: 'function', function: { name: 'mcp__db__query', arguments: '{}' } }],
  },
  { role: 'tool', tool_call_id: 'call_mcp', content: blocks.map((text) => ({ type: 'text', text })) },
  ...(turn === 2
    ? [
        { role: 'assistant' as const, content: ANSWER },
        { role: 'user' as const, content: 'Which order is the oldest?' },
      ]
    : []),
];

const responsesInput = (blocks: readonly string[], turn: 1 | 2): OpenAI.Responses.ResponseInput => [
  { type: 'message', role: 'user', content: 'Query the orders table.' },
  { type: 'function_call', call_id: 'call_mcp', name: 'mcp__db__query', arguments: '{}' },
  {
    type: 'function_call_output',
    call_id: 'call_mcp',
    output: blocks.map((text) => ({ type: 'input_text' as const, text })),
  },
  ...(turn === 2
    ? [
        { type: 'message' as const, role: 'assistant' as const, content: ANSWER },
        { type: 'message' as const, role: 'user' as const, content: 'Which order is the oldest?' },
      ]
    : []),
];

const CASES: WireCase[] = [
  {
    name: 'anthropic tool_result',
    slug: 'anthropic',
    path: '/v1/messages',
    callId: 'toolu_mcp',
    async send(gw, session, blocks, turn) {
      const client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
      const { data, response } = await client.messages
        .create(
          { model: 'claude-mcp', max_tokens: 64, messages: anthropicChat(blocks, turn) },
          { headers: { 'x-session-id': session } },
        )
        .withResponse();
      assert.deepEqual(data.content, [{ type: 'text', text: ANSWER }]);
      return response.headers;
    },
    received: (json) =>
      items(items(items(json?.messages)[2]!.content)[0]!.content).map((b) => b.text as string),
  },
  {
    name: 'openai chat tool message',
    slug: 'openai',
    path: '/v1/chat/completions',
    callId: 'call_mcp',
    async send(gw, session, blocks, turn) {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
      const { data, response } = await client.chat.completions
        .create(
          { model: 'gpt-mcp', messages: openaiChat(blocks, turn) },
          { headers: { 'x-session-id': session } },
        )
        .withResponse();
      assert.equal(data.choices[0]?.message.content, ANSWER);
      return response.headers;
    },
    received: (json) => items(items(json?.messages)[2]!.content).map((p) => p.text as string),
  },
  {
    name: 'responses function_call_output',
    slug: 'responses',
    path: '/v1/responses',
    callId: 'call_mcp',
    async send(gw, session, blocks, turn) {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
      const { data, response } = await client.responses
        .create(
          { model: 'gpt-5', input: responsesInput(blocks, turn) },
          { headers: { 'x-session-id': session } },
        )
        .withResponse();
      assert.equal(data.output_text, ANSWER);
      return response.headers;
    },
    received: (json) => items(items(json?.input)[2]!.output).map((p) => p.text as string),
  },
];

/** Block sizes: ten of 6,000 (the head within the first block), and twelve of 2,500 (the head spans two). */
const SHAPES = [
  { label: '10 x 6,000', blocks: Array.from({ length: 10 }, (_, i) => block(i, 6000)) },
  { label: '12 x 2,500', blocks: Array.from({ length: 12 }, (_, i) => block(i, 2500)) },
];

for (const wc of CASES) {
  describe(`a ${wc.name} of many text blocks is trimmed as one text`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({ config: { pruning: { mode: 'off' } } });
    });
    after(() => gw.close());
    beforeEach(() => {
      gw.fake.reset();
      gw.fake.options = {};
    });

    for (const shape of SHAPES) {
      test(`${shape.label}: overflow refusal -> one trim -> answer; the next turn sends the trimmed blocks`, async () => {
        const session = `parts-${wc.slug}-${shape.blocks.length}`;
        const blocks = shape.blocks;
        const trimmed = expectedBlocks(blocks);
        assert.ok(trimmed.includes(REMOVED), 'some blocks fall wholly in the cut');
        // The whole history is ~30,000 characters or more; the trimmed one ~5,500.
        gw.fake.options = { contextLimitChars: 20_000 };

        const headers = await wc.send(gw, session, blocks, 1);
        assert.equal(headers.get('x-oda-attempts'), '2', 'refused once, then answered');
        assert.equal(headers.get('x-oda-trimmed'), '1', 'one tool result trimmed');
        const sent = gw.fake.requestsTo(wc.path);
        assert.equal(sent.length, 2);
        assert.deepEqual(wc.received(sent[0]!.json), blocks, 'the first attempt is as the client sent it');
        assert.deepEqual(wc.received(sent[1]!.json), trimmed);

        const events = await sessionEvents(gw.url, session);
        const trims = eventsOfType(events, 'tool-result-trimmed');
        assert.equal(trims.length, 1);
        const { callId, part, originalChars, digest, parts, trigger } = trims[0]!;
        assert.deepEqual(
          { callId, part, originalChars, digest, parts, trigger },
          {
            callId: wc.callId,
            part: 0,
            originalChars: blocks.join('').length,
            digest: sha256(blocks.join('')),
            parts: blocks.map((b) => ({ chars: b.length, digest: sha256(b) })),
            trigger: 'overflow',
          },
        );

        // The next turn, on a provider with room: the client resends the full blocks.
        gw.fake.reset();
        gw.fake.options = {};
        const next = await wc.send(gw, session, blocks, 2);
        assert.equal(next.get('x-oda-trimmed'), null, 'nothing trimmed anew');
        const turn2 = gw.fake.requestsTo(wc.path);
        assert.equal(turn2.length, 1);
        assert.deepEqual(wc.received(turn2[0]!.json), trimmed, 'the model never gets the cut text back');
        const after2 = eventsOfType(await sessionEvents(gw.url, session), 'tool-result-trimmed');
        assert.equal(after2.length, 1, 'and no second decision');
      });
    }
  });
}
