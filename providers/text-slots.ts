/** Editable text slots over wire bodies, shared by the formats' request views. */
import type { TextSlot } from './request-view.ts';
import { isObj, type Obj } from './wire-json.ts';

/** Set by a slot when an edit really changed the body (same text is no change). */
export interface EditState {
  changed: boolean;
  /** Told of each text a slot really changed (a view's states pass it to the edit listener). */
  reportText?(before: string, after: string): void;
}

/** A slot over `holder[key]` when it holds a plain string. */
export function stringSlot(holder: Obj, key: string, state: EditState): TextSlot {
  return new StringSlot(holder, key, state);
}

/**
 * A class, not an object literal with a getter: V8 defines a literal's accessors at run time, which
 * made such a literal about twenty times dearer to build here (0.5-0.6 us against 0.02-0.03), and a
 * view builds a slot per text of the history on a pass over it.
 */
class StringSlot implements TextSlot {
  constructor(
    private readonly holder: Obj,
    private readonly key: string,
    private readonly state: EditState,
  ) {}

  get text(): string {
    const value = this.holder[this.key];
    return typeof value === 'string' ? value : '';
  }

  set(text: string): void {
    if (this.holder[this.key] === text) return;
    const before = this.text;
    this.holder[this.key] = text;
    this.state.changed = true;
    if (before !== text) this.state.reportText?.(before, text);
  }
}

/** Slots for `holder[key]`: a string is one slot, an array gives one per `{type:'text', text}` part. */
export function textSlots(holder: Obj, key: string, state: EditState): TextSlot[] {
  const content = holder[key];
  if (typeof content === 'string') return [stringSlot(holder, key, state)];
  if (!Array.isArray(content)) return [];
  const slots: TextSlot[] = [];
  for (const part of content) {
    if (isObj(part) && part.type === 'text' && typeof part.text === 'string') {
      slots.push(stringSlot(part, 'text', state));
    }
  }
  return slots;
}
