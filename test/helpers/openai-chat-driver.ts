/**
 * The OpenAI Chat Completions chat driver (the official `openai` SDK against the gateway), and the
 * provider replies that make its model call a tool (JSON and SSE).
 */
import OpenAI from 'openai';
import type { FakeProvider, FakeReply } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';
import type { CallOptions, CallOutcome, ChatDriver, Part } from './sdk-chat-drivers.ts';
import { capturingFetch, dataUrl, lastProviderRequest, lastResponse } from './sdk-driver-capture.ts';

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

export class OpenaiDriver implements ChatDriver {
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
