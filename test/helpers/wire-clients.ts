/**
 * The two wire formats as the e2e tests drive them: the official SDK of each, pointed at a test
 * gateway, returning the answer text and the response headers (or rejecting with the SDK's error).
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { TestGateway } from './start-gateway.ts';

export type WireName = 'openai' | 'anthropic';

/** What a client got back from one successful call. */
export interface ClientAnswer {
  text: string;
  headers: Headers;
  /** The chat the gateway used (`x-session-id`). */
  sessionId: string;
}

/** The path the gateway forwards the format's model calls to, at the fake provider. */
export const UPSTREAM_PATH: Record<WireName, string> = {
  openai: '/v1/chat/completions',
  anthropic: '/v1/messages',
};

/** Sends `body` with the format's official SDK (no SDK retries) and returns the answer. */
export async function callWithSdk(
  wire: WireName,
  gw: Pick<TestGateway, 'url'>,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<ClientAnswer> {
  if (wire === 'openai') {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-key', maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming, { headers })
      .withResponse();
    return {
      text: data.choices[0]?.message.content ?? '',
      headers: response.headers,
      sessionId: response.headers.get('x-session-id') ?? '',
    };
  }
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
  const { data, response } = await client.messages
    .create(body as unknown as Anthropic.MessageCreateParamsNonStreaming, { headers })
    .withResponse();
  const first = data.content[0];
  return {
    text: first?.type === 'text' ? first.text : '',
    headers: response.headers,
    sessionId: response.headers.get('x-session-id') ?? '',
  };
}

/** Posts raw bytes to the gateway's endpoint for `wire`, as curl would. */
export function postRaw(wire: WireName, gw: Pick<TestGateway, 'url'>, raw: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (wire === 'anthropic') headers['anthropic-version'] = '2023-06-01';
  return fetch(`${gw.url}${UPSTREAM_PATH[wire]}`, { method: 'POST', headers, body: raw });
}

/** The SDK error class each format raises for a status (400 and 500 are the ones tests expect). */
export function sdkErrorClass(wire: WireName, status: 400 | 413 | 500): new (...args: never[]) => Error {
  if (wire === 'openai') {
    if (status === 400) return OpenAI.BadRequestError;
    if (status === 500) return OpenAI.InternalServerError;
    return OpenAI.APIError;
  }
  if (status === 400) return Anthropic.BadRequestError;
  if (status === 500) return Anthropic.InternalServerError;
  return Anthropic.APIError;
}

/** The error body a client's SDK error carries, as the SDK exposes it (OpenAI: `error`, Anthropic: the whole body). */
export function sdkErrorBody(e: unknown): unknown {
  if (e instanceof OpenAI.APIError || e instanceof Anthropic.APIError) return e.error;
  return undefined;
}

/** The HTTP status of an SDK error. */
export function sdkErrorStatus(e: unknown): number | undefined {
  if (e instanceof OpenAI.APIError || e instanceof Anthropic.APIError) return e.status;
  return undefined;
}

/** Like `callWithSdk`, streamed: sends `body` with `stream: true` and joins the streamed text. */
export async function streamWithSdk(
  wire: WireName,
  gw: Pick<TestGateway, 'url'>,
  body: Record<string, unknown>,
): Promise<ClientAnswer> {
  const pieces: string[] = [];
  if (wire === 'openai') {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-key', maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ ...(body as unknown as OpenAI.ChatCompletionCreateParamsStreaming), stream: true })
      .withResponse();
    for await (const chunk of data) pieces.push(chunk.choices[0]?.delta?.content ?? '');
    return {
      text: pieces.join(''),
      headers: response.headers,
      sessionId: response.headers.get('x-session-id') ?? '',
    };
  }
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
  const { data, response } = await client.messages
    .create({ ...(body as unknown as Anthropic.MessageCreateParamsStreaming), stream: true })
    .withResponse();
  for await (const event of data) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
      pieces.push(event.delta.text);
  }
  return {
    text: pieces.join(''),
    headers: response.headers,
    sessionId: response.headers.get('x-session-id') ?? '',
  };
}
