/**
 * A scripted Anthropic Messages model for Claude Code, as FakeProvider handlers: it answers from the
 * recorded request, so the same handler serves every kind of request a Claude Code session sends.
 * - A request without tools (a title, a summary, a quota probe) gets a short side answer: JSON that
 *   fits `output_config.format.schema` when the request asks for structured output, else text.
 * - A request whose latest typed prompt (the last user text that is not a tool result) carries a
 *   plan marker `[[plan:NAME]]` gets step k of that plan, k = the assistant turns since that prompt:
 *   tool_use blocks (stop_reason tool_use) or a final text.
 * - A compaction request (its last user text asks for a summary of the conversation) gets a
 *   summary in Claude Code's `<summary>` form.
 * Answers stream (SSE) when the request says `stream: true`, like the real API.
 */
import type { FakeHandler, FakeReply, RecordedRequest } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';

export type Block =
  { type: 'text'; text: string } | { type: 'tool_use'; name: string; input: Record<string, unknown> };

/** One model turn: the blocks it answers with, built from the request when a function. */
export type Step = Block[] | ((req: RecordedRequest) => Block[]);

export interface AgentScript {
  plans: Record<string, Step[]>;
  /** Text of a compaction summary. */
  summary?: string;
}

export const planMarker = (name: string): string => `[[plan:${name}]]`;

/** A model turn that runs one Bash command. */
export const bash = (command: string, description: string): Block[] => [
  { type: 'tool_use', name: 'Bash', input: { command, description } },
];

/** A model turn that answers with text and ends the loop. */
export const say = (text: string): Block[] => [{ type: 'text', text }];

export const SIDE_TITLE = 'Oda client test session';
export const SIDE_TEXT = 'side answer';
export const COMPACT_SUMMARY = [
  '1. Primary Request and Intent: the user asked to run the plan, one shell command at a time.',
  '2. Key Technical Concepts: shell commands run through the Bash tool of the agent.',
  '3. Pending Tasks: nothing is pending; every step of the plan succeeded.',
].join('\n');

interface Message {
  role: string;
  content: unknown;
}

/** The request's messages, or [] when absent. */
export function messagesOf(req: RecordedRequest | { json: Record<string, unknown> | undefined }): Message[] {
  const m = req.json?.messages;
  return Array.isArray(m) ? (m as Message[]) : [];
}

/** Text of a message's text blocks (or its string content). */
export function textOf(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return (m.content as Array<{ type?: string; text?: unknown }>)
    .filter((b) => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');
}

/** The tool_result blocks of a message. */
export function toolResultsOf(
  m: Message,
): Array<{ tool_use_id: string; content: unknown; is_error?: boolean }> {
  if (!Array.isArray(m.content)) return [];
  return (m.content as Array<Record<string, unknown>>).filter((b) => b.type === 'tool_result') as Array<{
    tool_use_id: string;
    content: unknown;
    is_error?: boolean;
  }>;
}

/** True when the request offers the model tools. */
export function hasTools(req: { json: Record<string, unknown> | undefined }): boolean {
  const t = req.json?.tools;
  return Array.isArray(t) && t.length > 0;
}

/** Text blocks a person (or Claude Code's own commands) typed: not `<system-reminder>` context. */
function typedText(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return (m.content as Array<{ type?: string; text?: unknown }>)
    .filter((b) => b.type === 'text' && typeof b.text === 'string' && !b.text.startsWith('<system-reminder>'))
    .map((b) => b.text as string)
    .join('\n');
}

/** Index of the latest user message carrying typed text (a prompt, possibly beside tool results). */
function lastPromptIndex(messages: Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user' && typedText(m).trim() !== '') return i;
  }
  return -1;
}

/** Claude Code's compaction instruction (recorded in RECORDED.md). */
const COMPACT_ASK = /create a detailed summary of the conversation/i;

/** Picks the answer blocks for one request. */
export function answerFor(script: AgentScript, req: RecordedRequest): Block[] {
  const body = req.json ?? {};
  const messages = messagesOf(req);
  const at = lastPromptIndex(messages);
  const prompt = at >= 0 ? typedText(messages[at]!) : '';
  if (COMPACT_ASK.test(prompt)) {
    return [
      {
        type: 'text',
        text: `<analysis>Steps run.</analysis>\n<summary>\n${script.summary ?? COMPACT_SUMMARY}\n</summary>`,
      },
    ];
  }
  if (!hasTools(req)) {
    const format = (body.output_config as { format?: { type?: string; schema?: unknown } } | undefined)
      ?.format;
    if (format?.type === 'json_schema')
      return [{ type: 'text', text: JSON.stringify(fitSchema(format.schema)) }];
    return [{ type: 'text', text: SIDE_TEXT }];
  }
  const plan = /\[\[plan:([a-z0-9-]+)\]\]/.exec(prompt)?.[1];
  const steps = plan ? script.plans[plan] : undefined;
  if (!steps || steps.length === 0) return [{ type: 'text', text: 'Nothing to do.' }];
  const turnsSince = messages.slice(at + 1).filter((m) => m.role === 'assistant').length;
  const step = steps[Math.min(turnsSince, steps.length - 1)]!;
  return typeof step === 'function' ? step(req) : step;
}

/** A JSON value fitting a (simple) JSON schema: strings get the test title. */
function fitSchema(schema: unknown): unknown {
  const s = (schema ?? {}) as { type?: string; properties?: Record<string, unknown>; items?: unknown };
  if (s.type === 'object' || s.properties) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s.properties ?? {})) out[k] = fitSchema(v);
    return out;
  }
  if (s.type === 'array') return [];
  if (s.type === 'boolean') return false;
  if (s.type === 'number' || s.type === 'integer') return 0;
  return SIDE_TITLE;
}

let idCounter = 0;
/** An id unique within the process (Claude Code merges assistant messages that share an id). */
function nextId(prefix: string): string {
  idCounter++;
  return `${prefix}${String(idCounter).padStart(6, '0')}`;
}

/** The FakeReply carrying `blocks`, streamed or not as the request asks. */
export function replyWith(req: RecordedRequest, blocks: Block[]): FakeReply {
  const model = typeof req.json?.model === 'string' ? req.json.model : 'claude-fake';
  type WireBlock =
    | { type: 'text'; text: string }
    | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };
  const content: WireBlock[] = blocks.map((b) =>
    b.type === 'text' ? b : { type: 'tool_use', id: nextId('toolu_oda'), name: b.name, input: b.input },
  );
  const stop = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const inputTokens = Math.ceil(req.raw.length / 4);
  const id = nextId('msg_oda');
  const usage = {
    input_tokens: inputTokens,
    output_tokens: 20,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  if (req.json?.stream !== true) {
    return {
      json: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: stop,
        stop_sequence: null,
        usage,
      },
    };
  }
  const ev = (event: string, data: unknown): SseEvent => ({ event, data: JSON.stringify(data) });
  const events: SseEvent[] = [
    ev('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
    ev('ping', { type: 'ping' }),
  ];
  content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push(
        ev('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'text', text: '' },
        }),
      );
      events.push(
        ev('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'text_delta', text: block.text },
        }),
      );
    } else {
      const b = block;
      events.push(
        ev('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
        }),
      );
      events.push(
        ev('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) },
        }),
      );
    }
    events.push(ev('content_block_stop', { type: 'content_block_stop', index }));
  });
  events.push(
    ev('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: 20 },
    }),
  );
  events.push(ev('message_stop', { type: 'message_stop' }));
  return { sse: events };
}

/** A handler answering every request of a Claude Code session from `script`. */
export function claudeCodeModel(script: AgentScript): FakeHandler {
  return (req) => {
    const path = req.path.split('?')[0];
    if (path === '/v1/messages/count_tokens')
      return { json: { input_tokens: Math.ceil(req.raw.length / 4) } };
    if (path !== '/v1/messages') return undefined;
    return replyWith(req, answerFor(script, req));
  };
}

/** Queues `handler` for the next `n` requests of `fake` (FakeProvider uses each queued reply once). */
export function scriptMany(
  fake: { script(...r: Array<FakeReply | FakeHandler>): void },
  handler: FakeHandler,
  n = 200,
): void {
  fake.script(...Array.from({ length: n }, () => handler));
}
