/** Builders of stored v4 events for read-model tests, and a fast-check generator of any event. */
import fc from 'fast-check';
import type { ContentPart, Event } from '../format/current.ts';

const hex = (c: string) => c.repeat(64);

export const msg = (
  seq: number,
  role: 'user' | 'model' | 'tool' | 'developer' | 'system',
  text: string,
  at = 1000 + seq,
): Event => ({
  seq,
  at,
  type: 'message',
  role,
  content: [{ kind: 'text', text }],
});

export const response = (
  seq: number,
  startedAt: number,
  ok: boolean,
  usage?: Record<string, number>,
): Event => ({
  seq,
  at: startedAt + 50,
  type: 'response',
  requestId: `r${seq}`,
  startedAt,
  status: ok ? 200 : 500,
  ok,
  attempts: 1,
  latencyMs: 50,
  ...(usage ? { usage } : {}),
});

export const pruning = (seq: number, at: number, changed: boolean): Event => ({
  seq,
  at,
  type: 'pruning',
  requestId: `r${seq}`,
  projection: changed ? [{ callId: 'c1', action: 'soft', digest: hex('a') }] : [],
  soft: changed ? 1 : 0,
  cleared: 0,
  charsRemoved: changed ? 5000 : 0,
  estimateBefore: 90000,
  estimateAfter: changed ? 88750 : 90000,
  changed,
});

export const trim = (
  seq: number,
  callId: string,
  part: number,
  digest = hex('b'),
  parts?: Array<{ chars: number; digest: string }>,
): Event => ({
  seq,
  at: 1000 + seq,
  type: 'tool-result-trimmed',
  requestId: `r${seq}`,
  callId,
  part,
  originalChars: 20000,
  headChars: 4096,
  tailChars: 1024,
  digest,
  trigger: 'threshold',
  ...(parts && { parts }),
});

export const setAside = (seq: number, key: string, note: string): Event => ({
  seq,
  at: 1000 + seq,
  type: 'image-set-aside',
  requestId: `r${seq}`,
  key,
  ordinal: 1,
  note,
  round: 1,
});

export const request = (seq: number): Event => ({
  seq,
  at: 1000 + seq,
  type: 'request',
  requestId: `r${seq}`,
  format: 'anthropic',
  provider: 'anthropic',
  model: 'claude-x',
  settings: { max_tokens: 100 },
  tools: [],
});

const nat = fc.nat({ max: 1e12 });
const text: fc.Arbitrary<ContentPart> = fc.string().map((t) => ({ kind: 'text' as const, text: t }));

/** Any event body (seq and at assigned by `events`). */
const body = fc.oneof(
  fc
    .record({
      role: fc.constantFrom('user', 'model', 'tool', 'developer', 'system'),
      content: fc.array(text, { maxLength: 3 }),
    })
    .map((m) => (s: number, at: number): Event => ({ seq: s, at, type: 'message', ...m })),
  fc.record({ startedAt: nat, ok: fc.boolean(), inputTokens: fc.nat(), cacheReadTokens: fc.nat() }).map(
    (r) =>
      (s: number, _at: number): Event =>
        response(s, r.startedAt, r.ok, { inputTokens: r.inputTokens, cacheReadTokens: r.cacheReadTokens }),
  ),
  fc.boolean().map(
    (changed) =>
      (s: number, at: number): Event =>
        pruning(s, at, changed),
  ),
  fc.record({ callId: fc.string(), part: fc.nat(3) }).map(
    (t) =>
      (s: number): Event =>
        trim(s, t.callId, t.part),
  ),
  fc.constantFrom('c', 'd').map(
    (k) =>
      (s: number): Event =>
        setAside(s, hex(k), `note ${s}`),
  ),
  fc.constant((s: number): Event => request(s)),
);

/** A log of events with contiguous seq from 0. */
export const events = fc
  .array(fc.tuple(body, nat), { maxLength: 40 })
  .map((list) => list.map(([make, at], i) => make(i, at)));
