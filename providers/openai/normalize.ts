/**
 * OpenAI Chat Completions bodies in the chat log's normalized form: requests and responses
 * (streamed responses: openai-stream-accumulator.ts). The leading system and developer messages are the system prompt (its digest
 * is logged with the request); every later message is kept in its place, whatever its role: an
 * unknown role as role `other`, a content part no other kind holds as sent in a `raw` part, and a
 * message's own fields besides role and content (`name`, ...) in `wire`. Nothing is thrown on.
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://platform.openai.com/docs/api-reference/chat/object
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
import type { RawPart, ToolRef, Usage } from '../../chat-log/format/current.ts';
import type { NormalizeOptions, NormalizedRequest, NormalizedResponse } from '../provider.ts';
import type { NormalizedMessage, PendingContentPart } from '../../chat-log/pending-message.ts';
import { answeredToolNames, openaiImageSource, parseDataUrl } from './request-view.ts';
import { base64DataUrl, inlineFilePart } from '../../chat-log/file-parts.ts';
import { isObj, openaiStyleUsage, str, type Obj } from '../wire-json.ts';
import { canonicalJson } from '../../chat-log/canonical-json.ts';
import { setMember } from '../../lib/own-member.ts';
import { sha256Hex } from '../../lib/sha256.ts';

type ToolResultContent = Extract<PendingContentPart, { kind: 'tool-result' }>['content'][number];
type Wire = NonNullable<NormalizedMessage['wire']>;

/**
 * A part kept as sent. A `cache_control` marker (compatible servers that pass it on to Anthropic
 * models) is left out, as for every other part: the same history must compare equal when a client
 * moves its cache breakpoints.
 */
function rawPart(part: unknown): RawPart {
  if (!isObj(part) || !Object.hasOwn(part, 'cache_control')) {
    return { kind: 'raw', value: part as RawPart['value'] };
  }
  const { cache_control: _marker, ...rest } = part;
  return { kind: 'raw', value: rest as RawPart['value'] };
}

/** A tool by name and the sha256 of its canonical definition. */
function toolRef(tool: Obj): ToolRef | undefined {
  const fn = isObj(tool.function) ? tool.function : isObj(tool.custom) ? tool.custom : tool;
  const name = str(fn.name);
  if (name === undefined) return undefined;
  return { name, digest: sha256Hex(canonicalJson(tool)) };
}

/** The text parts of a content value: a string is one part. */
function contentTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part) =>
    isObj(part) && part.type === 'text' && typeof part.text === 'string' ? [part.text] : [],
  );
}

const only = (obj: Obj, keys: readonly string[]): boolean => Object.keys(obj).every((k) => keys.includes(k));

/** An `input_audio` part (base64 `data` and its `format`) as a file part with its content. */
function audioPart(part: Obj): ToolResultContent | undefined {
  const audio = part.input_audio;
  if (!only(part, ['type', 'input_audio']) || !isObj(audio) || !only(audio, ['data', 'format']))
    return undefined;
  const format = str(audio.format);
  if (format === undefined || typeof audio.data !== 'string') return undefined;
  const mediaType = `audio/${format}`;
  return inlineFilePart({ mediaType, dataUrl: base64DataUrl(mediaType, audio.data) });
}

/**
 * A `file` part as a file part: one sent inline (`file_data`, a data URL, and its `filename`) with
 * its content; one by id with the id as its name. Anything else is kept as sent.
 */
function filePart(part: Obj): ToolResultContent | undefined {
  const file = part.file;
  if (!only(part, ['type', 'file']) || !isObj(file)) return undefined;
  const data = str(file.file_data);
  const name = str(file.filename);
  if (
    data !== undefined &&
    only(file, ['file_data', 'filename']) &&
    (name !== undefined || !('filename' in file))
  ) {
    const mediaType = parseDataUrl(data)?.mediaType;
    return inlineFilePart({
      ...(name !== undefined && { name }),
      ...(mediaType !== undefined && { mediaType }),
      dataUrl: data,
    });
  }
  const id = str(file.file_id);
  if (id !== undefined && only(file, ['file_id'])) return { kind: 'file', name: id };
  return undefined;
}

/** One user/tool/system content part: its kind, or as sent when no kind holds it. */
function contentPart(part: unknown): ToolResultContent {
  if (!isObj(part)) return rawPart(part);
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' ? { kind: 'text', text: part.text } : rawPart(part);
    case 'image_url': {
      const source = openaiImageSource(part);
      return source ? { kind: 'image', source } : rawPart(part);
    }
    case 'input_audio':
      return audioPart(part) ?? rawPart(part);
    case 'file':
      return filePart(part) ?? rawPart(part);
    default:
      return rawPart(part);
  }
}

function contentParts(content: unknown): ToolResultContent[] {
  if (typeof content === 'string') return [{ kind: 'text', text: content }];
  // A missing or null content (a message of tool calls, a bare `name`) holds nothing.
  if (content === undefined || content === null) return [];
  if (!Array.isArray(content)) return [rawPart(content)];
  return content.map(contentPart);
}

/** The parts of an assistant message (request history or response). */
function assistantParts(message: Obj): PendingContentPart[] {
  const parts: PendingContentPart[] = [];
  // Compatible servers (DeepSeek, vLLM, OpenRouter) send reasoning beside the content.
  const reasoning = str(message.reasoning_content) ?? str(message.reasoning);
  if (reasoning) parts.push({ kind: 'reasoning', text: reasoning });
  const content = message.content;
  if (typeof content === 'string') {
    if (content) parts.push({ kind: 'text', text: content });
  } else if (Array.isArray(content)) {
    for (const part of content) {
      if (isObj(part) && part.type === 'text' && typeof part.text === 'string')
        parts.push({ kind: 'text', text: part.text });
      else if (isObj(part) && part.type === 'refusal' && typeof part.refusal === 'string') {
        parts.push({ kind: 'text', text: part.refusal });
      } else parts.push(rawPart(part));
    }
  }
  const refusal = str(message.refusal);
  if (refusal) parts.push({ kind: 'text', text: refusal });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObj(call)) continue;
      const id = str(call.id) ?? '';
      if (isObj(call.function) && typeof call.function.name === 'string') {
        parts.push({
          kind: 'tool-call',
          id,
          name: call.function.name,
          args: str(call.function.arguments) ?? '',
        });
      } else if (isObj(call.custom) && typeof call.custom.name === 'string') {
        parts.push({ kind: 'tool-call', id, name: call.custom.name, args: str(call.custom.input) ?? '' });
      }
    }
  }
  const legacy = message.function_call;
  if (isObj(legacy) && typeof legacy.name === 'string') {
    parts.push({ kind: 'tool-call', id: '', name: legacy.name, args: str(legacy.arguments) ?? '' });
  }
  return parts;
}

const NOT_SETTINGS = new Set(['model', 'messages', 'system', 'tools']);

/** The fields each role's parts already hold; anything else a message carries goes to `wire`. */
const HELD_FIELDS: Record<string, readonly string[]> = {
  system: ['role', 'content'],
  developer: ['role', 'content'],
  user: ['role', 'content'],
  tool: ['role', 'content', 'tool_call_id'],
  function: ['role', 'content', 'name'],
};

/** The message's fields besides those its parts hold (role included), when there are any. */
function wireOf(message: Obj, role: string): Wire | undefined {
  const held = HELD_FIELDS[role] ?? ['content'];
  const extra = Object.keys(message).filter((key) => !held.includes(key));
  if (extra.length === 0 || (extra.length === 1 && extra[0] === 'role')) return undefined;
  const wire: Wire = {};
  for (const [key, value] of Object.entries(message)) {
    if (key === 'role' || !held.includes(key)) setMember(wire, key, value as Wire[string]);
  }
  return wire;
}

function withWire(message: NormalizedMessage, wire: Wire | undefined): NormalizedMessage {
  return wire === undefined ? message : { ...message, wire };
}

/** Normalizes a Chat Completions request body for the chat log. */
export function normalizeOpenaiRequest(
  body: Record<string, unknown>,
  opts: NormalizeOptions = {},
): NormalizedRequest {
  const fromIndex = opts.fromIndex ?? 0;
  const wire = Array.isArray(body.messages) ? body.messages : [];
  const toolNames = answeredToolNames(wire);

  const systemTexts: string[] = [];
  const messages: NormalizedMessage[] = [];
  let inSystemPrompt = true;
  // Indexed, not `entries()`: no pair per message of a long history.
  for (let index = 0; index < wire.length; index++) {
    const message: unknown = wire[index];
    if (!isObj(message)) continue;
    const role = message.role;
    if (inSystemPrompt && (role === 'system' || role === 'developer')) {
      systemTexts.push(...contentTexts(message.content));
      continue;
    }
    // Any other message ends the system prompt, also one that is skipped below.
    inSystemPrompt = false;
    if (index < fromIndex) continue;
    switch (role) {
      case 'system':
      case 'developer':
      case 'user':
        messages.push(withWire({ role, content: contentParts(message.content) }, wireOf(message, role)));
        break;
      case 'assistant':
        // The model's turn is compared with the answer that was logged, which has no wire fields.
        messages.push({ role: 'model', content: assistantParts(message) });
        break;
      case 'tool':
      case 'function': {
        const callId = str(message.tool_call_id) ?? '';
        const toolName = toolNames.get(message);
        const result: NormalizedMessage = {
          role: 'tool',
          content: [
            {
              kind: 'tool-result',
              callId,
              ...(toolName !== undefined && { toolName }),
              failed: false,
              content: contentParts(message.content),
            },
          ],
        };
        messages.push(withWire(result, wireOf(message, role)));
        break;
      }
      default: {
        // An unknown role: kept in its place, its role as sent in `wire`.
        const { content: _content, ...fields } = message;
        messages.push({ role: 'other', content: contentParts(message.content), wire: fields as Wire });
      }
    }
  }

  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body))
    if (!NOT_SETTINGS.has(key)) setMember(settings, key, value);
  const tools = opts.tools
    ? opts.tools.map((t) => ({ ...t }))
    : Array.isArray(body.tools)
      ? body.tools.flatMap((tool) => (isObj(tool) ? (toolRef(tool) ?? []) : []))
      : [];

  return {
    model: str(body.model) ?? '',
    system: systemTexts.length > 0 ? systemTexts.join('\n\n') : undefined,
    messages,
    tools,
    settings,
    stream: body.stream === true,
  };
}

/** Maps `usage` of a completion or of the last stream chunk. */
function openaiUsage(usage: unknown): Usage | undefined {
  return openaiStyleUsage(usage, {
    input: 'prompt_tokens',
    output: 'completion_tokens',
    details: 'prompt_tokens_details',
  });
}

/** Normalizes a non-streamed `chat.completion` object (its first choice). */
export function normalizeOpenaiResponse(json: unknown): NormalizedResponse {
  const body = isObj(json) ? json : {};
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  const message = isObj(choice) && isObj(choice.message) ? choice.message : {};
  const responseId = str(body.id);
  return {
    message: { role: 'model', content: assistantParts(message) },
    usage: openaiUsage(body.usage),
    stopReason: isObj(choice) ? str(choice.finish_reason) : undefined,
    model: str(body.model),
    ...(responseId !== undefined && { responseId }),
  };
}
