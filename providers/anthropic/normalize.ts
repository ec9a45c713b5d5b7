/**
 * Anthropic Messages bodies in the chat log's normalized form: requests, responses and streamed
 * responses. Malformed blocks are skipped, never thrown on.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
import { createHash } from 'node:crypto';
import type { ToolRef, Usage } from '../../chat-log/format/current.ts';
import type {
  NormalizeOptions,
  NormalizedRequest,
  NormalizedResponse,
  StreamAccumulator,
} from '../provider.ts';
import type { NormalizedMessage, PendingContentPart } from '../../chat-log/pending-message.ts';
import { anthropicImageSource } from './request-view.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import { canonicalJson } from '../../chat-log/canonical-json.ts';

type ToolResultContent = Extract<PendingContentPart, { kind: 'tool-result' }>['content'][number];

/** A tool by name and the sha256 of its canonical definition; a moved cache breakpoint is no change. */
function toolRef(tool: Obj): ToolRef | undefined {
  const name = str(tool.name);
  if (name === undefined) return undefined;
  const { cache_control: _marker, ...definition } = tool;
  return { name, digest: createHash('sha256').update(canonicalJson(definition)).digest('hex') };
}

/** A `document` block as a file part: what it is, never its bytes. */
function documentPart(block: Obj): ToolResultContent {
  const source = isObj(block.source) ? block.source : {};
  const name = str(block.title);
  const url = source.type === 'url' ? str(source.url) : undefined;
  const mediaType =
    str(source.media_type) ??
    (source.type === 'text' ? 'text/plain' : source.type === 'url' ? 'application/pdf' : undefined);
  return {
    kind: 'file',
    ...(name !== undefined && { name }),
    ...(mediaType !== undefined && { mediaType }),
    ...(url !== undefined && { url }),
  };
}

/** A text, image or document block; undefined for blocks a tool result or user turn cannot hold. */
function mediaPart(block: Obj): ToolResultContent | undefined {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? { kind: 'text', text: block.text } : undefined;
    case 'image': {
      const source = anthropicImageSource(block);
      if (source) return { kind: 'image', source };
      // An image by Files API id: record that it was there, without bytes.
      if (!isObj(block.source) || block.source.type !== 'file') return undefined;
      const fileId = str(block.source.file_id);
      return { kind: 'file', ...(fileId !== undefined && { name: fileId }) };
    }
    case 'document':
      return documentPart(block);
    default:
      return undefined;
  }
}

function toolResultContent(content: unknown): ToolResultContent[] {
  if (typeof content === 'string') return [{ kind: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.flatMap((block) => (isObj(block) ? (mediaPart(block) ?? []) : []));
}

/** One block of an assistant turn (request history or response); undefined when unknown. */
function modelPart(block: Obj, toolNames: Map<string, string>): PendingContentPart | undefined {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? { kind: 'text', text: block.text } : undefined;
    case 'thinking': {
      const signature = str(block.signature);
      return {
        kind: 'reasoning',
        text: str(block.thinking) ?? '',
        ...(signature !== undefined && { signature }),
      };
    }
    case 'redacted_thinking': {
      // The encrypted payload is kept as the signature, the format's only opaque slot.
      const data = str(block.data);
      return { kind: 'reasoning', text: '', redacted: true, ...(data !== undefined && { signature: data }) };
    }
    case 'tool_use':
    case 'server_tool_use':
    case 'mcp_tool_use':
      return {
        kind: 'tool-call',
        id: str(block.id) ?? '',
        name: str(block.name) ?? '',
        args: JSON.stringify(block.input ?? {}),
      };
    default: {
      // Server tool results (web search, code execution, MCP) sit inside the assistant turn.
      if (typeof block.type !== 'string' || !block.type.endsWith('_tool_result')) return undefined;
      const callId = str(block.tool_use_id) ?? '';
      const toolName = toolNames.get(callId);
      const failed =
        block.is_error === true ||
        (isObj(block.content) && str(block.content.type)?.endsWith('_error') === true);
      return {
        kind: 'tool-result',
        callId,
        ...(toolName !== undefined && { toolName }),
        failed,
        content: [{ kind: 'text', text: JSON.stringify(block.content ?? null) }],
      };
    }
  }
}

function blocksOf(content: unknown): unknown[] {
  return typeof content === 'string'
    ? [{ type: 'text', text: content }]
    : Array.isArray(content)
      ? content
      : [];
}

/** The parts of an assistant turn. */
function modelParts(content: unknown, toolNames: Map<string, string>): PendingContentPart[] {
  return blocksOf(content).flatMap((block) => (isObj(block) ? (modelPart(block, toolNames) ?? []) : []));
}

/** A user turn: one tool message per tool_result, then a user message with the rest, if any. */
function userMessages(content: unknown, toolNames: Map<string, string>): NormalizedMessage[] {
  const out: NormalizedMessage[] = [];
  const own: PendingContentPart[] = [];
  let hadOwnBlocks = false;
  for (const block of blocksOf(content)) {
    if (!isObj(block)) continue;
    if (block.type === 'tool_result') {
      const callId = str(block.tool_use_id) ?? '';
      const toolName = toolNames.get(callId);
      out.push({
        role: 'tool',
        content: [
          {
            kind: 'tool-result',
            callId,
            ...(toolName !== undefined && { toolName }),
            failed: block.is_error === true,
            content: toolResultContent(block.content),
          },
        ],
      });
      continue;
    }
    hadOwnBlocks = true;
    const part = mediaPart(block);
    if (part) own.push(part);
  }
  if (hadOwnBlocks || out.length === 0) out.push({ role: 'user', content: own });
  return out;
}

const NOT_SETTINGS = new Set(['model', 'messages', 'system', 'tools']);

/** Normalizes a Messages request body for the chat log. */
export function normalizeAnthropicRequest(
  body: Record<string, unknown>,
  opts: NormalizeOptions = {},
): NormalizedRequest {
  const fromIndex = opts.fromIndex ?? 0;
  const wire = Array.isArray(body.messages) ? body.messages : [];
  const toolNames = new Map<string, string>();
  for (const message of wire) {
    if (!isObj(message) || !Array.isArray(message.content)) continue;
    for (const block of message.content) {
      if (isObj(block) && typeof block.id === 'string' && typeof block.name === 'string') {
        toolNames.set(block.id, block.name);
      }
    }
  }

  const messages: NormalizedMessage[] = [];
  for (const [index, message] of wire.entries()) {
    if (!isObj(message) || index < fromIndex) continue;
    if (message.role === 'user') messages.push(...userMessages(message.content, toolNames));
    else if (message.role === 'assistant') {
      messages.push({ role: 'model', content: modelParts(message.content, toolNames) });
    }
  }

  const systemTexts = blocksOf(body.system).flatMap((block) =>
    isObj(block) && typeof block.text === 'string' ? [block.text] : [],
  );
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (!NOT_SETTINGS.has(key)) settings[key] = value;
  const tools = Array.isArray(body.tools)
    ? body.tools.flatMap((tool) => (isObj(tool) ? (toolRef(tool) ?? []) : []))
    : [];

  return {
    model: str(body.model) ?? '',
    system: typeof body.system === 'string' || systemTexts.length > 0 ? systemTexts.join('\n\n') : undefined,
    messages,
    tools,
    settings,
    stream: body.stream === true,
  };
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** Maps a `usage` object; later fields (message_delta) override earlier ones (message_start). */
function anthropicUsage(usage: Obj, into: Usage = {}): Usage {
  const fields: Array<[keyof Usage, unknown]> = [
    ['inputTokens', usage.input_tokens],
    ['outputTokens', usage.output_tokens],
    ['cacheReadTokens', usage.cache_read_input_tokens],
    ['cacheWriteTokens', usage.cache_creation_input_tokens],
  ];
  const out: Usage = { ...into };
  for (const [key, value] of fields) {
    const n = count(value);
    if (n !== undefined) out[key] = n;
  }
  return out;
}

/** Normalizes a non-streamed `message` object. */
export function normalizeAnthropicResponse(json: unknown): NormalizedResponse {
  const body = isObj(json) ? json : {};
  return {
    message: { role: 'model', content: modelParts(body.content, serverToolNames(body.content)) },
    usage: isObj(body.usage) ? anthropicUsage(body.usage) : undefined,
    stopReason: str(body.stop_reason),
    model: str(body.model),
  };
}

/** Server tool names by id within one response, for naming its server tool results. */
function serverToolNames(content: unknown): Map<string, string> {
  const names = new Map<string, string>();
  for (const block of blocksOf(content)) {
    if (isObj(block) && typeof block.id === 'string' && typeof block.name === 'string')
      names.set(block.id, block.name);
  }
  return names;
}

/** Folds Messages stream events into the response the non-streamed call would give. */
export function createAnthropicStreamAccumulator(): StreamAccumulator {
  /** Blocks by index; `json` collects input_json_delta text, `raw` keeps it when it never parsed. */
  const blocks = new Map<number, { block: Obj; json: string; raw?: string }>();
  let usage: Usage | undefined;
  let stopReason: string | undefined;
  let model: string | undefined;
  let stopped = false;

  function finish(entry: { block: Obj; json: string; raw?: string }): void {
    if (entry.json === '') return;
    try {
      entry.block.input = JSON.parse(entry.json);
    } catch {
      // Incomplete JSON (a cut stream): keep the text as sent rather than lose it.
      entry.raw = entry.json;
    }
    entry.json = '';
  }

  return {
    push(event, data) {
      let payload: unknown;
      try {
        payload = JSON.parse(data);
      } catch {
        return;
      }
      if (!isObj(payload)) return;
      const type = str(payload.type) ?? event;
      const index = typeof payload.index === 'number' ? payload.index : -1;
      switch (type) {
        case 'message_start':
          if (isObj(payload.message)) {
            model = str(payload.message.model) ?? model;
            if (isObj(payload.message.usage)) usage = anthropicUsage(payload.message.usage, usage);
          }
          break;
        case 'content_block_start':
          if (isObj(payload.content_block))
            blocks.set(index, { block: { ...payload.content_block }, json: '' });
          break;
        case 'content_block_delta': {
          const entry = blocks.get(index);
          const delta = payload.delta;
          if (!entry || !isObj(delta)) break;
          const block = entry.block;
          if (delta.type === 'text_delta') block.text = (str(block.text) ?? '') + (str(delta.text) ?? '');
          else if (delta.type === 'thinking_delta') {
            block.thinking = (str(block.thinking) ?? '') + (str(delta.thinking) ?? '');
          } else if (delta.type === 'signature_delta') {
            block.signature = (str(block.signature) ?? '') + (str(delta.signature) ?? '');
          } else if (delta.type === 'input_json_delta') entry.json += str(delta.partial_json) ?? '';
          break;
        }
        case 'content_block_stop': {
          const entry = blocks.get(index);
          if (entry) finish(entry);
          break;
        }
        case 'message_delta':
          if (isObj(payload.delta)) stopReason = str(payload.delta.stop_reason) ?? stopReason;
          if (isObj(payload.usage)) usage = anthropicUsage(payload.usage, usage);
          break;
        case 'error':
          // An error after the 200 (overloaded mid-stream): the answer ends here.
          stopReason ??= 'error';
          break;
        case 'message_stop':
          stopped = true;
          break;
        default:
          // ping and event types added later carry nothing to keep.
          break;
      }
    },

    ended() {
      return stopped;
    },

    result() {
      const entries = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, entry]) => entry);
      for (const entry of entries) finish(entry);
      const names = serverToolNames(entries.map((entry) => entry.block));
      const content = entries.flatMap((entry) => {
        const part = modelPart(entry.block, names);
        if (part?.kind === 'tool-call' && entry.raw !== undefined) part.args = entry.raw;
        return part ?? [];
      });
      return { message: { role: 'model', content }, usage, stopReason, model };
    },
  };
}
