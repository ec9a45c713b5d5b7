/**
 * What the Responses API's `input` items are, shared by the request view and the normalizer:
 * which side of the conversation an item stands on, which items are tool results, which tool a
 * result answers, and where an `input_image` comes from.
 * Item shapes: https://platform.openai.com/docs/api-reference/responses/create (and the `openai`
 * SDK's `ResponseInputItem`). Malformed items are skipped, never thrown on.
 */
import type { ImageSource } from '../request-view.ts';
import { parseDataUrl } from '../openai/request-view.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import { fileIdImageUrl } from '../../lib/image-key.ts';

/**
 * What a screenshot that a mechanism replaced becomes: a 1x1 PNG. A `computer_call_output` must
 * hold a `computer_screenshot`, so the gateway cannot put a text note there; a tiny image is the
 * valid stand-in, and the view no longer lists it as an image.
 */
export const SCREENSHOT_PLACEHOLDER_URL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** Item types the model produces that no normalized kind holds (the log keeps them raw). */
export const MODEL_RAW_ITEM_TYPES: ReadonlySet<string> = new Set([
  'local_shell_call',
  'shell_call',
  'apply_patch_call',
  'computer_call',
  'web_search_call',
  'file_search_call',
  'image_generation_call',
  'code_interpreter_call',
  'mcp_call',
  'mcp_list_tools',
  'mcp_approval_request',
  'tool_search_call',
  'program',
  'compaction',
]);

/** Items the model produced: an assistant turn is a run of these (reasoning, calls, messages). */
const MODEL_ITEM_TYPES = new Set(['reasoning', 'function_call', 'custom_tool_call', ...MODEL_RAW_ITEM_TYPES]);

/** The item's type; a message may leave `type` out (`{role, content}`). */
export function itemType(item: Obj): string | undefined {
  if (typeof item.type === 'string') return item.type;
  return typeof item.role === 'string' && 'content' in item ? 'message' : undefined;
}

/** Where an item stands in the conversation, as the mechanisms count turns. */
export type ItemSide = 'user' | 'system' | 'assistant' | 'tool' | undefined;

/** The side of one input item; undefined for items of no side (references, unknown items). */
export function itemSide(item: Obj): ItemSide {
  const type = itemType(item);
  if (type === 'message') {
    switch (item.role) {
      case 'user':
        return 'user';
      case 'assistant':
        return 'assistant';
      case 'system':
      case 'developer':
        return 'system';
      default:
        return undefined;
    }
  }
  if (type === undefined) return undefined;
  if (isToolOutput(item)) return 'tool';
  return MODEL_ITEM_TYPES.has(type) ? 'assistant' : undefined;
}

/**
 * True for a tool result: a `*_output` item with an `output` (function, custom, shell, computer,
 * ...), or an `apply_patch_call_output`, whose `output` is optional.
 */
export function isToolOutput(item: Obj): boolean {
  const type = itemType(item);
  if (type === undefined || !type.endsWith('_output')) return false;
  return 'output' in item || type === 'apply_patch_call_output';
}

/** The call id a tool result answers; `local_shell_call_output` names it in `id`. */
export function outputCallId(item: Obj): string {
  return str(item.call_id) ?? str(item.id) ?? '';
}

/** True for an item that calls a tool the client runs or the server ran (it has a `call_id`). */
function isCall(item: Obj): boolean {
  const type = itemType(item);
  return type !== undefined && type !== 'message' && !type.endsWith('_output');
}

/**
 * The tool name of a call item: its `name` (function and custom tools), else the tool its type
 * names (`local_shell_call` -> `local_shell`, `shell_call` -> `shell`, `apply_patch_call` ->
 * `apply_patch`, `computer_call` -> `computer`).
 */
export function callToolName(item: Obj): string | undefined {
  const name = str(item.name);
  if (name !== undefined) return name;
  const type = itemType(item);
  return type?.endsWith('_call') ? type.slice(0, -'_call'.length) : undefined;
}

/**
 * The tool each tool result of `items` answers, keyed by the result item: the nearest call item
 * before it with its call id (the call it answers). Some OpenAI-compatible servers hand the same
 * id out again in every answer (`call_0`), so a later call with that id may be another tool's; and
 * a name taken from calls before the result only stays the same as the chat grows.
 */
export function answeredToolNames(items: readonly unknown[]): Map<Obj, string> {
  const byCallId = new Map<string, string>();
  const names = new Map<Obj, string>();
  for (const item of items) {
    if (!isObj(item)) continue;
    if (isToolOutput(item)) {
      const name = byCallId.get(outputCallId(item));
      if (name !== undefined) names.set(item, name);
    } else if (isCall(item)) {
      const callId = str(item.call_id);
      const name = callToolName(item);
      if (callId !== undefined && name !== undefined) byCallId.set(callId, name);
    }
  }
  return names;
}

/** The image source of an `input_image` part: a data URL, a URL, or an uploaded file by id. */
export function inputImageSource(part: Obj): ImageSource | undefined {
  const url = str(part.image_url);
  if (url !== undefined) {
    const parsed = parseDataUrl(url);
    return parsed ? { kind: 'base64', mediaType: parsed.mediaType, data: parsed.data } : { kind: 'url', url };
  }
  const fileId = str(part.file_id);
  // The gateway never fetches a file's bytes; the id is where the image can be found.
  return fileId !== undefined ? { kind: 'url', url: fileIdImageUrl(fileId) } : undefined;
}

/** The screenshot a `computer_call_output` carries, unless it is the gateway's placeholder. */
export function screenshotSource(item: Obj): ImageSource | undefined {
  const output = item.output;
  if (!isObj(output) || output.type !== 'computer_screenshot') return undefined;
  if (output.image_url === SCREENSHOT_PLACEHOLDER_URL) return undefined;
  return inputImageSource(output);
}
