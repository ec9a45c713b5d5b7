/**
 * A RequestView over logged messages instead of a wire body. The log viewer runs the mechanisms'
 * own replay functions through it to show what the model received, so the viewer never holds a
 * second copy of their rules. It edits a copy of the logged content in place and records every
 * edit (which message part, which mechanism) so the page can show markers beside the original.
 *
 * A page of the log is viewed at a time: the page's messages carry their content, the chat's other
 * messages are known by sequence number and role only (from the messages read model), which is all
 * the turn counting of the image replay clean-up looks at.
 */
import type {
  ImageRef,
  ImageSource,
  MeasureSink,
  MessageRef,
  RequestView,
  TextSlot,
  ToolResultRef,
  ViewRole,
} from '../providers/request-view.ts';

/** A content part as logged: the kinds the mechanisms act on are read, every other kind is kept. */
export interface LogPart {
  readonly kind: string;
  [field: string]: unknown;
  text?: unknown;
  url?: unknown;
  attachment?: unknown;
  callId?: unknown;
  toolName?: unknown;
  failed?: unknown;
  args?: unknown;
  content?: unknown;
}

/** A logged message of the page being viewed, with its content. */
export interface PageMessage {
  readonly seq: number;
  readonly role: string;
  readonly content: readonly LogPart[];
}

/** A logged message outside the page: sequence number and role only. */
export interface OtherMessage {
  readonly seq: number;
  readonly role: string;
}

/** The mechanism an edit belongs to. */
export type EditBy = 'set-aside' | 'trimmed' | 'image-replay' | 'pruned';

/** One edit the view recorded: the part (index, then index inside a tool result) and who made it. */
export interface LogViewEdit {
  readonly seq: number;
  readonly path: readonly number[];
  readonly by: EditBy;
  readonly what: 'text' | 'image';
  /** The tool result the part belongs to, when it is inside one. */
  readonly callId?: string;
  /**
   * That tool result's position in `toolResults()`, which tells apart results sharing a call id
   * (a server may hand an id out again).
   */
  readonly resultIndex?: number;
  /** For a text inside a tool result: its index among the result's text parts. */
  readonly textIndex?: number;
}

/** An image of the view, with the logged part it stands for and its message's sequence number. */
export interface LogImageRef extends ImageRef {
  readonly seq: number;
  readonly part: LogPart;
}

interface Entry {
  seq: number;
  /** The message's index as the wire would have it (see `wireIndexes`). */
  index: number;
  role: string;
  /** The editable copy of the content; undefined for messages outside the page. */
  content: LogPart[] | undefined;
}

function viewRole(role: string): ViewRole {
  switch (role) {
    case 'user':
      return 'user';
    case 'model':
      return 'assistant';
    case 'tool':
      return 'tool';
    default:
      // system, developer and roles the gateway does not know: never edited by a mechanism.
      return 'system';
  }
}

function isPart(value: unknown): value is LogPart {
  return (
    typeof value === 'object' && value !== null && typeof (value as { kind?: unknown }).kind === 'string'
  );
}

function partsOf(value: unknown): LogPart[] {
  return Array.isArray(value) ? value.filter(isPart) : [];
}

/**
 * Indexes the messages the way the wire numbers them. The log splits an Anthropic user turn into
 * one tool message per `tool_result` followed by a user message with the rest; on the wire that is
 * one message, so those tool messages take the user message's index and count as part of the turn
 * it starts (as the Anthropic request view sees them). Other formats index every message apart.
 */
function wireIndexes(entries: Entry[], format: string): void {
  for (let i = 0; i < entries.length; i++) entries[i]!.index = entries[i]!.seq;
  if (format !== 'anthropic') return;
  let runStart = -1;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const contiguous = i > 0 && entries[i - 1]!.seq === entry.seq - 1;
    if (entry.role === 'tool') {
      if (runStart === -1 || !contiguous) runStart = i;
      continue;
    }
    if (entry.role === 'user' && runStart !== -1 && contiguous) {
      for (let k = runStart; k < i; k++) entries[k]!.index = entry.index;
    }
    runStart = -1;
  }
}

export class LogRequestView implements RequestView {
  readonly body: Record<string, unknown>;
  readonly model: string;
  /** The mechanism whose step runs now; every edit is recorded under it. */
  by: EditBy = 'set-aside';
  readonly edits: LogViewEdit[] = [];
  private readonly entries: Entry[];

  constructor(opts: {
    page: readonly PageMessage[];
    others: readonly OtherMessage[];
    /** The wire format of the chat's requests (`openai`, `anthropic`, `responses`). */
    format: string;
    model?: string;
  }) {
    const inPage = new Set(opts.page.map((m) => m.seq));
    const entries: Entry[] = [
      ...opts.page.map((m) => ({
        seq: m.seq,
        index: m.seq,
        role: m.role,
        content: structuredClone([...m.content]),
      })),
      ...opts.others
        .filter((m) => !inPage.has(m.seq))
        .map((m) => ({ seq: m.seq, index: m.seq, role: m.role, content: undefined })),
    ].sort((a, b) => a.seq - b.seq);
    wireIndexes(entries, opts.format);
    this.entries = entries;
    this.model = opts.model ?? '';
    this.body = {
      messages: entries.flatMap((e) => (e.content ? [{ seq: e.seq, role: e.role, content: e.content }] : [])),
    };
  }

  get changed(): boolean {
    return this.edits.length > 0;
  }

  /** The edited content of a page message. */
  contentOf(seq: number): LogPart[] | undefined {
    return this.entries.find((e) => e.seq === seq)?.content;
  }

  private record(edit: Omit<LogViewEdit, 'by'>): void {
    this.edits.push({ ...edit, by: this.by });
  }

  private slot(
    entry: Entry,
    part: LogPart,
    path: number[],
    inResult?: { callId: string; resultIndex: number; textIndex: number },
  ): TextSlot {
    return new LogTextSlot(part, () => this.record({ seq: entry.seq, path, what: 'text', ...inResult }));
  }

  private image(
    entry: Entry,
    holder: LogPart[],
    at: number,
    path: number[],
    inToolResult: boolean,
    inResult?: { callId: string; resultIndex: number },
  ): LogImageRef | undefined {
    const part = holder[at];
    if (!part || part.kind !== 'image') return undefined;
    const url = typeof part.url === 'string' ? part.url : undefined;
    return {
      seq: entry.seq,
      part,
      messageIndex: entry.index,
      path,
      inToolResult,
      get source(): ImageSource {
        // A logged image is an attachment (its bytes on disk) or a remote URL. The mechanisms the
        // viewer runs never read the source; set-aside replay keys images by attachment hash.
        if (url !== undefined) return { kind: 'url', url };
        throw new Error('a logged image attachment has no wire source');
      },
      replaceWithText: (text: string) => {
        holder[at] = { kind: 'text', text };
        this.record({ seq: entry.seq, path, what: 'image', ...inResult });
      },
    };
  }

  /** The attachment hash or URL of a logged image part: the key of an `image-set-aside` decision. */
  static imagePart(part: LogPart): { sha256?: string; url?: string } {
    const attachment = part.attachment;
    const sha256 =
      typeof attachment === 'object' && attachment !== null
        ? (attachment as { sha256?: unknown }).sha256
        : undefined;
    return {
      ...(typeof sha256 === 'string' && { sha256 }),
      ...(typeof part.url === 'string' && { url: part.url }),
    };
  }

  messages(): MessageRef[] {
    return this.entries.map((entry) => {
      const content = entry.content;
      const hasToolResults = content ? content.some((p) => p.kind === 'tool-result') : entry.role === 'tool';
      const hasOwnContent = content
        ? content.some((p) => p.kind !== 'tool-result') || content.length === 0
        : entry.role !== 'tool';
      const texts: TextSlot[] = [];
      content?.forEach((part, i) => {
        if (part.kind === 'text') texts.push(this.slot(entry, part, [i]));
      });
      return { index: entry.index, role: viewRole(entry.role), hasToolResults, hasOwnContent, texts };
    });
  }

  toolResults(): ToolResultRef[] {
    const out: ToolResultRef[] = [];
    for (const entry of this.entries) {
      entry.content?.forEach((part, i) => {
        if (part.kind !== 'tool-result') return;
        const callId = typeof part.callId === 'string' ? part.callId : '';
        const resultIndex = out.length;
        const inner = Array.isArray(part.content) ? (part.content as unknown[]) : [];
        const texts: TextSlot[] = [];
        const images: ImageRef[] = [];
        inner.forEach((child, j) => {
          if (!isPart(child)) return;
          if (child.kind === 'text') {
            texts.push(this.slot(entry, child, [i, j], { callId, resultIndex, textIndex: texts.length }));
          } else if (child.kind === 'image') {
            const ref = this.image(entry, inner as LogPart[], j, [i, j], true, { callId, resultIndex });
            if (ref) images.push(ref);
          }
        });
        out.push({
          messageIndex: entry.index,
          callId,
          toolName: typeof part.toolName === 'string' ? part.toolName : undefined,
          isError: part.failed === true,
          texts,
          images,
        });
      });
    }
    return out;
  }

  images(): LogImageRef[] {
    const out: LogImageRef[] = [];
    // Counts tool results as `toolResults()` lists them.
    let resultIndex = -1;
    for (const entry of this.entries) {
      const content = entry.content;
      if (!content) continue;
      content.forEach((part, i) => {
        if (part.kind === 'tool-result') resultIndex += 1;
        if (part.kind === 'image' && entry.role === 'user') {
          const ref = this.image(entry, content, i, [i], false);
          if (ref) out.push(ref);
        } else if (part.kind === 'tool-result' && Array.isArray(part.content)) {
          const inner = part.content as LogPart[];
          const inResult = { callId: typeof part.callId === 'string' ? part.callId : '', resultIndex };
          inner.forEach((_child, j) => {
            const ref = this.image(entry, inner, j, [i, j], true, inResult);
            if (ref) out.push(ref);
          });
        }
      });
    }
    return out;
  }

  measure(sink: MeasureSink): void {
    for (const entry of this.entries) {
      sink.message?.();
      for (const part of entry.content ?? []) {
        if (typeof part.text === 'string') sink.text(part.text);
        else if (typeof part.args === 'string') sink.text(part.args);
        else if (part.kind === 'image') sink.image();
        else if (part.kind === 'tool-result') {
          for (const child of partsOf(part.content)) {
            if (typeof child.text === 'string') sink.text(child.text);
            else if (child.kind === 'image') sink.image();
          }
        }
      }
    }
  }

  cacheTtlHint(): undefined {
    return undefined;
  }
}

/**
 * One logged text part, editable. A class, not an object literal with a getter (V8 defines a
 * literal's accessors at run time; see StringSlot in providers/text-slots.ts).
 */
class LogTextSlot implements TextSlot {
  constructor(
    private readonly part: LogPart,
    private readonly recordEdit: () => void,
  ) {}

  get text(): string {
    return typeof this.part.text === 'string' ? this.part.text : '';
  }

  set(text: string): void {
    if (this.part.text === text) return;
    this.part.text = text;
    this.recordEdit();
  }
}
