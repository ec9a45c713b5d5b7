/**
 * One Responses item (a request's `input` item or a response's `output` item) as one message of
 * the chat log, kept losslessly in format v5 terms:
 * - the item's content becomes content parts (`text`, `image`, `file`, `tool-call`, `tool-result`);
 *   a part or item no kind holds exactly (a `reasoning` item with `encrypted_content`, a server tool
 *   call, an unknown item or part) becomes a `raw` part holding its JSON as sent;
 * - everything else of the item goes to `wire`: its envelope (`type`, `id`, `status`, `phase`, ...)
 *   and, under `content` (or `output`), per part the fields its kind does not hold (the part's
 *   `type`, an image's `detail`, a text's `annotations`), so the item can be rebuilt exactly.
 * The model's side of the item is in the role; `id` and `status` are always in `wire`, never in a
 * part, so an item a client sends back without them (as Codex does) logs the same content, which
 * the comparison with the log recognises (`echoDigest` in the chat log leaves such fields out).
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */
import type { NormalizedMessage, PendingContentPart } from '../../chat-log/pending-message.ts';
import { parseDataUrl } from '../openai/request-view.ts';
import { inlineFilePart } from '../../chat-log/file-parts.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import {
  callToolName,
  inputImageSource,
  isToolOutput,
  itemType,
  MODEL_RAW_ITEM_TYPES,
  outputCallId,
} from './responses-items.ts';
import { setMember } from '../../lib/own-member.ts';

type Wire = NonNullable<NormalizedMessage['wire']>;
type WireValue = Wire[string];
type ToolResultContent = Extract<PendingContentPart, { kind: 'tool-result' }>['content'][number];

/** The object without `keys`, as JSON for `wire`. */
function without(obj: Obj, keys: readonly string[]): Wire {
  const out: Wire = {};
  for (const [key, value] of Object.entries(obj))
    if (!keys.includes(key)) setMember(out, key, value as WireValue);
  return out;
}

/** A part as a log part, and the part's fields that kind does not hold (null for a raw part). */
interface SplitPart {
  part: ToolResultContent;
  rest: WireValue;
}

/** Splits one content/output part into its log part and the rest of its fields. */
function splitPart(part: unknown): SplitPart {
  if (!isObj(part)) return { part: { kind: 'raw', value: part as WireValue }, rest: null };
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      if (typeof part.text === 'string')
        return { part: { kind: 'text', text: part.text }, rest: without(part, ['text']) };
      break;
    case 'refusal':
      if (typeof part.refusal === 'string') {
        return { part: { kind: 'text', text: part.refusal }, rest: without(part, ['refusal']) };
      }
      break;
    case 'input_image':
      if (typeof part.image_url === 'string') {
        const source = inputImageSource(part);
        if (source) return { part: { kind: 'image', source }, rest: without(part, ['image_url']) };
      }
      break;
    case 'input_file': {
      const file = filePart(part);
      // The part keeps one of `file_data` (the content, as its data URL) and `file_url`.
      const kept = typeof part.file_data === 'string' ? 'file_data' : 'file_url';
      return { part: file, rest: without(part, ['filename', kept]) };
    }
  }
  return { part: { kind: 'raw', value: part as WireValue }, rest: null };
}

/**
 * An `input_file` as a file part: its name, and its content (`file_data`, a data URL, kept as sent
 * with the size and SHA-256 of its bytes) or else its URL. A file by id keeps the id in the rest of
 * the part.
 */
function filePart(part: Obj): ToolResultContent {
  const name = str(part.filename);
  const named = name !== undefined ? { name } : {};
  const data = str(part.file_data);
  if (data !== undefined) {
    const mediaType = parseDataUrl(data)?.mediaType;
    return inlineFilePart({ ...named, ...(mediaType !== undefined && { mediaType }), dataUrl: data });
  }
  const url = str(part.file_url);
  return { kind: 'file', ...named, ...(url !== undefined && { url }) };
}

/**
 * The parts of a content or output value, and what `wire` keeps of it under `key`: nothing for a
 * string (one text part), the rest of each part for a list, the value itself for anything else.
 */
function splitValue(value: unknown, key: string, wire: Wire): ToolResultContent[] {
  if (typeof value === 'string') return [{ kind: 'text', text: value }];
  if (Array.isArray(value)) {
    const split = value.map(splitPart);
    setMember(wire, key, split.map((s) => s.rest) as WireValue);
    return split.map((s) => s.part);
  }
  if (value !== undefined) setMember(wire, key, value as WireValue);
  return [];
}

/**
 * An item no kind holds exactly, under `role`, as one raw part. Its bookkeeping (`id`, `status`)
 * and its null fields go to `wire`, apart from the raw part, so the same item sent back without
 * them, or with `null` for a field it left out, logs the same content.
 */
function rawItem(item: Obj, role: NormalizedMessage['role'], envelope = ['id', 'status']): NormalizedMessage {
  const wire: Wire = {};
  const value: Wire = {};
  for (const [key, field] of Object.entries(item)) {
    if (envelope.includes(key) || field === null) setMember(wire, key, field as WireValue);
    else setMember(value, key, field as WireValue);
  }
  return withWire({ role, content: [{ kind: 'raw', value }] }, wire);
}

/** A non-empty wire, or nothing. */
function withWire(message: NormalizedMessage, wire: Wire): NormalizedMessage {
  return Object.keys(wire).length > 0 ? { ...message, wire } : message;
}

const ROLES: Record<string, NormalizedMessage['role']> = {
  user: 'user',
  assistant: 'model',
  system: 'system',
  developer: 'developer',
};

/** A `message` item. */
function messageItem(item: Obj): NormalizedMessage {
  const role = typeof item.role === 'string' ? ROLES[item.role] : undefined;
  // An unknown role keeps its name in `wire` (role `other`).
  const wire = without(item, role ? ['role', 'content'] : ['content']);
  const content = splitValue(item.content, 'content', wire);
  return withWire({ role: role ?? 'other', content }, wire);
}

/** A reasoning item with only summaries is reasoning text; anything more is kept raw. */
function reasoningItem(item: Obj): NormalizedMessage {
  const summary = item.summary;
  const plain =
    Array.isArray(summary) &&
    summary.every((s) => isObj(s) && s.type === 'summary_text' && typeof s.text === 'string') &&
    (item.encrypted_content === undefined || item.encrypted_content === null) &&
    (item.content === undefined ||
      item.content === null ||
      (Array.isArray(item.content) && item.content.length === 0));
  if (!plain) return rawItem(item, 'model');
  const wire = without(item, ['summary']);
  wire.summary = summary.map((s) => without(s as Obj, ['text']));
  const content: PendingContentPart[] = summary.map((s) => ({
    kind: 'reasoning',
    text: (s as Obj).text as string,
  }));
  return withWire({ role: 'model', content }, wire);
}

/** A tool result: the `output` of a `*_output` item, answering the call `callId`. */
function outputItem(item: Obj, toolNames: ReadonlyMap<Obj, string>): NormalizedMessage {
  const callId = outputCallId(item);
  const toolName = toolNames.get(item);
  // `call_id` is the result's call id; `local_shell_call_output` names its call in `id`, kept in wire.
  const wire = without(item, ['call_id', 'output']);
  let content: ToolResultContent[];
  const output = item.output;
  if (itemType(item) === 'computer_call_output' && isObj(output) && typeof output.image_url === 'string') {
    const source = inputImageSource(output);
    content = source ? [{ kind: 'image', source }] : [];
    wire.output = without(output, ['image_url']);
  } else if (isObj(output)) {
    content = [{ kind: 'raw', value: output as WireValue }];
  } else {
    content = splitValue(output, 'output', wire);
  }
  return withWire(
    {
      role: 'tool',
      content: [
        {
          kind: 'tool-result',
          callId,
          ...(toolName !== undefined && { toolName }),
          failed: item.status === 'failed',
          content,
        },
      ],
    },
    wire,
  );
}

/** A function or custom tool call: its call id, name and arguments (custom tools: input). */
function callItem(item: Obj, argsKey: 'arguments' | 'input'): NormalizedMessage | undefined {
  const callId = str(item.call_id);
  const name = callToolName(item);
  const args = str(item[argsKey]);
  if (callId === undefined || name === undefined || args === undefined || typeof item.name !== 'string') {
    return undefined;
  }
  return withWire(
    { role: 'model', content: [{ kind: 'tool-call', id: callId, name, args }] },
    without(item, ['call_id', 'name', argsKey]),
  );
}

/**
 * One item as one log message. `toolNames` names the tool each tool result of the same request
 * answers (`answeredToolNames`).
 */
export function normalizeItem(item: unknown, toolNames: ReadonlyMap<Obj, string>): NormalizedMessage {
  if (!isObj(item)) return { role: 'other', content: [{ kind: 'raw', value: item as WireValue }] };
  const type = itemType(item);
  if (type === 'message') return messageItem(item);
  if (type === 'reasoning') return reasoningItem(item);
  if (isToolOutput(item)) return outputItem(item, toolNames);
  if (type === 'function_call') return callItem(item, 'arguments') ?? rawItem(item, 'model');
  if (type === 'custom_tool_call') return callItem(item, 'input') ?? rawItem(item, 'model');
  if (type !== undefined && MODEL_RAW_ITEM_TYPES.has(type)) return rawItem(item, 'model');
  if (type === 'additional_tools' && item.role === 'developer') return rawItem(item, 'developer');
  // A reference is its id: the id is its content. It stands for the item of that id, which the
  // comparison with the log recognises when the log holds it (the reference itself is logged).
  if (type === 'item_reference') {
    const message = rawItem(item, 'other', []);
    return typeof item.id === 'string' ? { ...message, refersTo: item.id } : message;
  }
  // mcp_approval_response, compaction_trigger, program_output, unknown items.
  return rawItem(item, 'other');
}
