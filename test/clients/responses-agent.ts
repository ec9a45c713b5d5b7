/**
 * A scripted OpenAI Responses model for Codex, as FakeProvider handlers: it answers `POST
 * /v1/responses` from the recorded request with the real event sequence of a streamed response
 * (`response.created`, `response.in_progress`, `response.output_item.added`/`.done`,
 * `response.output_text.delta`, `response.function_call_arguments.delta`, `response.completed`),
 * or the response object when the request does not stream.
 * Step k of the plan named in the latest user message (`[[plan:NAME]]`) answers the request whose
 * input holds k function call outputs after that message.
 */
import type { FakeHandler, FakeReply, RecordedRequest } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';

type Obj = Record<string, unknown>;

export type ResponsesStepItem =
  | { type: 'message'; text: string }
  /** A reasoning item with a summary (and `encrypted_content` when the request includes it). */
  | { type: 'reasoning'; summary: string }
  /** What the provider answers a remote compaction (an input ending in `compaction_trigger`). */
  | { type: 'compaction'; encrypted_content: string }
  /** `namespace`: the tool namespace the function belongs to (Codex's `multi_agent_v1`). */
  | { type: 'function_call'; name: string; arguments: Obj; namespace?: string };

export type ResponsesStep = ResponsesStepItem[] | ((req: RecordedRequest) => ResponsesStepItem[]);

export interface ResponsesScriptPlan {
  plans: Record<string, ResponsesStep[]>;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request's `input` items ([] for a string input). */
export function inputItems(req: { json: Obj | undefined }): Obj[] {
  const input = req.json?.input;
  return Array.isArray(input) ? input.filter(isObj) : [];
}

/** Text of a message item's input_text/output_text parts (or its string content). */
export function itemText(item: Obj): string {
  if (typeof item.content === 'string') return item.content;
  if (!Array.isArray(item.content)) return '';
  return item.content
    .filter(isObj)
    .map((p) => (typeof p.text === 'string' ? p.text : ''))
    .join('\n');
}

/** The items of the answer to `req` under `script`. */
export function responsesAnswerFor(script: ResponsesScriptPlan, req: RecordedRequest): ResponsesStepItem[] {
  const items = inputItems(req);
  let at = -1;
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!;
    // A message item may leave `type` out (EasyInputMessage), as the AI SDK and the Agents SDK send it.
    const message = it.type === 'message' || (it.type === undefined && typeof it.role === 'string');
    if (message && it.role === 'user' && /\[\[plan:[a-z0-9-]+\]\]/.test(itemText(it))) {
      at = i;
      break;
    }
  }
  const plan = at >= 0 ? /\[\[plan:([a-z0-9-]+)\]\]/.exec(itemText(items[at]!))?.[1] : undefined;
  const steps = plan ? script.plans[plan] : undefined;
  if (!steps || steps.length === 0) return [{ type: 'message', text: 'Nothing to do.' }];
  const done = items
    .slice(at + 1)
    .filter((it) => typeof it.type === 'string' && it.type.endsWith('_output')).length;
  const step = steps[Math.min(done, steps.length - 1)]!;
  return typeof step === 'function' ? step(req) : step;
}

let counter = 0;
const nextHex = (): string => {
  counter++;
  return (counter * 2654435761).toString(16).padStart(12, '0').repeat(4).slice(0, 48);
};

/** The reply carrying `items` as a Responses answer, streamed when the request says `stream: true`. */
export function responsesReplyWith(req: RecordedRequest, items: ResponsesStepItem[]): FakeReply {
  const body = req.json ?? {};
  const id = `resp_${nextHex()}`;
  const encrypted = Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content');
  const output: Obj[] = items.map((it) =>
    it.type === 'reasoning'
      ? {
          id: `rs_${nextHex()}`,
          type: 'reasoning',
          summary: [{ type: 'summary_text', text: it.summary }],
          ...(encrypted && { encrypted_content: `enc-${Buffer.from(it.summary).toString('base64')}` }),
        }
      : it.type === 'compaction'
        ? { id: `cmp_${nextHex()}`, type: 'compaction', encrypted_content: it.encrypted_content }
        : it.type === 'message'
          ? {
              id: `msg_${nextHex()}`,
              type: 'message',
              status: 'completed',
              role: 'assistant',
              content: [{ type: 'output_text', annotations: [], logprobs: [], text: it.text }],
            }
          : {
              id: `fc_${nextHex()}`,
              type: 'function_call',
              status: 'completed',
              name: it.name,
              ...(it.namespace !== undefined && { namespace: it.namespace }),
              arguments: JSON.stringify(it.arguments),
              call_id: `call_${nextHex().slice(0, 24)}`,
            },
  );
  const inputTokens = Math.ceil(req.raw.length / 4);
  const response = (status: string, out: Obj[], usage: Obj | null): Obj => ({
    id,
    object: 'response',
    created_at: 1_767_225_600,
    status,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    model: typeof body.model === 'string' ? body.model : 'gpt-5',
    output: out,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: body.reasoning ?? { effort: null, summary: null },
    store: body.store ?? true,
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    usage,
  });
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + 20,
  };
  if (body.stream !== true) return { json: response('completed', output, usage) };
  let seq = 0;
  const ev = (type: string, data: Obj): SseEvent => ({
    event: type,
    data: JSON.stringify({ type, sequence_number: seq++, ...data }),
  });
  const events: SseEvent[] = [
    ev('response.created', { response: response('in_progress', [], null) }),
    ev('response.in_progress', { response: response('in_progress', [], null) }),
  ];
  output.forEach((item, index) => {
    if (item.type === 'message') {
      const text = (item.content as Array<{ text: string }>)[0]!.text;
      events.push(
        ev('response.output_item.added', {
          output_index: index,
          item: { ...item, status: 'in_progress', content: [] },
        }),
      );
      events.push(
        ev('response.content_part.added', {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
        }),
      );
      events.push(
        ev('response.output_text.delta', {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          delta: text,
          logprobs: [],
        }),
      );
      events.push(
        ev('response.output_text.done', {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          text,
          logprobs: [],
        }),
      );
      events.push(
        ev('response.content_part.done', {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { type: 'output_text', annotations: [], logprobs: [], text },
        }),
      );
    } else if (item.type === 'reasoning') {
      const text = (item.summary as Array<{ text: string }>)[0]!.text;
      const part = { type: 'summary_text', text };
      events.push(ev('response.output_item.added', { output_index: index, item: { ...item, summary: [] } }));
      const at = { item_id: item.id, output_index: index, summary_index: 0 };
      events.push(ev('response.reasoning_summary_part.added', { ...at, part: { ...part, text: '' } }));
      events.push(ev('response.reasoning_summary_text.delta', { ...at, delta: text }));
      events.push(ev('response.reasoning_summary_text.done', { ...at, text }));
      events.push(ev('response.reasoning_summary_part.done', { ...at, part }));
    } else if (item.type === 'compaction') {
      events.push(ev('response.output_item.added', { output_index: index, item }));
    } else {
      events.push(
        ev('response.output_item.added', {
          output_index: index,
          item: { ...item, status: 'in_progress', arguments: '' },
        }),
      );
      events.push(
        ev('response.function_call_arguments.delta', {
          item_id: item.id,
          output_index: index,
          delta: item.arguments,
        }),
      );
      events.push(
        ev('response.function_call_arguments.done', {
          item_id: item.id,
          output_index: index,
          arguments: item.arguments,
        }),
      );
    }
    events.push(ev('response.output_item.done', { output_index: index, item }));
  });
  events.push(ev('response.completed', { response: response('completed', output, usage) }));
  return { sse: events };
}

/** A handler answering `POST /v1/responses` from `script` (other paths fall through). */
export function codexModel(script: ResponsesScriptPlan): FakeHandler {
  return (req) => {
    if (req.method !== 'POST' || req.path.split('?')[0] !== '/v1/responses') return undefined;
    return responsesReplyWith(req, responsesAnswerFor(script, req));
  };
}
