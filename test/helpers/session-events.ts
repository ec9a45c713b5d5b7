/**
 * Reads a chat's log the way an operator would: `GET /v1/sessions/{id}/events` on a running
 * gateway. Tests use it to check what the gateway recorded (full texts, images, decisions).
 */
import assert from 'node:assert/strict';
import type { Event } from '../../chat-log/format/current.ts';

/** Every event of chat `id`, from sequence 0 to the end (page by page: a read answers at most 1,000). */
export async function sessionEvents(gatewayUrl: string, id: string): Promise<Event[]> {
  const events: Event[] = [];
  for (let offset: number | null = 0; offset !== null;) {
    const res: Response = await fetch(
      `${gatewayUrl}/v1/sessions/${encodeURIComponent(id)}/events?offset=${offset}`,
    );
    assert.equal(res.status, 200, `GET events of ${id}: ${res.status}`);
    const body = (await res.json()) as { events: Event[]; next_offset: number | null };
    events.push(...body.events);
    offset = body.next_offset;
  }
  return events;
}

/** Events of one type, narrowed. */
export function eventsOfType<T extends Event['type']>(
  events: readonly Event[],
  type: T,
): Array<Extract<Event, { type: T }>> {
  return events.filter((e): e is Extract<Event, { type: T }> => e.type === type);
}

/** Walks `path` (object keys and array indexes) into a parsed JSON value; undefined when absent. */
export function dig(value: unknown, path: ReadonlyArray<string | number>): unknown {
  let at: unknown = value;
  for (const step of path) {
    if (typeof step === 'number') {
      if (!Array.isArray(at)) return undefined;
      at = at[step];
    } else {
      if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
      at = (at as Record<string, unknown>)[step];
    }
  }
  return at;
}

/** A deep copy of a JSON value with the value at `path` replaced by `replacement`. */
export function withReplaced<T>(value: T, path: ReadonlyArray<string | number>, replacement: unknown): T {
  const copy = structuredClone(value);
  const parentPath = path.slice(0, -1);
  const last = path[path.length - 1];
  const parent = dig(copy, parentPath);
  assert.ok(
    parent !== null && typeof parent === 'object' && last !== undefined,
    `no parent at ${JSON.stringify(path)}`,
  );
  (parent as Record<string | number, unknown>)[last] = replacement;
  return copy;
}
