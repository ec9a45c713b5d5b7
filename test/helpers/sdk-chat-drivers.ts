/**
 * Agent-style chats driven through the official SDKs, one driver per wire format with the same
 * shape, so an e2e test can run one scenario over both formats. A driver keeps the client's
 * history (as an agent would), sends it whole on every call, appends the model's answer as the SDK
 * returned it, and reports the exact bytes the SDK sent, the response headers and the request the
 * fake provider received. The drivers are in `openai-chat-driver.ts` and `anthropic-chat-driver.ts`
 * (with the provider replies that call a tool); here are their common shape, readers of wire
 * bodies and readers for the sessions API.
 */
import assert from 'node:assert/strict';
import type Anthropic from '@anthropic-ai/sdk';
import type { Event, Header } from '../../chat-log/format/current.ts';
import type { FakeProvider, FakeReply, RecordedRequest } from '../fake-provider/fake-provider.ts';
import { AnthropicDriver } from './anthropic-chat-driver.ts';
import { OpenaiDriver } from './openai-chat-driver.ts';

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
