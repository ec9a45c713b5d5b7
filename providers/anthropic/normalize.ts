/**
 * Anthropic Messages requests in the chat log's normalized form (`normalize-answer.ts` has the
 * answers, streamed or not). Every message the model receives is kept in its place, `system` messages inside
 * `messages` too; a block no other kind holds (a server tool call or result, `container_upload`, a
 * block type added later) is kept as sent in a `raw` part, and an unknown role as role `other` with
 * the role as sent in `wire`. Nothing is thrown on.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
import type { RawPart, ToolRef } from '../../chat-log/format/current.ts';
import type { NormalizeOptions, NormalizedRequest } from '../provider.ts';
import type { NormalizedMessage, PendingContentPart } from '../../chat-log/pending-message.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import { canonicalJson } from '../../chat-log/canonical-json.ts';
import { mediaPart } from './normalize-media.ts';
import { answeredToolNames } from './request-view.ts';
import { setMember } from '../../lib/own-member.ts';
import { sha256Hex } from '../../lib/sha256.ts';

type ToolResultContent = Extract<PendingContentPart, { kind: 'tool-result' }>['content'][number];
type Wire = NonNullable<NormalizedMessage['wire']>;

/**
 * A block kept as sent. Its `cache_control` marker is left out, as for every other block: clients
 * move their cache breakpoints from turn to turn, and the same history must compare equal.
 */
function rawPart(block: unknown): RawPart {
  if (!isObj(block) || !Object.hasOwn(block, 'cache_control')) {
    return { kind: 'raw', value: block as RawPart['value'] };
  }
  const { cache_control: _marker, ...rest } = block;
  return { kind: 'raw', value: rest as RawPart['value'] };
}

/** A tool by name and the sha256 of its canonical definition; a moved cache breakpoint is no change. */
function toolRef(tool: Obj): ToolRef | undefined {
  const name = str(tool.name);
  if (name === undefined) return undefined;
  const { cache_control: _marker, ...definition } = tool;
  return { name, digest: sha256Hex(canonicalJson(definition)) };
}

/** A text, image or document block as its kind; anything else as sent. */
function contentPart(block: unknown): ToolResultContent {
  return (isObj(block) ? mediaPart(block) : undefined) ?? rawPart(block);
}

function toolResultContent(content: unknown): ToolResultContent[] {
  if (content === undefined) return [];
  if (typeof content === 'string') return [{ kind: 'text', text: content }];
  if (!Array.isArray(content)) return [rawPart(content)];
  return content.map(contentPart);
}

/**
 * One block of an assistant turn (request history or response). Server tool calls and their
 * results (`server_tool_use`, `web_search_tool_result`, `mcp_tool_use`, ...) are the provider's
 * own: no tool-call or tool-result part holds them exactly, so they are kept as sent.
 */
export function modelPart(block: unknown): PendingContentPart {
  if (!isObj(block)) return rawPart(block);
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? { kind: 'text', text: block.text } : rawPart(block);
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
      return {
        kind: 'tool-call',
        id: str(block.id) ?? '',
        name: str(block.name) ?? '',
        args: JSON.stringify(block.input ?? {}),
      };
    default:
      return rawPart(block);
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
export function modelParts(content: unknown): PendingContentPart[] {
  return blocksOf(content).map(modelPart);
}

/** The parts of a turn that is neither the model's nor a user's (a system message, an unknown role). */
function otherParts(content: unknown): PendingContentPart[] {
  return blocksOf(content).map(contentPart);
}

/**
 * The message's own fields outside its content, when they hold more than the role the event
 * records (an unknown role, a field added later); undefined otherwise.
 */
function wireOf(message: Obj, knownRole: boolean): Wire | undefined {
  const { content: _content, ...fields } = message;
  if (knownRole && Object.keys(fields).every((key) => key === 'role')) return undefined;
  return fields as Wire;
}

function withWire(message: NormalizedMessage, wire: Wire | undefined): NormalizedMessage {
  return wire === undefined ? message : { ...message, wire };
}

/** A user turn: one tool message per tool_result, then a user message with the rest, if any. */
function userMessages(content: unknown, toolNames: ReadonlyMap<Obj, string>): NormalizedMessage[] {
  const out: NormalizedMessage[] = [];
  const own: PendingContentPart[] = [];
  let hadOwnBlocks = false;
  for (const block of blocksOf(content)) {
    if (isObj(block) && block.type === 'tool_result') {
      const callId = str(block.tool_use_id) ?? '';
      const toolName = toolNames.get(block);
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
    own.push(contentPart(block));
  }
  if (hadOwnBlocks || out.length === 0) out.push({ role: 'user', content: own });
  return out;
}

/** One wire message as the log's messages, in its place. */
function normalizeMessage(message: Obj, toolNames: ReadonlyMap<Obj, string>): NormalizedMessage[] {
  switch (message.role) {
    case 'user': {
      const out = userMessages(message.content, toolNames);
      const wire = wireOf(message, true);
      if (wire === undefined) return out;
      // A user turn's own fields go with its user message (or its first tool message).
      const at = out.findIndex((m) => m.role === 'user');
      const i = at === -1 ? 0 : at;
      return out.map((m, j) => (j === i ? withWire(m, wire) : m));
    }
    case 'assistant':
      // The model's turn is compared with the answer that was logged, which has no wire fields.
      return [{ role: 'model', content: modelParts(message.content) }];
    case 'system':
      return [withWire({ role: 'system', content: otherParts(message.content) }, wireOf(message, true))];
    default:
      return [{ role: 'other', content: otherParts(message.content), wire: wireOf(message, false) ?? {} }];
  }
}

const NOT_SETTINGS = new Set(['model', 'messages', 'system', 'tools']);

/** Normalizes a Messages request body for the chat log. */
export function normalizeAnthropicRequest(
  body: Record<string, unknown>,
  opts: NormalizeOptions = {},
): NormalizedRequest {
  const fromIndex = opts.fromIndex ?? 0;
  const wire = Array.isArray(body.messages) ? body.messages : [];
  const toolNames = answeredToolNames(wire);

  const messages: NormalizedMessage[] = [];
  // Indexed from `fromIndex`: a long history's logged messages are not visited (no entry pairs).
  for (let index = fromIndex; index < wire.length; index++) {
    const message: unknown = wire[index];
    if (isObj(message)) messages.push(...normalizeMessage(message, toolNames));
  }

  const systemTexts = blocksOf(body.system).flatMap((block) =>
    isObj(block) && typeof block.text === 'string' ? [block.text] : [],
  );
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
    system: typeof body.system === 'string' || systemTexts.length > 0 ? systemTexts.join('\n\n') : undefined,
    messages,
    tools,
    settings,
    stream: body.stream === true,
  };
}
