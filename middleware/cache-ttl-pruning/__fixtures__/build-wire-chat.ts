/**
 * Test support: one chat script rendered as the body each wire format's SDK would send, so the
 * pruning tests run over the real request views of both formats (and, where a test asks for it,
 * the Responses API's too).
 */
import { createAnthropicRequestView } from '../../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../../providers/openai/request-view.ts';
import { createResponsesRequestView } from '../../../providers/responses/request-view.ts';
import type { RequestView } from '../../../providers/request-view.ts';

export type WireFormat = 'openai' | 'anthropic';
export const WIRE_FORMATS: readonly WireFormat[] = ['openai', 'anthropic'];
/** Every wire format a chat script renders to; the Responses body keeps its turns in `input`. */
export type AnyWireFormat = WireFormat | 'responses';
export const ALL_WIRE_FORMATS: readonly AnyWireFormat[] = [...WIRE_FORMATS, 'responses'];

/** A 1x1 PNG. */
export const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

export type ToolPart = { readonly text: string } | { readonly image: true };

export type ChatStep =
  | { readonly kind: 'user'; readonly text: string }
  | {
      readonly kind: 'assistant';
      readonly text?: string;
      readonly calls?: ReadonlyArray<{ readonly id: string; readonly name: string; readonly args?: string }>;
    }
  | { readonly kind: 'tool'; readonly id: string; readonly content: string | readonly ToolPart[] };

type Obj = Record<string, unknown>;

function openaiToolContent(content: string | readonly ToolPart[]): unknown {
  if (typeof content === 'string') return content;
  return content.map((part) =>
    'text' in part
      ? { type: 'text', text: part.text }
      : { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
  );
}

function anthropicToolContent(content: string | readonly ToolPart[]): unknown {
  if (typeof content === 'string') return content;
  return content.map((part) =>
    'text' in part
      ? { type: 'text', text: part.text }
      : { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
  );
}

/** The OpenAI Chat Completions body for `steps`. */
export function openaiBody(steps: readonly ChatStep[], system = 'You are a coding agent.'): Obj {
  const messages: Obj[] = [{ role: 'system', content: system }];
  for (const step of steps) {
    if (step.kind === 'user') messages.push({ role: 'user', content: step.text });
    else if (step.kind === 'assistant') {
      const message: Obj = { role: 'assistant', content: step.text ?? null };
      if (step.calls && step.calls.length > 0) {
        message.tool_calls = step.calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.args ?? '{}' },
        }));
      }
      messages.push(message);
    } else {
      messages.push({ role: 'tool', tool_call_id: step.id, content: openaiToolContent(step.content) });
    }
  }
  return { model: 'gpt-4.1', stream: false, messages };
}

/** The Anthropic Messages body for `steps`; consecutive tool results share one user message. */
export function anthropicBody(steps: readonly ChatStep[], system = 'You are a coding agent.'): Obj {
  const messages: Obj[] = [];
  let results: Obj[] | undefined;
  for (const step of steps) {
    if (step.kind === 'tool') {
      const block = {
        type: 'tool_result',
        tool_use_id: step.id,
        content: anthropicToolContent(step.content),
      };
      if (results) results.push(block);
      else {
        results = [block];
        messages.push({ role: 'user', content: results });
      }
      continue;
    }
    results = undefined;
    if (step.kind === 'user') messages.push({ role: 'user', content: [{ type: 'text', text: step.text }] });
    else {
      const content: Obj[] = [];
      if (step.text !== undefined) content.push({ type: 'text', text: step.text });
      for (const call of step.calls ?? []) {
        content.push({
          type: 'tool_use',
          id: call.id,
          name: call.name,
          input: JSON.parse(call.args ?? '{}'),
        });
      }
      messages.push({ role: 'assistant', content });
    }
  }
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 1024,
    system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
    messages,
  };
}

function responsesToolOutput(content: string | readonly ToolPart[]): unknown {
  if (typeof content === 'string') return content;
  return content.map((part) =>
    'text' in part
      ? { type: 'input_text', text: part.text }
      : { type: 'input_image', image_url: `data:image/png;base64,${PNG_BASE64}` },
  );
}

/** The OpenAI Responses body for `steps`: one item per message, call and output. */
export function responsesBody(steps: readonly ChatStep[], system = 'You are a coding agent.'): Obj {
  const input: Obj[] = [];
  for (const step of steps) {
    if (step.kind === 'user') {
      input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: step.text }] });
    } else if (step.kind === 'assistant') {
      if (step.text !== undefined) {
        input.push({
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: step.text, annotations: [] }],
        });
      }
      for (const call of step.calls ?? []) {
        input.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.args ?? '{}' });
      }
    } else {
      input.push({ type: 'function_call_output', call_id: step.id, output: responsesToolOutput(step.content) });
    }
  }
  return { model: 'gpt-5', instructions: system, store: false, input };
}

/** The body of `steps` in `format`. */
export function wireBody(format: AnyWireFormat, steps: readonly ChatStep[]): Obj {
  if (format === 'responses') return responsesBody(steps);
  return format === 'openai' ? openaiBody(steps) : anthropicBody(steps);
}

/** The real request view of `format` over `body`. */
export function viewOf(format: AnyWireFormat, body: Obj): RequestView {
  if (format === 'responses') return createResponsesRequestView(body);
  return format === 'openai' ? createOpenaiRequestView(body) : createAnthropicRequestView(body);
}

/** The text of the tool result answering `callId`, its parts joined. */
export function toolResultText(view: RequestView, callId: string): string {
  const ref = view.toolResults().find((r) => r.callId === callId);
  if (!ref) throw new Error(`no tool result ${callId}`);
  return ref.texts.map((slot) => slot.text).join('');
}
