/**
 * Agent-style chats driven through the official SDKs, one driver per wire format with the same
 * shape, so an e2e test can run one scenario over both formats. A driver keeps the client's
 * history (as an agent would), sends it whole on every call, appends the model's answer as the SDK
 * returned it, and reports the exact bytes the SDK sent, the response headers and the request the
 * fake provider received. Also: provider replies with tool calls (JSON and SSE), and readers for
 * the sessions API.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Event, Header } from '../../chat-log/format/current.ts';
import type { FakeProvider, FakeReply, RecordedRequest } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';

export type Format = 'openai' | 'anthropic';

/** A part of a user message or tool result: text, or a PNG/JPEG/... image given by its bytes. */
export type Part = { text: string } | { image: Buffer; mediaType?: string };

/** What one call produced, seen from both ends. */
export interface CallOutcome {
  status: number;
  headers: Headers;
  /** The bytes the SDK put on the wire to the gateway. */
  clientBody: string;
  /** The last request the fake provider received for this call. */
  provider: RecordedRequest;
  /** The provider request body, parsed. */
  providerBody: Record<string, unknown>;
  /** Text of the model's answer as the client got it. */
  answerText: string;
  /** Tool calls of the answer (id, name). */
  toolCalls: Array<{ id: string; name: string }>;
}

export interface CallOptions {
  stream?: boolean;
  headers?: Record<string, string>;
}

/** One conversation held by a client, in one wire format. */
export interface ChatDriver {
  readonly format: Format;
  readonly model: string;
  /** The history as the client holds it (wire messages, system excluded for Anthropic). */
  readonly messages: unknown[];
  user(content: string | Part[]): void;
  toolResult(callId: string, content: string | Part[]): void;
  /** Adds an assistant message the client made up (no call), e.g. a preamble an agent replays. */
  assistantText(text: string): void;
  /** Adds an assistant tool call the client made up (no call). */
  assistantToolCall(id: string, name: string, args: Record<string, unknown>): void;
  call(opts?: CallOptions): Promise<CallOutcome>;
  /** A copy of the driver's history, to fork an edited conversation from. */
  fork(mutate?: (messages: unknown[]) => void): ChatDriver;
  /** The provider reply that makes the model call tool `name` (JSON or SSE). */
  toolCallReply(id: string, name: string, args: Record<string, unknown>, stream?: boolean): FakeReply;
}

/** A fetch that records the bytes each request carries before passing it on. */
function capturingFetch(): { fetch: typeof fetch; bodies: string[]; responses: Response[] } {
  const bodies: string[] = [];
  const responses: Response[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const body = init?.body;
    bodies.push(
      typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body).toString('utf8') : '',
    );
    const res = await fetch(input, init);
    responses.push(res);
    return res;
  };
  return { fetch: wrapped, bodies, responses };
}

/** The status and headers of the last response a capture saw. */
function lastResponse(capture: { responses: Response[] }): Response {
  const res = capture.responses[capture.responses.length - 1];
  assert.ok(res, 'the SDK made no request');
  return res;
}

function dataUrl(part: { image: Buffer; mediaType?: string }): string {
  return `data:${part.mediaType ?? 'image/png'};base64,${part.image.toString('base64')}`;
}

function lastProviderRequest(fake: FakeProvider, path: string): RecordedRequest {
  const got = fake.requestsTo(path);
  const last = got[got.length - 1];
  assert.ok(last, `the fake provider received no request on ${path}`);
  return last;
}

// ---------------------------------------------------------------------------------------------
// OpenAI

type OpenaiMessage = OpenAI.ChatCompletionMessageParam;

function openaiParts(content: string | Part[]): string | OpenAI.ChatCompletionContentPart[] {
  if (typeof content === 'string') return content;
  return content.map((p) =>
    'text' in p
      ? { type: 'text' as const, text: p.text }
      : { type: 'image_url' as const, image_url: { url: dataUrl(p) } },
  );
}

export function openaiToolCallCompletion(
  model: string,
  id: string,
  name: string,
  args: Record<string, unknown>,
) {
  return {
    id: 'chatcmpl-tool',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 100, completion_tokens: 7, total_tokens: 107 },
  };
}

export function openaiToolCallStream(
  model: string,
  id: string,
  name: string,
  args: Record<string, unknown>,
): SseEvent[] {
  const chunk = (delta: unknown, finish: string | null, usage?: unknown) => ({
    data: JSON.stringify({
      id: 'chatcmpl-tool',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model,
      choices: usage ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(usage ? { usage } : {}),
    }),
  });
  const json = JSON.stringify(args);
  const half = Math.floor(json.length / 2);
  return [
    chunk({ role: 'assistant', content: null }, null),
    chunk({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: '' } }] }, null),
    chunk({ tool_calls: [{ index: 0, function: { arguments: json.slice(0, half) } }] }, null),
    chunk({ tool_calls: [{ index: 0, function: { arguments: json.slice(half) } }] }, null),
    chunk({}, 'tool_calls'),
    chunk({}, null, { prompt_tokens: 120, completion_tokens: 9, total_tokens: 129 }),
    { data: '[DONE]' },
  ];
}

class OpenaiDriver implements ChatDriver {
  readonly format = 'openai' as const;
  readonly messages: OpenaiMessage[];
  private readonly capture = capturingFetch();
  private readonly client: OpenAI;

  constructor(
    private readonly gatewayUrl: string,
    private readonly fake: FakeProvider,
    readonly model: string,
    private readonly base: {
      system?: string;
      tools?: OpenAI.ChatCompletionTool[];
      headers?: Record<string, string>;
    },
    messages?: OpenaiMessage[],
  ) {
    this.client = new OpenAI({
      baseURL: `${gatewayUrl}/v1`,
      apiKey: 'sk-test',
      maxRetries: 0,
      fetch: this.capture.fetch,
    });
    this.messages = messages ?? (base.system ? [{ role: 'system', content: base.system }] : []);
  }

  user(content: string | Part[]): void {
    this.messages.push({ role: 'user', content: openaiParts(content) });
  }

  toolResult(callId: string, content: string | Part[]): void {
    // Images in tool results are what agent clients send to OpenAI-compatible servers; the SDK's
    // type allows text parts only.
    this.messages.push({
      role: 'tool',
      tool_call_id: callId,
      content: openaiParts(content),
    } as OpenaiMessage);
  }

  assistantText(text: string): void {
    this.messages.push({ role: 'assistant', content: text });
  }

  assistantToolCall(id: string, name: string, args: Record<string, unknown>): void {
    this.messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    });
  }

  toolCallReply(id: string, name: string, args: Record<string, unknown>, stream = false): FakeReply {
    return stream
      ? { sse: openaiToolCallStream(this.model, id, name, args) }
      : { json: openaiToolCallCompletion(this.model, id, name, args) };
  }

  fork(mutate?: (messages: unknown[]) => void): ChatDriver {
    const copy = structuredClone(this.messages);
    mutate?.(copy);
    return new OpenaiDriver(this.gatewayUrl, this.fake, this.model, this.base, copy);
  }

  async call(opts: CallOptions = {}): Promise<CallOutcome> {
    const params = {
      model: this.model,
      messages: this.messages,
      ...(this.base.tools ? { tools: this.base.tools } : {}),
    };
    const headers = { ...this.base.headers, ...opts.headers };
    let message: OpenAI.ChatCompletionMessage;
    if (opts.stream) {
      const stream = this.client.chat.completions.stream(
        { ...params, stream: true, stream_options: { include_usage: true } },
        { headers },
      );
      message = (await stream.finalChatCompletion()).choices[0]!.message;
    } else {
      message = (await this.client.chat.completions.create(params, { headers })).choices[0]!.message;
    }
    const response = lastResponse(this.capture);
    // What an agent puts back into its history: the assistant message as the SDK returned it.
    this.messages.push(message as OpenaiMessage);
    const provider = lastProviderRequest(this.fake, '/v1/chat/completions');
    return {
      status: response.status,
      headers: response.headers,
      clientBody: this.capture.bodies[this.capture.bodies.length - 1] ?? '',
      provider,
      providerBody: provider.json ?? {},
      answerText: message.content ?? '',
      toolCalls: (message.tool_calls ?? []).flatMap((c) =>
        c.type === 'function' ? [{ id: c.id, name: c.function.name }] : [],
      ),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Anthropic

type AnthropicMessage = Anthropic.MessageParam;

function anthropicParts(
  content: string | Part[],
): string | Array<Anthropic.TextBlockParam | Anthropic.ImageBlockParam> {
  if (typeof content === 'string') return content;
  return content.map((p) =>
    'text' in p
      ? { type: 'text' as const, text: p.text }
      : {
          type: 'image' as const,
          source: {
            type: 'base64' as const,
            media_type: (p.mediaType ?? 'image/png') as Anthropic.Base64ImageSource['media_type'],
            data: p.image.toString('base64'),
          },
        },
  );
}

export function anthropicToolUseMessage(
  model: string,
  id: string,
  name: string,
  input: Record<string, unknown>,
) {
  return {
    id: 'msg_tool',
    type: 'message',
    role: 'assistant',
    model,
    content: [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id, name, input },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: {
      input_tokens: 100,
      output_tokens: 7,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

export function anthropicToolUseStream(
  model: string,
  id: string,
  name: string,
  input: Record<string, unknown>,
): SseEvent[] {
  const ev = (event: string, data: unknown): SseEvent => ({ event, data: JSON.stringify(data) });
  const json = JSON.stringify(input);
  const half = Math.floor(json.length / 2);
  return [
    ev('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_tool',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 120,
          output_tokens: 1,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    }),
    ev('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
    ev('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'Let me look.' },
    }),
    ev('content_block_stop', { type: 'content_block_stop', index: 0 }),
    ev('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id, name, input: {} },
    }),
    ev('ping', { type: 'ping' }),
    ev('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: json.slice(0, half) },
    }),
    ev('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: json.slice(half) },
    }),
    ev('content_block_stop', { type: 'content_block_stop', index: 1 }),
    ev('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: 9 },
    }),
    ev('message_stop', { type: 'message_stop' }),
  ];
}

class AnthropicDriver implements ChatDriver {
  readonly format = 'anthropic' as const;
  readonly messages: AnthropicMessage[];
  private readonly capture = capturingFetch();
  private readonly client: Anthropic;

  constructor(
    private readonly gatewayUrl: string,
    private readonly fake: FakeProvider,
    readonly model: string,
    private readonly base: {
      system?: string | Anthropic.TextBlockParam[];
      tools?: Anthropic.Tool[];
      headers?: Record<string, string>;
    },
    messages?: AnthropicMessage[],
  ) {
    this.client = new Anthropic({
      baseURL: gatewayUrl,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      fetch: this.capture.fetch,
    });
    this.messages = messages ?? [];
  }

  user(content: string | Part[]): void {
    this.messages.push({ role: 'user', content: anthropicParts(content) });
  }

  toolResult(callId: string, content: string | Part[]): void {
    const block: Anthropic.ToolResultBlockParam = {
      type: 'tool_result',
      tool_use_id: callId,
      content: anthropicParts(content),
    };
    // Consecutive tool results share one user message, as the API wants.
    const last = this.messages[this.messages.length - 1];
    if (
      last?.role === 'user' &&
      Array.isArray(last.content) &&
      last.content.every((b) => b.type === 'tool_result')
    ) {
      last.content.push(block);
    } else {
      this.messages.push({ role: 'user', content: [block] });
    }
  }

  assistantText(text: string): void {
    this.messages.push({ role: 'assistant', content: [{ type: 'text', text }] });
  }

  assistantToolCall(id: string, name: string, args: Record<string, unknown>): void {
    this.messages.push({ role: 'assistant', content: [{ type: 'tool_use', id, name, input: args }] });
  }

  toolCallReply(id: string, name: string, args: Record<string, unknown>, stream = false): FakeReply {
    return stream
      ? { sse: anthropicToolUseStream(this.model, id, name, args) }
      : { json: anthropicToolUseMessage(this.model, id, name, args) };
  }

  fork(mutate?: (messages: unknown[]) => void): ChatDriver {
    const copy = structuredClone(this.messages);
    mutate?.(copy);
    return new AnthropicDriver(this.gatewayUrl, this.fake, this.model, this.base, copy);
  }

  async call(opts: CallOptions = {}): Promise<CallOutcome> {
    const params = {
      model: this.model,
      max_tokens: 1024,
      messages: this.messages,
      ...(this.base.system !== undefined ? { system: this.base.system } : {}),
      ...(this.base.tools ? { tools: this.base.tools } : {}),
    };
    const headers = { ...this.base.headers, ...opts.headers };
    const message: Anthropic.Message = opts.stream
      ? await this.client.messages.stream(params, { headers }).finalMessage()
      : await this.client.messages.create(params, { headers });
    const response = lastResponse(this.capture);
    // What an agent puts back into its history: the content blocks as the SDK returned them.
    this.messages.push({ role: 'assistant', content: message.content as Anthropic.ContentBlockParam[] });
    const provider = lastProviderRequest(this.fake, '/v1/messages');
    return {
      status: response.status,
      headers: response.headers,
      clientBody: this.capture.bodies[this.capture.bodies.length - 1] ?? '',
      provider,
      providerBody: provider.json ?? {},
      answerText: message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(''),
      toolCalls: message.content.flatMap((b) => (b.type === 'tool_use' ? [{ id: b.id, name: b.name }] : [])),
    };
  }
}

export interface DriverOptions {
  /** System prompt (OpenAI: a leading system message; Anthropic: `system`). */
  system?: string;
  /** Anthropic system blocks, e.g. with a cache_control marker (wins over `system`). */
  anthropicSystem?: Anthropic.TextBlockParam[];
  /** Tools offered to the model, by name (a trivial JSON schema each). */
  tools?: string[];
  /** Headers sent on every call (e.g. x-session-id). */
  headers?: Record<string, string>;
}

/** A new conversation in `format` against the gateway at `gatewayUrl`. */
export function chatDriver(
  format: Format,
  gatewayUrl: string,
  fake: FakeProvider,
  model: string,
  opts: DriverOptions = {},
): ChatDriver {
  const schema = { type: 'object' as const, properties: { path: { type: 'string' } } };
  if (format === 'openai') {
    return new OpenaiDriver(gatewayUrl, fake, model, {
      system: opts.system,
      headers: opts.headers,
      tools: opts.tools?.map((name) => ({
        type: 'function' as const,
        function: { name, description: `tool ${name}`, parameters: schema },
      })),
    });
  }
  return new AnthropicDriver(gatewayUrl, fake, model, {
    system: opts.anthropicSystem ?? opts.system,
    headers: opts.headers,
    tools: opts.tools?.map((name) => ({ name, description: `tool ${name}`, input_schema: schema })),
  });
}

// ---------------------------------------------------------------------------------------------
// Reading wire bodies

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The wire messages of a body. */
export function wireMessages(body: Obj): Obj[] {
  return Array.isArray(body.messages) ? body.messages.filter(isObj) : [];
}

/** Tool results of a wire body (either format), by call id, with their content as sent. */
export function wireToolResults(body: Obj): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const m of wireMessages(body)) {
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') out.set(m.tool_call_id, m.content);
    if (m.role === 'user' && Array.isArray(m.content)) {
      for (const b of m.content) {
        if (isObj(b) && b.type === 'tool_result' && typeof b.tool_use_id === 'string')
          out.set(b.tool_use_id, b.content);
      }
    }
  }
  return out;
}

/** The text of a tool result's content as sent (string, or its text parts joined). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => (isObj(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .join('');
}

/** A deterministic text of exactly `n` characters whose every line names `label`. */
export function bigText(label: string, n: number): string {
  let s = '';
  for (let line = 0; s.length < n; line++)
    s += `${label} line ${String(line).padStart(4, '0')}: ${'abcdefghijklmnopqrstuvwxyz'.slice(line % 26)}\n`;
  return s.slice(0, n);
}

// ---------------------------------------------------------------------------------------------
// The sessions API

export interface SessionView {
  header: Header;
  snapshot: { position: number; values: Record<string, unknown> };
}

export async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T };
}

export async function getSession(gatewayUrl: string, id: string): Promise<SessionView> {
  const { status, body } = await getJson<SessionView>(`${gatewayUrl}/v1/sessions/${encodeURIComponent(id)}`);
  assert.equal(status, 200, `GET /v1/sessions/${id}`);
  return body;
}

export async function getEvents(gatewayUrl: string, id: string, query = ''): Promise<Event[]> {
  const { status, body } = await getJson<{ events: Event[] }>(
    `${gatewayUrl}/v1/sessions/${encodeURIComponent(id)}/events${query}`,
  );
  assert.equal(status, 200, `GET /v1/sessions/${id}/events${query}`);
  return body.events;
}

/** Events of one type, narrowed. */
export function ofType<T extends Event['type']>(
  events: readonly Event[],
  type: T,
): Array<Extract<Event, { type: T }>> {
  return events.filter((e): e is Extract<Event, { type: T }> => e.type === type);
}
