/**
 * The RequestView over an OpenAI Chat Completions body, read and edited in place.
 * Wire shapes: https://platform.openai.com/docs/api-reference/chat/create (and the `openai` SDK's
 * `ChatCompletionMessageParam`). Malformed parts are skipped, never thrown on.
 */
import type {
  EditedPlaces,
  ImageRef,
  ImageSource,
  MeasureSink,
  MessageRef,
  RequestView,
  TextSlot,
  ToolResultRef,
  ViewEdit,
  ViewRole,
} from '../request-view.ts';
import { isObj, type Obj } from '../wire-json.ts';
import { textSlots, type EditState } from '../text-slots.ts';
import {
  editReporter,
  hasCacheControl,
  lazyMessageRef,
  placeTracker,
  PROMPT_CACHE_KEY_FIELD,
  PromptCacheKeyField,
  type EditReporter,
} from '../view-edits.ts';
import { STREAM_OPTIONS_FIELD, StreamUsageField } from './stream-usage.ts';

/** Maps a wire role to the view's role; undefined for roles the view does not know. */
function viewRole(role: unknown): ViewRole | undefined {
  switch (role) {
    case 'system':
    case 'developer':
      return 'system';
    case 'user':
      return 'user';
    case 'assistant':
      return 'assistant';
    case 'tool':
    case 'function':
      return 'tool';
    default:
      return undefined;
  }
}

/** Reads `data:<media type>[;params];base64,<data>`; undefined when not a base64 data URL. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]*)((?:;[^;,]*)*);base64,/i.exec(url);
  if (!match) return undefined;
  return { mediaType: match[1] || 'application/octet-stream', data: url.slice(match[0].length) };
}

/** The source of an `image_url` part, accepting the object form and the bare-string form. */
export function openaiImageSource(part: Obj): ImageSource | undefined {
  const raw = part.image_url;
  const url = typeof raw === 'string' ? raw : isObj(raw) && typeof raw.url === 'string' ? raw.url : undefined;
  if (url === undefined) return undefined;
  const parsed = parseDataUrl(url);
  return parsed ? { kind: 'base64', mediaType: parsed.mediaType, data: parsed.data } : { kind: 'url', url };
}

/** A tool message's own texts: none (its text is the tool result's). */
const NO_SLOTS: readonly TextSlot[] = [];
const noSlots = (): readonly TextSlot[] => NO_SLOTS;

const isImagePart = (part: unknown): boolean => isObj(part) && part.type === 'image_url';

function imageRefs(
  content: unknown[],
  messageIndex: number,
  inToolResult: boolean,
  state: EditState,
  reporter: EditReporter,
): ImageRef[] {
  const refs: ImageRef[] = [];
  content.forEach((part, partIndex) => {
    if (!isObj(part) || part.type !== 'image_url') return;
    const source = openaiImageSource(part);
    if (!source) return;
    refs.push({
      messageIndex,
      path: ['messages', messageIndex, 'content', partIndex],
      inToolResult,
      source,
      replaceWithText(text: string) {
        // Find the part again: a stale ref whose part is already gone does nothing.
        const at = content.indexOf(part);
        if (at < 0) return;
        const replacement: Obj = { type: 'text', text };
        if ('cache_control' in part) replacement.cache_control = part.cache_control;
        content[at] = replacement;
        state.changed = true;
        reporter.report({ kind: 'image', after: text });
      },
    });
  });
  return refs;
}

/**
 * The tool each tool message answers, keyed by the message: the nearest call before it with its
 * `tool_call_id` (the call it answers). Some OpenAI-compatible servers hand the same id out again
 * in every answer (`call_0`), so a later call with that id may be another tool's; and a name taken
 * from calls before the result only stays the same as the chat grows. A `function` message names
 * its function itself.
 */
export function answeredToolNames(messages: readonly unknown[]): Map<Obj, string> {
  const byCallId = new Map<string, string>();
  const names = new Map<Obj, string>();
  for (const message of messages) {
    if (!isObj(message)) continue;
    if (message.role === 'tool') {
      const name = typeof message.tool_call_id === 'string' ? byCallId.get(message.tool_call_id) : undefined;
      if (name !== undefined) names.set(message, name);
    } else if (message.role === 'function') {
      if (typeof message.name === 'string') names.set(message, message.name);
    }
    if (!Array.isArray(message.tool_calls)) continue;
    for (const call of message.tool_calls) {
      if (!isObj(call) || typeof call.id !== 'string') continue;
      const fn = isObj(call.function) ? call.function : isObj(call.custom) ? call.custom : undefined;
      if (fn && typeof fn.name === 'string') byCallId.set(call.id, fn.name);
    }
  }
  return names;
}

/** Reports what the size estimate counts in one message. */
function measureMessage(message: Obj, sink: MeasureSink): void {
  const content = message.content;
  if (typeof content === 'string') sink.text(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (!isObj(part)) continue;
      if (part.type === 'text' && typeof part.text === 'string') sink.text(part.text);
      else if (part.type === 'refusal' && typeof part.refusal === 'string') sink.text(part.refusal);
      else if (part.type === 'image_url') sink.image();
    }
  }
  if (typeof message.refusal === 'string') sink.text(message.refusal);
  if (typeof message.reasoning_content === 'string') sink.text(message.reasoning_content);
  else if (typeof message.reasoning === 'string') sink.text(message.reasoning);
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObj(call)) continue;
      if (isObj(call.function) && typeof call.function.arguments === 'string') {
        sink.text(call.function.arguments);
      } else if (isObj(call.custom) && typeof call.custom.input === 'string') {
        sink.text(call.custom.input);
      }
    }
  }
  if (isObj(message.function_call) && typeof message.function_call.arguments === 'string') {
    sink.text(message.function_call.arguments);
  }
}

/** Creates the accessor over an OpenAI Chat Completions request body (edited in place). */
export function createOpenaiRequestView(body: Record<string, unknown>): RequestView {
  return new OpenaiRequestView(body);
}

/** A class, not an object literal of closures: every request makes one (see the Anthropic view). */
class OpenaiRequestView implements RequestView {
  private readonly reporter = editReporter();
  // Where the edits went: an edit inside message i marks that message.
  private readonly tracker = placeTracker('messages', this.reporter);
  /** The text slots of a message's content: one function per view, handed to every lazy message ref. */
  private readonly contentSlots = (message: Obj, index: number) => this.slots(message, 'content', index);
  private cacheKey: PromptCacheKeyField | undefined;
  private streamUsage: StreamUsageField | undefined;
  // OpenAI caches prompt prefixes by itself; `prompt_cache_key` routes a chat's requests to the
  // same cache. https://platform.openai.com/docs/guides/prompt-caching
  readonly promptCachingStyle = 'key' as const;

  constructor(readonly body: Record<string, unknown>) {}

  get model(): string {
    return typeof this.body.model === 'string' ? this.body.model : '';
  }

  get changed(): boolean {
    return this.tracker.changed;
  }

  private list(): unknown[] {
    return Array.isArray(this.body.messages) ? this.body.messages : [];
  }

  private slots(holder: Obj, key: string, index: number) {
    return textSlots(holder, key, this.tracker.at(index));
  }

  private keyField(): PromptCacheKeyField {
    return (this.cacheKey ??= new PromptCacheKeyField(
      this.body,
      this.tracker.member(PROMPT_CACHE_KEY_FIELD),
    ));
  }

  private usageField(): StreamUsageField {
    return (this.streamUsage ??= new StreamUsageField(this.body, this.tracker.member(STREAM_OPTIONS_FIELD)));
  }

  messages(): MessageRef[] {
    // Loops, not callbacks: one object per message (every request lists the whole history).
    const refs: MessageRef[] = [];
    const messages = this.list();
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index];
      if (!isObj(message)) continue;
      const role = viewRole(message.role);
      if (!role) continue;
      const isTool = role === 'tool';
      refs.push(lazyMessageRef(index, role, isTool, !isTool, message, isTool ? noSlots : this.contentSlots));
    }
    return refs;
  }

  toolResults(): ToolResultRef[] {
    const messages = this.list();
    const names = answeredToolNames(messages);
    const refs: ToolResultRef[] = [];
    messages.forEach((message, index) => {
      if (!isObj(message) || (message.role !== 'tool' && message.role !== 'function')) return;
      const callId = typeof message.tool_call_id === 'string' ? message.tool_call_id : '';
      refs.push({
        messageIndex: index,
        callId,
        toolName: names.get(message),
        isError: false,
        texts: this.slots(message, 'content', index),
        images: Array.isArray(message.content)
          ? imageRefs(message.content, index, true, this.tracker.at(index), this.reporter)
          : [],
      });
    });
    return refs;
  }

  images(): ImageRef[] {
    const refs: ImageRef[] = [];
    const messages = this.list();
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index];
      if (!isObj(message) || !Array.isArray(message.content)) continue;
      const inToolResult =
        message.role === 'user' ? false : viewRole(message.role) === 'tool' ? true : undefined;
      if (inToolResult === undefined || !message.content.some(isImagePart)) continue;
      for (const ref of imageRefs(
        message.content,
        index,
        inToolResult,
        this.tracker.at(index),
        this.reporter,
      ))
        refs.push(ref);
    }
    return refs;
  }

  measure(sink: MeasureSink): void {
    // The leading system and developer messages are the system prompt, which the estimate
    // leaves out (they are still reported as messages, with nothing in them).
    let inSystemPrompt = true;
    for (const message of this.list()) {
      sink.message?.();
      if (!isObj(message)) continue;
      if (inSystemPrompt && viewRole(message.role) === 'system') continue;
      inSystemPrompt = false;
      measureMessage(message, sink);
    }
  }

  cacheTtlHint(): undefined {
    return undefined;
  }

  hasCacheMarkers(): boolean {
    return hasCacheControl(this.body);
  }

  addCacheBreakpoint(): boolean {
    return false;
  }

  setAutomaticCaching(): boolean {
    return false;
  }

  promptCacheKey(): string | undefined {
    return this.keyField().promptCacheKey();
  }

  setPromptCacheKey(key: string): boolean {
    return this.keyField().setPromptCacheKey(key);
  }

  removeAddedPromptCacheKey(): boolean {
    return this.keyField().removeAddedPromptCacheKey();
  }

  askStreamUsage(): boolean {
    return this.usageField().askStreamUsage();
  }

  removeAddedStreamUsage(): 'whole' | 'merged' | undefined {
    return this.usageField().removeAddedStreamUsage();
  }

  editedPlaces(): EditedPlaces {
    return this.tracker.places;
  }

  onEdit(listener: ((edit: ViewEdit) => void) | undefined): void {
    this.reporter.listen(listener);
  }
}
