/**
 * The Anthropic Messages chat driver (the official `@anthropic-ai/sdk` against the gateway), and the
 * provider replies that make its model use a tool (JSON and SSE).
 */
import Anthropic from '@anthropic-ai/sdk';
import type { FakeProvider, FakeReply } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';
import type { CallOptions, CallOutcome, ChatDriver, Part } from './sdk-chat-drivers.ts';
import { capturingFetch, lastProviderRequest, lastResponse } from './sdk-driver-capture.ts';

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

export class AnthropicDriver implements ChatDriver {
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
