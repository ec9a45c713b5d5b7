/**
 * Internal read model: the gateway's recorded decisions, replayed on every later request of the
 * chat: tool-result trims (by call id, part and digest), images set aside (by image key), the
 * projection of the latest cache-TTL pruning pass, and the image replay window of the latest logged
 * request.
 */
import { z } from 'zod';
import type { ReadModel } from './read-model.ts';

const int = z.number().int().nonnegative();
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

const trimDecision = z.strictObject({
  seq: int,
  requestId: z.string(),
  callId: z.string(),
  part: int,
  digest: sha256,
  originalChars: int,
  headChars: int,
  tailChars: int,
  trigger: z.enum(['threshold', 'overflow']),
  parts: z.array(z.strictObject({ chars: int, digest: sha256 })).optional(),
});
const setAsideDecision = z.strictObject({
  seq: int,
  requestId: z.string(),
  key: sha256,
  ordinal: int,
  note: z.string(),
  round: int,
});
const pruningDecision = z.strictObject({
  seq: int,
  at: int,
  requestId: z.string(),
  projection: z.array(
    z.strictObject({ callId: z.string(), action: z.enum(['soft', 'cleared']), digest: sha256 }),
  ),
});
/** The image replay window the latest logged request used: its first kept turn. */
const imageReplayWindow = z.strictObject({ seq: int, from: int });
const decisionsState = z.strictObject({
  trims: z.record(z.string(), trimDecision),
  setAside: z.record(z.string(), setAsideDecision),
  pruning: pruningDecision.nullable(),
  imageReplay: imageReplayWindow.nullable(),
});

export type TrimDecision = z.infer<typeof trimDecision>;
export type SetAsideDecision = z.infer<typeof setAsideDecision>;
export type PruningDecision = z.infer<typeof pruningDecision>;
export type ImageReplayWindow = z.infer<typeof imageReplayWindow>;
export type DecisionsState = z.infer<typeof decisionsState>;

/**
 * The key of a trim decision: the call id, the 0-based text part and the digest of the text it cut.
 * The digest keeps a chain apart (a text trimmed again under tighter limits is another text, and
 * replay needs every link, in order); the part keeps apart two equal texts of one result that a
 * log from before results were trimmed as one text trimmed one by one.
 */
export const trimKey = (callId: string, part: number, digest: string): string =>
  `${callId}:${part}:${digest}`;

export const decisionsModel: ReadModel<DecisionsState> = {
  name: 'decisions',
  version: 3,
  internal: true,
  schema: decisionsState,
  initial: () => ({ trims: {}, setAside: {}, pruning: null, imageReplay: null }),
  apply(state, e) {
    switch (e.type) {
      case 'tool-result-trimmed': {
        const { seq, requestId, callId, part, digest, originalChars, headChars, tailChars, trigger } = e;
        const key = trimKey(callId, part, digest);
        // The same text trimmed twice (a replay that missed it, in logs from before replay found
        // texts by digest): the first decision stands, it is the form the model saw first.
        if (Object.hasOwn(state.trims, key)) return state;
        const trim = {
          seq,
          requestId,
          callId,
          part,
          digest,
          originalChars,
          headChars,
          tailChars,
          trigger,
          ...(e.parts && { parts: e.parts.map((p) => ({ chars: p.chars, digest: p.digest })) }),
        };
        return { ...state, trims: { ...state.trims, [key]: trim } };
      }
      case 'image-set-aside': {
        // The first decision for an image stands: setting aside is permanent and its note never changes.
        if (Object.hasOwn(state.setAside, e.key)) return state;
        const { seq, requestId, key, ordinal, note, round } = e;
        return {
          ...state,
          setAside: { ...state.setAside, [key]: { seq, requestId, key, ordinal, note, round } },
        };
      }
      case 'pruning':
        // Each pass leaves the projection replayed until the next pass.
        return {
          ...state,
          pruning: { seq: e.seq, at: e.at, requestId: e.requestId, projection: e.projection },
        };
      case 'response': {
        // The window a request used stands until a later request logs another.
        const from = e.mechanisms?.imageReplayFrom;
        return from === undefined ? state : { ...state, imageReplay: { seq: e.seq, from } };
      }
      default:
        return state;
    }
  },
};
