/**
 * Reading how a 200 stream starts (`peekStreamStart`): its first events, in order, until one says
 * whether the answer has begun. Each format names the events that only say the answer exists and
 * reads an event that says it failed; anything else is output.
 */
import type { SseEventText, StreamStart } from './provider.ts';
import { isObj, str, type Obj } from './wire-json.ts';

export function readStreamStart(
  events: readonly SseEventText[],
  /** Event types that say only that the answer exists: nothing of it yet. */
  lifecycle: ReadonlySet<string>,
  /** The failure an event stands for (with the HTTP status and body it would have had), else undefined. */
  failure: (type: string | undefined, event: Obj, text: string) => StreamStart | undefined,
): StreamStart {
  for (const { event, data } of events) {
    const text = data.trim();
    if (text === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { kind: 'output' };
    }
    const type = (isObj(parsed) ? str(parsed.type) : undefined) ?? event;
    if (type !== undefined && lifecycle.has(type)) continue;
    return failure(type, isObj(parsed) ? parsed : {}, text) ?? { kind: 'output' };
  }
  return { kind: 'pending' };
}
