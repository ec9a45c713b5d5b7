/**
 * What the model received, computed from the chat log for the log viewer: the chat's recorded
 * decisions and the view-only clean-up applied to a page of logged messages in the pipeline's
 * order (images set aside, tool results trimmed, the image replay clean-up, the pruning
 * projection), through the mechanisms' own replay functions. The result is the form the messages
 * had in the chat's latest request, with each changed part named and explained.
 *
 * Not in the log, from the gateway's current settings: the pruning `softTrim`/`hardClear` limits
 * (a soft-trim entry is re-run with them), whether the image replay clean-up is on, and its
 * `keepTurns` for a chat whose requests logged no replay window. A chat pruned under other
 * settings is shown as the current settings would send it.
 */
import {
  chatTurns,
  cleanBefore,
  cutoffOfTurn,
  imageReplayCleanup,
} from '../middleware/image-replay/index.ts';
import { applyProjection, type ReplaySettings } from '../middleware/cache-ttl-pruning/index.ts';
import { replayTrims } from '../middleware/tool-result-trimming/index.ts';
import { sha256Hex } from '../lib/sha256.ts';
import {
  LogRequestView,
  type LogPart,
  type OtherMessage,
  type PageMessage,
  type LogViewEdit,
} from './log-request-view.ts';

/** The recorded decisions, as the decisions read model holds them. */
export interface ViewDecisions {
  readonly trims: Readonly<
    Record<
      string,
      {
        seq: number;
        callId: string;
        part: number;
        digest: string;
        originalChars: number;
        headChars: number;
        tailChars: number;
        trigger: string;
        parts?: ReadonlyArray<{ chars: number; digest: string }>;
      }
    >
  >;
  readonly setAside: Readonly<Record<string, { seq: number; key: string; ordinal: number; note: string }>>;
  /** The image replay window the latest logged request used (its first kept turn), when recorded. */
  readonly imageReplay?: { seq: number; from: number } | null;
  readonly pruning: {
    seq: number;
    projection: ReadonlyArray<{ callId: string; action: 'soft' | 'cleared'; digest: string }>;
  } | null;
}

export interface ReceivedSettings extends ReplaySettings {
  readonly imageReplay: { readonly enabled: boolean; readonly keepTurns: number };
}

/** Why one part of a message differs from what the client sent. */
export type ReceivedEffect =
  | {
      by: 'trimmed';
      path: number[];
      callId: string;
      /** The `tool-result-trimmed` event. */
      decisionSeq?: number;
      trigger?: string;
      originalChars?: number;
      headChars?: number;
      tailChars?: number;
    }
  | { by: 'set-aside'; path: number[]; decisionSeq?: number; ordinal?: number }
  | { by: 'pruned'; path: number[]; callId: string; action: 'soft' | 'cleared'; decisionSeq: number }
  | { by: 'image-replay'; path: number[]; what: 'image' | 'media-reference' };

/** A message whose received form differs from the logged one: the content as received and why. */
export interface ReceivedMessage {
  seq: number;
  content: LogPart[];
  effects: ReceivedEffect[];
}

/** The set-aside decision's key of a logged image part (see middleware/image-set-aside/image-key.ts). */
function setAsideKey(part: LogPart): string | undefined {
  const { sha256, url } = LogRequestView.imagePart(part);
  // An inline image's key is the hash of its bytes, which is its attachment's name.
  if (sha256 !== undefined) return sha256;
  return url !== undefined ? sha256Hex(url) : undefined;
}

type SetAside = ViewDecisions['setAside'][string];
type Trim = ViewDecisions['trims'][string];

/**
 * Where a trim decision applied: its tool result's position (results may share a call id: a server
 * may hand an id out again) and the index of a text part it changed.
 */
const trimmedKey = (resultIndex: number | undefined, textIndex: number | undefined) =>
  `${resultIndex ?? -1}:${textIndex ?? -1}`;

const partKey = (seq: number, path: readonly (string | number)[]) => `${seq}:${path.join('.')}`;

/**
 * Replaces, in place, every page image whose key was set aside by the recorded note (as
 * replaySetAside does on the wire); returns the decision applied at each part.
 */
function replaySetAsideByKey(
  view: LogRequestView,
  decisions: ViewDecisions['setAside'],
): Map<string, SetAside> {
  const applied = new Map<string, SetAside>();
  if (Object.keys(decisions).length === 0) return applied;
  for (const image of view.images()) {
    const key = setAsideKey(image.part);
    const decision = key !== undefined && Object.hasOwn(decisions, key) ? decisions[key] : undefined;
    if (!decision) continue;
    image.replaceWithText(decision.note);
    applied.set(partKey(image.seq, image.path), decision);
  }
  return applied;
}

function effectOf(
  edit: LogViewEdit,
  decisions: ViewDecisions,
  setAside: Map<string, SetAside>,
  trimmed: Map<string, Trim>,
  pruned: Map<number, 'soft' | 'cleared'>,
): ReceivedEffect {
  const path = [...edit.path];
  switch (edit.by) {
    case 'trimmed': {
      const callId = edit.callId ?? '';
      // The decision replay applied to this part (a text's part may have moved since it was cut).
      const trim = trimmed.get(trimmedKey(edit.resultIndex, edit.textIndex));
      return {
        by: 'trimmed',
        path,
        callId,
        ...(trim && {
          decisionSeq: trim.seq,
          trigger: trim.trigger,
          originalChars: trim.originalChars,
          headChars: trim.headChars,
          tailChars: trim.tailChars,
        }),
      };
    }
    case 'set-aside': {
      const decision = setAside.get(partKey(edit.seq, edit.path));
      return {
        by: 'set-aside',
        path,
        ...(decision && { decisionSeq: decision.seq, ordinal: decision.ordinal }),
      };
    }
    case 'pruned': {
      const callId = edit.callId ?? '';
      return {
        by: 'pruned',
        path,
        callId,
        action: pruned.get(edit.resultIndex ?? -1) ?? 'soft',
        decisionSeq: decisions.pruning?.seq ?? -1,
      };
    }
    case 'image-replay':
      return { by: 'image-replay', path, what: edit.what === 'image' ? 'image' : 'media-reference' };
  }
}

/**
 * The received form of the `page` messages that the chat's decisions and the image replay
 * clean-up changed, in the pipeline's order. `others` are the chat's remaining messages (sequence
 * number and role), for turn counting; `format` is the chat's wire format.
 */
export function receivedView(input: {
  page: readonly PageMessage[];
  others: readonly OtherMessage[];
  format: string;
  decisions: ViewDecisions;
  settings: ReceivedSettings;
}): ReceivedMessage[] {
  const { decisions, settings } = input;
  const view = new LogRequestView({ page: input.page, others: input.others, format: input.format });

  view.by = 'set-aside';
  const setAside = replaySetAsideByKey(view, decisions.setAside);
  view.by = 'trimmed';
  const trimmed = new Map<string, Trim>();
  replayTrims(
    view,
    Object.values(decisions.trims).sort((a, b) => a.seq - b.seq),
    (trim, textIndexes, resultIndex) => {
      // The latest decision that changed a part names it (the last link of a chain).
      for (const i of textIndexes) trimmed.set(trimmedKey(resultIndex, i), trim);
    },
  );
  if (settings.imageReplay.enabled) {
    view.by = 'image-replay';
    // The window the latest request used, as logged with its response; a chat logged before
    // windows were recorded gets the window the clean-up computes from the turns.
    const recorded = decisions.imageReplay;
    if (recorded) cleanBefore(view, cutoffOfTurn(chatTurns(view.messages()), recorded.from));
    else imageReplayCleanup(view, settings.imageReplay.keepTurns);
  }
  // By result position: results sharing a call id may be pruned apart (one soft, one cleared).
  const pruned = new Map<number, 'soft' | 'cleared'>();
  if (decisions.pruning && decisions.pruning.projection.length > 0) {
    view.by = 'pruned';
    for (const entry of applyProjection(view, decisions.pruning.projection, settings)) {
      pruned.set(entry.resultIndex, entry.action);
    }
  }

  const bySeq = new Map<number, ReceivedEffect[]>();
  for (const edit of view.edits) {
    const effects = bySeq.get(edit.seq) ?? [];
    effects.push(effectOf(edit, decisions, setAside, trimmed, pruned));
    bySeq.set(edit.seq, effects);
  }
  return [...bySeq.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([seq, effects]) => ({ seq, content: view.contentOf(seq) ?? [], effects: dedupe(effects) }));
}

/** One effect per part and mechanism (a slot set twice by one step counts once). */
function dedupe(effects: ReceivedEffect[]): ReceivedEffect[] {
  const seen = new Set<string>();
  return effects.filter((e) => {
    const key = `${e.by}:${e.path.join('.')}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
