/**
 * The RequestView over an Anthropic Messages body, read and edited in place.
 * Wire shapes: https://docs.anthropic.com/en/api/messages (and the `@anthropic-ai/sdk`
 * `MessageParam` / `ContentBlockParam` types). Malformed blocks are skipped, never thrown on.
 */
import type {
  BreakpointPlace,
  EditedPlaces,
  ImageRef,
  ImageSource,
  MeasureSink,
  MessageRef,
  RequestView,
  ScannedBody,
  ToolResultRef,
  ViewEdit,
  WirePath,
} from '../request-view.ts';
import { isObj, type Obj } from '../wire-json.ts';
import { textSlots, type EditState } from '../text-slots.ts';
import {
  breakpointMessage,
  findCacheMarkers,
  markLastBlock,
  type CacheMarkers,
} from './cache-breakpoints.ts';
import { editReporter, lazyMessageRef, placeTracker, type EditReporter } from '../view-edits.ts';

/** The source of an `image` block: base64 with its media type, or a URL; file ids are skipped. */
export function anthropicImageSource(block: Obj): ImageSource | undefined {
  const source = block.source;
  if (!isObj(source)) return undefined;
  if (source.type === 'base64' && typeof source.data === 'string') {
    const mediaType = typeof source.media_type === 'string' ? source.media_type : 'application/octet-stream';
    return { kind: 'base64', mediaType, data: source.data };
  }
  if (source.type === 'url' && typeof source.url === 'string') return { kind: 'url', url: source.url };
  return undefined;
}

/** The ref for one `image` block of `content`; `path` is the block's own path in the body. */
function imageRef(
  content: unknown[],
  block: Obj,
  path: WirePath,
  messageIndex: number,
  inToolResult: boolean,
  state: EditState,
  reporter: EditReporter,
): ImageRef | undefined {
  const source = anthropicImageSource(block);
  if (!source) return undefined;
  return {
    messageIndex,
    path,
    inToolResult,
    source,
    replaceWithText(text: string) {
      // Find the block again: a stale ref whose block is already gone does nothing.
      const at = content.indexOf(block);
      if (at < 0) return;
      // Keeping the marker keeps the cache breakpoint where the client put it.
      const replacement: Obj = { type: 'text', text };
      if ('cache_control' in block) replacement.cache_control = block.cache_control;
      content[at] = replacement;
      state.changed = true;
      reporter.report({ kind: 'image', after: text });
    },
  };
}

/** Refs for the `image` blocks of `content`, which sits at `path` in the body. */
function imageRefs(
  content: unknown[],
  path: WirePath,
  messageIndex: number,
  inToolResult: boolean,
  state: EditState,
  reporter: EditReporter,
): ImageRef[] {
  const refs: ImageRef[] = [];
  content.forEach((block, blockIndex) => {
    if (!isObj(block) || block.type !== 'image') return;
    const ref = imageRef(content, block, [...path, blockIndex], messageIndex, inToolResult, state, reporter);
    if (ref) refs.push(ref);
  });
  return refs;
}

/**
 * The tool each `tool_result` block answers, keyed by the block: the nearest block before it with
 * its `tool_use_id` as `id` and a tool `name` (a `tool_use`, `server_tool_use` or `mcp_tool_use`:
 * the call it answers). A server that hands the same id out again (as some OpenAI-compatible
 * servers do) may give a later call that id for another tool; and a name taken from calls before
 * the result only stays the same as the chat grows.
 */
export function answeredToolNames(messages: readonly unknown[]): Map<Obj, string> {
  const byCallId = new Map<string, string>();
  const names = new Map<Obj, string>();
  for (const message of messages) {
    if (!isObj(message) || !Array.isArray(message.content)) continue;
    for (const block of message.content) {
      if (!isObj(block)) continue;
      if (block.type === 'tool_result') {
        const name = typeof block.tool_use_id === 'string' ? byCallId.get(block.tool_use_id) : undefined;
        if (name !== undefined) names.set(block, name);
      } else if (typeof block.id === 'string' && typeof block.name === 'string') {
        byCallId.set(block.id, block.name);
      }
    }
  }
  return names;
}

/** Reports the text of a `tool_result` content (the string, or each text block) and its images. */
function measureToolResult(content: unknown, sink: MeasureSink): void {
  if (typeof content === 'string') return sink.text(content);
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (!isObj(block)) continue;
    if (block.type === 'text') {
      if (typeof block.text === 'string') sink.text(block.text);
    } else if (block.type === 'image') sink.image();
  }
}

/** Reports what the size estimate counts in one message. */
function measureMessage(message: Obj, sink: MeasureSink): void {
  const content = message.content;
  if (typeof content === 'string') return sink.text(content);
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (!isObj(block)) continue;
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') sink.text(block.text);
        break;
      case 'thinking':
        if (typeof block.thinking === 'string') sink.text(block.thinking);
        break;
      case 'tool_use':
      case 'server_tool_use':
      case 'mcp_tool_use':
        sink.text(JSON.stringify(block.input ?? {}));
        break;
      case 'tool_result':
        measureToolResult(block.content, sink);
        break;
      case 'image':
        sink.image();
        break;
      case 'document':
        if (isObj(block.source) && block.source.type === 'text' && typeof block.source.data === 'string') {
          sink.text(block.source.data);
        }
        break;
      default:
        // Server tool results (web search, code execution, ...) reach the model as their JSON.
        if (typeof block.type === 'string' && block.type.endsWith('_tool_result')) {
          sink.text(JSON.stringify(block.content ?? null));
        }
    }
  }
}

/**
 * Creates the accessor over an Anthropic Messages request body (edited in place). `scanned`, what
 * the scan of the bytes `body` was parsed from found, spares the walk for `cache_control` markers
 * when no key of the body reads `cache_control` (a long chat's body would be walked whole
 * otherwise, on every request).
 */
export function createAnthropicRequestView(
  body: Record<string, unknown>,
  scanned?: ScannedBody,
): RequestView {
  return new AnthropicRequestView(body, scanned !== undefined && !scanned.cacheControlKey);
}

/**
 * A class, not an object literal of closures: every request makes one (as a literal with its
 * getters it took about 5 KB a request, measured).
 */
class AnthropicRequestView implements RequestView {
  private readonly reporter = editReporter();
  // Where the edits went: an edit inside message i marks that message.
  private readonly tracker = placeTracker('messages', this.reporter);
  /** The text slots of a message's content: one function per view, handed to every lazy message ref. */
  private readonly contentSlots = (message: Obj, index: number) => this.slots(message, 'content', index);
  // The body's markers, found in one walk of the whole body and kept (the TTL hint is asked by two
  // steps, whether any marker is set by a third): only addCacheBreakpoint and setAutomaticCaching
  // add markers, each a plain `{ type: 'ephemeral' }` (every other edit keeps each marker where it
  // was), and they update what was found.
  private markers: CacheMarkers | undefined;
  readonly promptCachingStyle = 'breakpoints' as const;

  /** `unmarked`: the client's body holds no marker (its scan said so), no walk needed. */
  constructor(
    readonly body: Record<string, unknown>,
    private readonly unmarked = false,
  ) {}

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

  private markerAdded(): void {
    // Found first when not yet (a walk now also sees the marker just added; `unmarked` does not).
    const markers = this.cacheMarkers();
    markers.present = true;
    markers.any = true;
  }

  private cacheMarkers(): CacheMarkers {
    if (!this.markers) {
      this.markers = { present: false, any: false, hour: false };
      if (!this.unmarked) findCacheMarkers(this.body, this.markers);
    }
    return this.markers;
  }

  messages(): MessageRef[] {
    // Loops, not callbacks: one object per message (every request lists the whole history).
    const refs: MessageRef[] = [];
    const messages = this.list();
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index];
      if (!isObj(message) || (message.role !== 'user' && message.role !== 'assistant')) continue;
      const content = message.content;
      let hasToolResults = false;
      let hasOwnContent = typeof content === 'string';
      if (Array.isArray(content)) {
        for (const block of content) {
          if (isObj(block) && block.type === 'tool_result') hasToolResults = true;
          else if (isObj(block)) hasOwnContent = true;
        }
      }
      refs.push(
        lazyMessageRef(index, message.role, hasToolResults, hasOwnContent, message, this.contentSlots),
      );
    }
    return refs;
  }

  toolResults(): ToolResultRef[] {
    const messages = this.list();
    const names = answeredToolNames(messages);
    const refs: ToolResultRef[] = [];
    // Loops, not callbacks: a history without tool results costs no allocation per message.
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index];
      if (!isObj(message) || message.role !== 'user' || !Array.isArray(message.content)) continue;
      const content: unknown[] = message.content;
      for (let blockIndex = 0; blockIndex < content.length; blockIndex++) {
        const block = content[blockIndex];
        if (!isObj(block) || block.type !== 'tool_result') continue;
        const callId = typeof block.tool_use_id === 'string' ? block.tool_use_id : '';
        const path = ['messages', index, 'content', blockIndex, 'content'];
        refs.push({
          messageIndex: index,
          callId,
          toolName: names.get(block),
          isError: block.is_error === true,
          texts: this.slots(block, 'content', index),
          images: Array.isArray(block.content)
            ? imageRefs(block.content, path, index, true, this.tracker.at(index), this.reporter)
            : [],
        });
      }
    }
    return refs;
  }

  images(): ImageRef[] {
    // Loops, not callbacks: a history without images costs no allocation.
    const refs: ImageRef[] = [];
    const messages = this.list();
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index];
      if (!isObj(message) || message.role !== 'user' || !Array.isArray(message.content)) continue;
      const content = message.content;
      for (let blockIndex = 0; blockIndex < content.length; blockIndex++) {
        const block: unknown = content[blockIndex];
        if (!isObj(block)) continue;
        if (block.type === 'image') {
          const path = ['messages', index, 'content', blockIndex];
          const ref = imageRef(content, block, path, index, false, this.tracker.at(index), this.reporter);
          if (ref) refs.push(ref);
        } else if (block.type === 'tool_result' && Array.isArray(block.content)) {
          const path = ['messages', index, 'content', blockIndex, 'content'];
          for (const ref of imageRefs(
            block.content,
            path,
            index,
            true,
            this.tracker.at(index),
            this.reporter,
          ))
            refs.push(ref);
        }
      }
    }
    return refs;
  }

  measure(sink: MeasureSink): void {
    for (const message of this.list()) {
      sink.message?.();
      if (isObj(message)) measureMessage(message, sink);
    }
  }

  cacheTtlHint(): '5m' | '1h' | undefined {
    const found = this.cacheMarkers();
    return found.hour ? '1h' : found.any ? '5m' : undefined;
  }

  hasCacheMarkers(): boolean {
    return this.cacheMarkers().present;
  }

  addCacheBreakpoint(place: BreakpointPlace): boolean {
    const body = this.body;
    let marked = false;
    if (place === 'system') {
      const system = body.system;
      const hasSystem =
        typeof system === 'string' ? system !== '' : Array.isArray(system) && system.length > 0;
      if (hasSystem) {
        marked = markLastBlock(body, 'system');
        if (marked) this.tracker.member('system').changed = true;
      } else if (Array.isArray(body.tools)) {
        // Without a system prompt the tool definitions end the stable part of the prefix.
        const tool: unknown = body.tools[body.tools.length - 1];
        if (isObj(tool) && (tool.cache_control === undefined || tool.cache_control === null)) {
          tool.cache_control = { type: 'ephemeral' };
          marked = true;
          this.tracker.member('tools').changed = true;
        }
      }
    } else {
      const messages = this.list();
      const index = breakpointMessage(messages, place);
      const message = index === undefined ? undefined : messages[index];
      if (isObj(message)) marked = markLastBlock(message, 'content');
      if (marked) this.tracker.at(index!).changed = true;
    }
    // The tracker marked the edit (and the view as changed) where it was made.
    if (marked) this.markerAdded();
    return marked;
  }

  setAutomaticCaching(): boolean {
    if (this.body.cache_control !== undefined && this.body.cache_control !== null) return false;
    this.body.cache_control = { type: 'ephemeral' };
    this.tracker.member('cache_control').changed = true;
    this.markerAdded();
    return true;
  }

  editedPlaces(): EditedPlaces {
    return this.tracker.places;
  }

  promptCacheKey(): undefined {
    return undefined;
  }

  setPromptCacheKey(): boolean {
    return false;
  }

  onEdit(listener: ((edit: ViewEdit) => void) | undefined): void {
    this.reporter.listen(listener);
  }
}
