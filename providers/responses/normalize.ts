/**
 * OpenAI Responses bodies in the chat log's normalized form: requests (every `input` item one
 * message), responses (every `output` item one message, normalized exactly as the same item is
 * when the client sends it back in `input`, so a continued chat matches its log), and streamed
 * responses. Malformed items are skipped or kept raw, never thrown on.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 * @see https://platform.openai.com/docs/api-reference/responses/object
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
import type { ToolRef, Usage } from '../../chat-log/format/current.ts';
import type { NormalizedMessage } from '../../chat-log/pending-message.ts';
import { canonicalJson } from '../../chat-log/canonical-json.ts';
import { sha256Hex } from '../../lib/sha256.ts';
import type { NormalizeOptions, NormalizedRequest, NormalizedResponse } from '../provider.ts';
import { isObj, openaiStyleUsage, str, type Obj } from '../wire-json.ts';
import { normalizeItem } from './normalize-item.ts';
import { answeredToolNames } from './responses-items.ts';
import { setMember } from '../../lib/own-member.ts';

/** A tool by name and the sha256 of its canonical definition; built-in tools go by their type. */
function toolRef(tool: Obj): ToolRef | undefined {
  const name = str(tool.name) ?? str(tool.server_label) ?? str(tool.type);
  if (name === undefined) return undefined;
  return { name, digest: sha256Hex(canonicalJson(tool)) };
}

/** The items of `input`: a string is one user message. */
export function responsesInputItems(body: Record<string, unknown>): unknown[] {
  if (typeof body.input === 'string') return [{ role: 'user', content: body.input }];
  return Array.isArray(body.input) ? body.input : [];
}

const NOT_SETTINGS = new Set(['model', 'input', 'instructions', 'tools']);

/** Normalizes a Responses request body for the chat log; `fromIndex` counts `input` items. */
export function normalizeResponsesRequest(
  body: Record<string, unknown>,
  opts: NormalizeOptions = {},
): NormalizedRequest {
  const items = responsesInputItems(body);
  const toolNames = answeredToolNames(items);
  const messages = items.slice(opts.fromIndex ?? 0).map((item) => normalizeItem(item, toolNames));
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body))
    if (!NOT_SETTINGS.has(key)) setMember(settings, key, value);
  const tools = opts.tools
    ? opts.tools.map((t) => ({ ...t }))
    : Array.isArray(body.tools)
      ? body.tools.flatMap((tool) => (isObj(tool) ? (toolRef(tool) ?? []) : []))
      : [];
  const instructions = str(body.instructions);
  return {
    model: str(body.model) ?? '',
    system: instructions ? instructions : undefined,
    messages,
    tools,
    settings,
    stream: body.stream === true,
  };
}

/** Maps a response's `usage` (input tokens include the cached ones, as on Chat Completions). */
function responsesUsage(usage: unknown): Usage | undefined {
  return openaiStyleUsage(usage, {
    input: 'input_tokens',
    output: 'output_tokens',
    details: 'input_tokens_details',
  });
}

/** Why the answer ended: `completed`, `failed`, or the reason it is incomplete (`max_output_tokens`). */
function responsesStopReason(response: Obj): string | undefined {
  const status = str(response.status);
  if (status === 'incomplete' && isObj(response.incomplete_details)) {
    return str(response.incomplete_details.reason) ?? status;
  }
  return status;
}

/** Normalizes a response object: one message per output item, and all of them merged. */
export function normalizeResponsesResponse(json: unknown): NormalizedResponse {
  const body = isObj(json) ? json : {};
  const output = Array.isArray(body.output) ? body.output : [];
  const toolNames = answeredToolNames(output);
  const messages: NormalizedMessage[] = output.map((item) => normalizeItem(item, toolNames));
  const responseId = str(body.id);
  // Only a stored response's items can be named later (`store: false` keeps nothing to reference).
  const itemIds = (body.store === false ? [] : output).flatMap((item) => {
    const id = isObj(item) ? str(item.id) : undefined;
    return id === undefined ? [] : [id];
  });
  return {
    message: { role: 'model', content: messages.flatMap((m) => m.content) },
    messages,
    usage: responsesUsage(body.usage),
    stopReason: responsesStopReason(body),
    model: str(body.model),
    ...(responseId !== undefined && { responseId }),
    ...(itemIds.length > 0 && { itemIds }),
  };
}
