/** Editable text slots over wire bodies, shared by the formats' request views. */
import type { TextSlot } from './request-view.ts';
import { isObj, type Obj } from './wire-json.ts';

/** Set by a slot when an edit really changed the body (same text is no change). */
export interface EditState {
  changed: boolean;
}

/** A slot over `holder[key]` when it holds a plain string. */
export function stringSlot(holder: Obj, key: string, state: EditState): TextSlot {
  return {
    get text() {
      const value = holder[key];
      return typeof value === 'string' ? value : '';
    },
    set(text: string) {
      if (holder[key] === text) return;
      holder[key] = text;
      state.changed = true;
    },
  };
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
