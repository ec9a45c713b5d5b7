/**
 * The RequestView over an OpenAI Responses body, read and edited in place. The conversation is
 * `input`: a string (one user message) or a list of items. Each item is one entry of the view
 * (its index is the item's index in `input`); an assistant turn is a run of model items (reasoning,
 * calls, messages) and is one assistant message for the mechanisms, as it is on the other formats.
 * Tool results are the `output` of `*_output` items; images are `input_image` parts (in user
 * messages and in tool outputs) and `computer_call_output` screenshots. `instructions` is the
 * system prompt and is never touched.
 * Wire shapes: https://platform.openai.com/docs/api-reference/responses/create
 */
import type {
  EditedPlaces,
  ImageRef,
  MeasureSink,
  MessageRef,
  RequestView,
  TextSlot,
  ToolResultRef,
  ViewEdit,
  WirePath,
} from '../request-view.ts';
import { stringSlot, type EditState } from '../text-slots.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import {
  PROMPT_CACHE_KEY_FIELD,
  editReporter,
  placeTracker,
  PromptCacheKeyField,
  type EditReporter,
} from '../view-edits.ts';
import {
  SCREENSHOT_PLACEHOLDER_URL,
  answeredToolNames,
  inputImageSource,
  isToolOutput,
  itemSide,
  itemType,
  outputCallId,
  screenshotSource,
} from './responses-items.ts';

/** Text part types whose `text` is plain text the model reads. */
const TEXT_PART_TYPES = new Set(['input_text', 'output_text']);

/** Slots for a content value: a string is one slot, an array one per `input_text`/`output_text` part. */
function partSlots(holder: Obj, key: string, state: EditState): TextSlot[] {
  const value = holder[key];
  if (typeof value === 'string') return [stringSlot(holder, key, state)];
  if (!Array.isArray(value)) return [];
  const slots: TextSlot[] = [];
  for (const part of value) {
    if (isObj(part) && TEXT_PART_TYPES.has(part.type as string) && typeof part.text === 'string') {
      slots.push(stringSlot(part, 'text', state));
    }
  }
  return slots;
}

/** The text slots of a tool result: its `output` text, or each `stdout`/`stderr` of a shell output. */
function outputSlots(item: Obj, state: EditState): TextSlot[] {
  if (itemType(item) !== 'shell_call_output' || !Array.isArray(item.output)) {
    return partSlots(item, 'output', state);
  }
  const slots: TextSlot[] = [];
  for (const chunk of item.output) {
    if (!isObj(chunk)) continue;
    if (typeof chunk.stdout === 'string') slots.push(stringSlot(chunk, 'stdout', state));
    if (typeof chunk.stderr === 'string') slots.push(stringSlot(chunk, 'stderr', state));
  }
  return slots;
}

/** Refs for the `input_image` parts of `parts`, which sit at `path` in the body. */
function partImageRefs(
  parts: unknown[],
  path: WirePath,
  messageIndex: number,
  inToolResult: boolean,
  state: EditState,
  reporter: EditReporter,
): ImageRef[] {
  const refs: ImageRef[] = [];
  parts.forEach((part, partIndex) => {
    if (!isObj(part) || part.type !== 'input_image') return;
    const source = inputImageSource(part);
    if (!source) return;
    refs.push({
      messageIndex,
      path: [...path, partIndex],
      inToolResult,
      source,
      replaceWithText(text: string) {
        // Find the part again: a stale ref whose part is already gone does nothing.
        const at = parts.indexOf(part);
        if (at < 0) return;
        // Keeping the marker keeps the cache breakpoint where the client put it.
        const replacement: Obj = { type: 'input_text', text };
        if ('prompt_cache_breakpoint' in part)
          replacement.prompt_cache_breakpoint = part.prompt_cache_breakpoint;
        parts[at] = replacement;
        state.changed = true;
        reporter.report({ kind: 'image', after: text });
      },
    });
  });
  return refs;
}

/**
 * The ref for a `computer_call_output` screenshot. Its `output` must stay a `computer_screenshot`,
 * so replacing it puts the placeholder image there (the text has no valid place in this item).
 */
function screenshotRef(
  item: Obj,
  index: number,
  state: EditState,
  reporter: EditReporter,
): ImageRef | undefined {
  const source = screenshotSource(item);
  const output = item.output;
  if (!source || !isObj(output)) return undefined;
  return {
    messageIndex: index,
    path: ['input', index, 'output'],
    inToolResult: true,
    keepsImageSlot: true,
    source,
    replaceWithText(text: string) {
      if (item.output !== output) return;
      const { image_url: _url, file_id: _file, ...rest } = output;
      item.output = { ...rest, type: 'computer_screenshot', image_url: SCREENSHOT_PLACEHOLDER_URL };
      state.changed = true;
      reporter.report({ kind: 'image', after: text });
    },
  };
}

/** The images of one tool output item (parts of its `output`, or its screenshot). */
function outputImageRefs(item: Obj, index: number, state: EditState, reporter: EditReporter): ImageRef[] {
  if (itemType(item) === 'computer_call_output') {
    const ref = screenshotRef(item, index, state, reporter);
    return ref ? [ref] : [];
  }
  return Array.isArray(item.output)
    ? partImageRefs(item.output, ['input', index, 'output'], index, true, state, reporter)
    : [];
}

/** Reports the texts and images of a message's content or a tool output (a string or parts). */
function measureValue(value: unknown, sink: MeasureSink): void {
  if (typeof value === 'string') return sink.text(value);
  if (!Array.isArray(value)) return;
  for (const part of value) {
    if (!isObj(part)) continue;
    if (typeof part.text === 'string') sink.text(part.text);
    else if (part.type === 'refusal' && typeof part.refusal === 'string') sink.text(part.refusal);
    else if (part.type === 'input_image') sink.image();
    else if (typeof part.stdout === 'string' || typeof part.stderr === 'string') {
      sink.text(`${str(part.stdout) ?? ''}${str(part.stderr) ?? ''}`);
    }
  }
}

/** Reports what the size estimate counts in one input item. */
function measureItem(item: Obj, sink: MeasureSink): void {
  const type = itemType(item);
  if (type === 'message') return measureValue(item.content, sink);
  if (isToolOutput(item)) {
    if (type === 'computer_call_output') {
      if (screenshotSource(item)) sink.image();
      return;
    }
    return measureValue(item.output, sink);
  }
  switch (type) {
    case 'function_call':
      return sink.text(str(item.arguments) ?? '');
    case 'custom_tool_call':
      return sink.text(str(item.input) ?? '');
    case 'reasoning':
      // Summaries and reasoning text; encrypted content is opaque and its size says little.
      measureValue(item.summary, sink);
      return measureValue(item.content, sink);
    case 'compaction':
    case 'item_reference':
    case undefined:
      return;
    default: {
      // Other calls and server tool items reach the model as their JSON.
      const { id: _id, status: _status, ...rest } = item;
      return sink.text(JSON.stringify(rest));
    }
  }
}

/** The list of items `input` holds; a string input is handled by the callers. */
function inputItems(body: Record<string, unknown>): unknown[] {
  return Array.isArray(body.input) ? body.input : [];
}

/** Creates the accessor over an OpenAI Responses request body (edited in place). */
export function createResponsesRequestView(body: Record<string, unknown>): RequestView {
  return new ResponsesRequestView(body);
}

/** A class, not an object literal of closures: every request makes one (see the Anthropic view). */
class ResponsesRequestView implements RequestView {
  private readonly reporter = editReporter();
  // Where the edits went: an edit inside input item i marks that item; a string input is a member.
  private readonly tracker = placeTracker('input', this.reporter);
  private cacheKey: PromptCacheKeyField | undefined;
  // The provider caches prompt prefixes by itself; `prompt_cache_key` routes a chat's requests to
  // the same cache. https://platform.openai.com/docs/guides/prompt-caching
  readonly promptCachingStyle = 'key' as const;

  constructor(readonly body: Record<string, unknown>) {}

  get model(): string {
    return typeof this.body.model === 'string' ? this.body.model : '';
  }

  get changed(): boolean {
    return this.tracker.changed;
  }

  private keyField(): PromptCacheKeyField {
    return (this.cacheKey ??= new PromptCacheKeyField(
      this.body,
      this.tracker.member(PROMPT_CACHE_KEY_FIELD),
    ));
  }

  messages(): MessageRef[] {
    const body = this.body;
    const tracker = this.tracker;
    if (typeof body.input === 'string') {
      return [
        {
          index: 0,
          role: 'user',
          hasToolResults: false,
          hasOwnContent: true,
          texts: [stringSlot(body, 'input', tracker.member('input'))],
        },
      ];
    }
    const refs: MessageRef[] = [];
    // The assistant message of the current run of model items, which later items of the run join.
    let run: { index: number; texts: TextSlot[] } | undefined;
    inputItems(body).forEach((item, index) => {
      if (!isObj(item)) return;
      const side = itemSide(item);
      if (side === undefined) return;
      if (side === 'assistant') {
        const texts = itemType(item) === 'message' ? partSlots(item, 'content', tracker.at(index)) : [];
        if (run) run.texts.push(...texts);
        else {
          run = { index, texts };
          refs.push({
            index,
            role: 'assistant',
            hasToolResults: false,
            hasOwnContent: true,
            texts: run.texts,
          });
        }
        return;
      }
      run = undefined;
      if (side === 'tool') {
        refs.push({ index, role: 'tool', hasToolResults: true, hasOwnContent: false, texts: [] });
        return;
      }
      refs.push({
        index,
        role: side,
        hasToolResults: false,
        hasOwnContent: true,
        texts: partSlots(item, 'content', tracker.at(index)),
      });
    });
    return refs;
  }

  toolResults(): ToolResultRef[] {
    const items = inputItems(this.body);
    const names = answeredToolNames(items);
    const refs: ToolResultRef[] = [];
    items.forEach((item, index) => {
      if (!isObj(item) || !isToolOutput(item)) return;
      const callId = outputCallId(item);
      refs.push({
        messageIndex: index,
        callId,
        toolName: names.get(item),
        isError: item.status === 'failed',
        texts: outputSlots(item, this.tracker.at(index)),
        images: outputImageRefs(item, index, this.tracker.at(index), this.reporter),
      });
    });
    return refs;
  }

  images(): ImageRef[] {
    const refs: ImageRef[] = [];
    inputItems(this.body).forEach((item, index) => {
      if (!isObj(item)) return;
      const side = itemSide(item);
      if (side === 'user' && Array.isArray(item.content)) {
        refs.push(
          ...partImageRefs(
            item.content,
            ['input', index, 'content'],
            index,
            false,
            this.tracker.at(index),
            this.reporter,
          ),
        );
      } else if (side === 'tool') {
        refs.push(...outputImageRefs(item, index, this.tracker.at(index), this.reporter));
      }
    });
    return refs;
  }

  measure(sink: MeasureSink): void {
    // A message per input item. The system prompt (`instructions`) is not an item and the
    // estimate leaves it out.
    if (typeof this.body.input === 'string') {
      sink.message?.();
      return sink.text(this.body.input);
    }
    for (const item of inputItems(this.body)) {
      sink.message?.();
      if (isObj(item)) measureItem(item, sink);
    }
  }

  cacheTtlHint(): undefined {
    return undefined;
  }

  hasCacheMarkers(): boolean {
    return false;
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

  editedPlaces(): EditedPlaces {
    return this.tracker.places;
  }

  onEdit(listener: ((edit: ViewEdit) => void) | undefined): void {
    this.reporter.listen(listener);
  }
}
