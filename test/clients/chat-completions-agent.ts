/**
 * A scripted OpenAI Chat Completions model for the SDK clients, as a FakeProvider handler: it
 * answers `POST /v1/chat/completions` from the recorded request, streamed (chunks, a usage-only
 * chunk when `stream_options.include_usage` asks for it, `data: [DONE]`) or not.
 * Step k of the plan named in the latest user message (`[[plan:NAME]]`) answers the request whose
 * messages hold k assistant messages after that user message.
 */
import type { FakeHandler, FakeReply, RecordedRequest } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';

type Obj = Record<string, unknown>;

export type ChatStepItem =
  { type: 'text'; text: string } | { type: 'tool_call'; name: string; arguments: Obj };

export interface ChatScriptPlan {
  plans: Record<string, ChatStepItem[][]>;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request's messages ([] when absent). */
export function chatMessages(req: { json: Obj | undefined }): Obj[] {
  const m = req.json?.messages;
  return Array.isArray(m) ? m.filter(isObj) : [];
}

/** Text of a message's text parts (or its string content). */
export function chatText(m: Obj): string {
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return m.content
    .filter(isObj)
    .map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .join('\n');
}

const PLAN = /\[\[plan:([a-z0-9-]+)\]\]/;

/** The items of the answer to `req` under `script`. */
export function chatAnswerFor(script: ChatScriptPlan, req: RecordedRequest): ChatStepItem[] {
  const messages = chatMessages(req);
  let at = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user' && PLAN.test(chatText(messages[i]!))) {
      at = i;
      break;
    }
  }
  const plan = at >= 0 ? PLAN.exec(chatText(messages[at]!))?.[1] : undefined;
  const steps = plan ? script.plans[plan] : undefined;
  if (!steps || steps.length === 0) return [{ type: 'text', text: 'Nothing to do.' }];
  const done = messages.slice(at + 1).filter((m) => m.role === 'assistant').length;
  return steps[Math.min(done, steps.length - 1)]!;
}

let counter = 0;

/** The reply carrying `items` as a Chat Completions answer, streamed when the request asks. */
export function chatReplyWith(req: RecordedRequest, items: ChatStepItem[]): FakeReply {
  const body = req.json ?? {};
  const model = typeof body.model === 'string' ? body.model : 'gpt-fake';
  counter++;
  const id = `chatcmpl-oda${String(counter).padStart(6, '0')}`;
  const text = items
    .filter((i) => i.type === 'text')
    .map((i) => i.text)
    .join('');
  const calls = items
    .filter((i) => i.type === 'tool_call')
    .map((c, n) => ({
      id: `call_oda${String(counter).padStart(6, '0')}_${n}`,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
  const finish = calls.length > 0 ? 'tool_calls' : 'stop';
  const promptTokens = Math.ceil(req.raw.length / 4);
  const usage = { prompt_tokens: promptTokens, completion_tokens: 20, total_tokens: promptTokens + 20 };
  if (body.stream !== true) {
    return {
      json: {
        id,
        object: 'chat.completion',
        created: 1_767_225_600,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text === '' ? null : text,
              refusal: null,
              ...(calls.length > 0 && { tool_calls: calls }),
            },
            logprobs: null,
            finish_reason: finish,
          },
        ],
        usage,
      },
    };
  }
  const chunk = (delta: Obj, finishReason: string | null): SseEvent => ({
    data: JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: 1_767_225_600,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    }),
  });
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '', refusal: null }, null)];
  if (text !== '') events.push(chunk({ content: text }, null));
  calls.forEach((c, index) => {
    events.push(
      chunk(
        {
          tool_calls: [
            { index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } },
          ],
        },
        null,
      ),
    );
    events.push(chunk({ tool_calls: [{ index, function: { arguments: c.function.arguments } }] }, null));
  });
  events.push(chunk({}, finish));
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  if (streamOptions?.include_usage === true) {
    events.push({
      data: JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: 1_767_225_600,
        model,
        choices: [],
        usage,
      }),
    });
  }
  events.push({ data: '[DONE]' });
  return { sse: events };
}

/** A handler answering `POST /v1/chat/completions` from `script` (other paths fall through). */
export function chatCompletionsModel(script: ChatScriptPlan): FakeHandler {
  return (req) => {
    if (req.method !== 'POST' || req.path.split('?')[0] !== '/v1/chat/completions') return undefined;
    return chatReplyWith(req, chatAnswerFor(script, req));
  };
}
