/**
 * One step per format version: v0 -> v1 -> v2 -> v3 -> v4 -> v5. Each step takes a log that is valid in
 * one version and returns it valid in the next; `../convert.ts` chains them. See HISTORY.md.
 */
import type { z } from 'zod';
import { canonicalJson } from '../canonical-json.ts';
import { sha256Hex } from '../../lib/sha256.ts';
import type * as v0 from './v0.ts';
import type * as v1 from './v1.ts';
import type * as v2 from './v2.ts';
import type * as v3 from './v3.ts';
import type * as v4 from './v4.ts';
import type * as v5 from './v5.ts';

export interface Log<H, E> {
  header: H;
  events: E[];
}

/** v0 -> v1: every v0 event is valid v1 except that a request now lists its tools (none in v0). */
export function upgradeV0(log: Log<v0.Header, v0.Event>): Log<v1.Header, v1.Event> {
  const header: v1.Header = { version: 1, id: log.header.id, createdAt: log.header.createdAt };
  const events = log.events.map((e): v1.Event => (e.type === 'request' ? { ...e, tools: [] } : e));
  return { header, events };
}

type V1Message = Extract<v1.Event, { type: 'message' }>;
type V2Message = Extract<v2.Event, { type: 'message' }>;

function upgradeV1Message(e: V1Message): V2Message {
  const role = e.role === 'assistant' ? 'model' : e.role;
  const content = typeof e.content === 'string' ? [{ kind: 'text' as const, text: e.content }] : e.content;
  return { ...e, role, content };
}

/**
 * v1 -> v2: `assistant` becomes `model`, string content becomes one text part, note text becomes a
 * text part, and a response gets the timing v2 requires: it started when its request was logged
 * (the response's own time when the request is missing), took one attempt.
 */
export function upgradeV1(log: Log<v1.Header, v1.Event>): Log<v2.Header, v2.Event> {
  const header: v2.Header = { version: 2, id: log.header.id, createdAt: log.header.createdAt };
  const requestAt = new Map<string, number>();
  const events = log.events.map((e): v2.Event => {
    switch (e.type) {
      case 'message':
        return upgradeV1Message(e);
      case 'request': {
        requestAt.set(e.requestId, e.at);
        const { notes, ...rest } = e;
        if (notes === undefined) return rest;
        return {
          ...rest,
          notes: notes.map((n) => ({ ...n, content: [{ kind: 'text' as const, text: n.content }] })),
        };
      }
      case 'response': {
        const startedAt = Math.min(requestAt.get(e.requestId) ?? e.at, e.at);
        return { ...e, startedAt, attempts: 1, latencyMs: e.at - startedAt };
      }
    }
  });
  return { header, events };
}

/** The digest v3 records for a tool that v2 inlined: SHA-256 of its canonical JSON definition. */
export function toolDefinitionDigest(def: z.infer<typeof v2.toolDefinition>): string {
  return sha256Hex(canonicalJson(def));
}

/** v2 -> v3: inlined tool definitions become name + digest; the header gains nothing it must fill. */
export function upgradeV2(log: Log<v2.Header, v2.Event>): Log<v3.Header, v3.Event> {
  const header: v3.Header = { ...log.header, version: 3 };
  const events = log.events.map((e): v3.Event => {
    if (e.type !== 'request') return e;
    return { ...e, tools: e.tools.map((t) => ({ name: t.name, digest: toolDefinitionDigest(t) })) };
  });
  return { header, events };
}

type V3Request = Extract<v3.Event, { type: 'request' }>;
type V3Note = NonNullable<V3Request['notes']>[number];
type V4Message = Extract<v4.Event, { type: 'message' }>;

/** Where the tool call `callId` was made, searching back from the end of `out`. */
function findCall(out: readonly v4.Event[], callId: string): { index: number; name: string } | undefined {
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i];
    if (e?.type !== 'message') continue;
    for (const part of e.content) {
      if (part.kind === 'tool-call' && part.id === callId) return { index: i, name: part.name };
    }
  }
  return undefined;
}

/**
 * Places one note as a tool message where the result belongs: after the message that made the call
 * (and after results already placed there), or just before the request when no call is found.
 */
function placeNote(out: v4.Event[], note: V3Note, request: V3Request): void {
  const call = findCall(out, note.callId);
  let pos = out.length;
  if (call !== undefined) {
    pos = call.index + 1;
    while (pos < out.length) {
      const next = out[pos];
      if (next?.type !== 'message' || next.role !== 'tool') break;
      pos++;
    }
  }
  const message: V4Message = {
    seq: 0,
    // the time of the event it precedes keeps `at` in order; the request's time when it goes last
    at: out[pos]?.at ?? request.at,
    type: 'message',
    role: 'tool',
    content: [
      {
        kind: 'tool-result',
        callId: note.callId,
        ...(call === undefined ? {} : { toolName: call.name }),
        failed: note.failed,
        content: note.content,
      },
    ],
  };
  out.splice(pos, 0, message);
}

/**
 * v3 -> v4: each note of a request becomes a tool message placed where the result belongs, the
 * request keeps its (now reserved, empty) notes slot unset, and sequence numbers are renumbered
 * contiguously from 0.
 */
export function upgradeV3(log: Log<v3.Header, v3.Event>): Log<v4.Header, v4.Event> {
  const header: v4.Header = { ...log.header, version: 4 };
  const out: v4.Event[] = [];
  for (const e of log.events) {
    if (e.type !== 'request') {
      out.push(e);
      continue;
    }
    const { notes, ...request } = e;
    for (const note of notes ?? []) placeNote(out, note, e);
    out.push(request);
  }
  return { header, events: out.map((e, seq) => ({ ...e, seq })) };
}

/**
 * v4 -> v5: v5 only adds (the raw part, a message's wire fields, the role `other`, the `responses`
 * format, the response id, the compaction event, the header's conversation), so every v4 record is
 * a valid v5 record and only the version number changes.
 */
export function upgradeV4(log: Log<v4.Header, v4.Event>): Log<v5.Header, v5.Event> {
  return { header: { ...log.header, version: 5 }, events: log.events };
}
