/**
 * Edit reporting and cache-marker lookup shared by the formats' request views: every text set and
 * image replaced through a view is reported to its listener (what each mechanism removed is
 * accounted from these), a request's `cache_control` markers are found wherever they sit, and
 * where the edits went is kept (`placeTracker`), so the body goes out as the client's bytes with
 * only the edited values written again.
 */
import type { EditedPlaces, MessageRef, TextSlot, ViewEdit } from './request-view.ts';
import type { EditState } from './text-slots.ts';
import { isObj } from './wire-json.ts';

/** Holds a view's edit listener and reports edits to it. */
export interface EditReporter {
  listen(listener: ((edit: ViewEdit) => void) | undefined): void;
  report(edit: ViewEdit): void;
}

export function editReporter(): EditReporter {
  return new ListenedReporter();
}

/** A class, not an object literal of closures: every request's view makes one. */
class ListenedReporter implements EditReporter {
  private listener: ((edit: ViewEdit) => void) | undefined;

  listen(listener: ((edit: ViewEdit) => void) | undefined): void {
    this.listener = listener;
  }

  report(edit: ViewEdit): void {
    this.listener?.(edit);
  }
}

/**
 * A message ref whose text slots are built on first use: most passes over a request's messages
 * (turn boundaries, the image replay window) read only roles, and a long history has many texts.
 */
export function lazyMessageRef<Holder>(
  index: number,
  role: MessageRef['role'],
  hasToolResults: boolean,
  hasOwnContent: boolean,
  holder: Holder,
  texts: (holder: Holder, index: number) => readonly TextSlot[],
): MessageRef {
  return new LazyMessageRef(index, role, hasToolResults, hasOwnContent, holder, texts);
}

/**
 * A class, not an object literal with a getter: V8 keeps it fast to build and to read. It holds the
 * message and the view's one slot maker, not a closure of its own: a listing makes one object per
 * message of the history.
 */
class LazyMessageRef<Holder> implements MessageRef {
  private made: readonly TextSlot[] | undefined;
  constructor(
    readonly index: number,
    readonly role: MessageRef['role'],
    readonly hasToolResults: boolean,
    readonly hasOwnContent: boolean,
    private readonly holder: Holder,
    private readonly make: (holder: Holder, index: number) => readonly TextSlot[],
  ) {}

  get texts(): readonly TextSlot[] {
    return (this.made ??= this.make(this.holder, this.index));
  }
}

/** True when any object in `value` (the value itself included) carries a `cache_control` marker. */
export function hasCacheControl(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasCacheControl);
  if (!isObj(value)) return false;
  if (value.cache_control !== undefined && value.cache_control !== null) return true;
  for (const key of Object.keys(value)) {
    const child = value[key];
    if (typeof child === 'object' && child !== null && hasCacheControl(child)) return true;
  }
  return false;
}

/** The OpenAI-format body field that routes a chat's requests to one prompt cache. */
export const PROMPT_CACHE_KEY_FIELD = 'prompt_cache_key';

/**
 * The `prompt_cache_key` of an OpenAI-format body (Chat Completions and Responses): read as sent
 * (an empty key counts as none), and set only where the client set none, so a client's own key is
 * never overridden. A key the view set can be taken back (its provider refused the field): the
 * member is then as the client sent it again, absent or null.
 */
export class PromptCacheKeyField {
  // What the client sent in the member before the view set a key: nothing, or null.
  private sent: { value: null | undefined } | undefined;

  constructor(
    private readonly body: Record<string, unknown>,
    private readonly state: { changed: boolean },
  ) {}

  promptCacheKey(): string | undefined {
    const key = this.body.prompt_cache_key;
    return typeof key === 'string' && key !== '' ? key : undefined;
  }

  setPromptCacheKey(key: string): boolean {
    const body = this.body;
    if (body.prompt_cache_key !== undefined && body.prompt_cache_key !== null) return false;
    this.sent = { value: body.prompt_cache_key };
    body.prompt_cache_key = key;
    this.state.changed = true;
    return true;
  }

  removeAddedPromptCacheKey(): boolean {
    if (!this.sent) return false;
    if (this.sent.value === null) this.body.prompt_cache_key = null;
    else delete this.body.prompt_cache_key;
    this.sent = undefined;
    this.state.changed = true;
    return true;
  }
}

/**
 * Where a view's edits went, kept as they are made (`RequestView.editedPlaces`). It owns the view's
 * changed flag: every edit goes through one of its states, so none can change the body without
 * saying where.
 */
export interface PlaceTracker {
  /** True once any edit changed the body. */
  readonly changed: boolean;
  readonly places: EditedPlaces;
  /** The edit state for edits inside element `index` of the message list. */
  at(index: number): EditState;
  /** The edit state for edits of the top-level member `key` (one the body may not have had). */
  member(key: string): EditState;
}

/**
 * A tracker of the edits in a body whose message list is the top-level member `list`; its states
 * report each text a slot changed to `reporter`.
 */
export function placeTracker(list: string, reporter?: EditReporter): PlaceTracker {
  return new Tracker(list, reporter);
}

/**
 * A class, not an object literal with a getter and closures: every request's view makes one, and V8
 * builds a literal's accessors at run time (about 1.8 KB a tracker as a literal, measured).
 */
class Tracker implements PlaceTracker {
  private readonly state: EditState = { changed: false };
  private readonly messages = new Set<number>();
  private readonly members = new Set<string>();
  readonly places: EditedPlaces;
  // One state per element, made on first use: views ask for one per message on every listing.
  private readonly states: EditState[] = [];

  constructor(
    list: string,
    private readonly reporter: EditReporter | undefined,
  ) {
    this.places = { list, messages: this.messages, members: this.members };
  }

  get changed(): boolean {
    return this.state.changed;
  }

  at(index: number): EditState {
    return (this.states[index] ??= new MarkingState(this.state, this.messages, index, this.reporter));
  }

  member(key: string): EditState {
    return new MarkingState(this.state, this.members, key, this.reporter);
  }
}

/**
 * An edit state that also says where the edit went, and reports each text a slot changed. A class,
 * not an object literal with accessors, for the reason StringSlot is one (text-slots.ts): views make
 * a state per message of the history.
 */
class MarkingState<Place> implements EditState {
  constructor(
    private readonly view: EditState,
    private readonly places: Set<Place>,
    private readonly place: Place,
    private readonly reporter: EditReporter | undefined,
  ) {}

  get changed(): boolean {
    return this.view.changed;
  }

  set changed(value: boolean) {
    if (!value) return;
    this.view.changed = true;
    this.places.add(this.place);
  }

  reportText(before: string, after: string): void {
    this.reporter?.report({ kind: 'text', before, after });
  }
}
