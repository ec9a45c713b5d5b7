/**
 * The events a branched chat starts with (SPEC sections 2 and 6): the parent's events before the
 * first logged message the branch does not share, then the decisions the parent recorded after that
 * point about the messages the branch does share. A request's decisions (images set aside, tool
 * results trimmed, a pruning pass) are logged after its messages, so the decisions of the request
 * whose last message a client edits or whose answer it regenerates come after the fork point, yet
 * they concern the shared history: without them the branch would send the model an image or a text
 * it was spared, and rewrite the prefix the provider has cached from the parent's last call.
 *
 * A decision about a message the branch does not share stays with the parent: an image set aside is
 * inherited only when it stands in a shared message (a decision names the image by content, and an
 * edited message may carry the same picture again), a trim only when its tool result is shared, and
 * the pruning projection in force (the parent's latest pass; each pass records the whole projection)
 * only for the shared tool results.
 */
import type { ContentPart, Event } from './format/current.ts';
import { fileIdImageUrl, imageKey } from '../lib/image-key.ts';

type Part = ContentPart | Extract<ContentPart, { kind: 'tool-result' }>['content'][number];

/** `data:<media type>[;params];base64,`: the head of an inline image kept verbatim in the log. */
const BASE64_DATA_URL = /^data:[^;,]*(?:;[^;,]*)*;base64,/i;

/**
 * The key an `image-set-aside` decision names a logged image by: the content hash of its bytes (an
 * attachment's own hash, or the bytes of an inline image the log kept as its data URL), else the
 * hash of its URL; for an image given by a provider file id (kept as a raw part), the hash of what
 * the file id stands for.
 */
function loggedImageKey(part: Part): string | undefined {
  if (part.kind === 'raw') {
    const v = part.value;
    const isImage =
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      (v.type === 'input_image' || v.type === 'computer_screenshot');
    return isImage && typeof v.file_id === 'string'
      ? imageKey({ kind: 'url', url: fileIdImageUrl(v.file_id) })
      : undefined;
  }
  if (part.kind !== 'image') return undefined;
  if (part.attachment) return part.attachment.sha256;
  if (part.url === undefined) return undefined;
  const head = BASE64_DATA_URL.exec(part.url);
  return head
    ? imageKey({ kind: 'base64', data: part.url.slice(head[0].length) })
    : imageKey({ kind: 'url', url: part.url });
}

/** The images and tool results of the shared messages, by the keys decisions name them with. */
function sharedSubjects(shared: readonly Event[]): { images: Set<string>; calls: Set<string> } {
  const images = new Set<string>();
  const calls = new Set<string>();
  const visit = (part: Part) => {
    if (part.kind === 'tool-result') {
      calls.add(part.callId);
      part.content.forEach(visit);
      return;
    }
    const key = loggedImageKey(part);
    if (key !== undefined) images.add(key);
  };
  for (const e of shared) if (e.type === 'message') e.content.forEach(visit);
  return { images, calls };
}

/**
 * The seed of a branch of the chat whose log is `parent` (all of it, from seq 0), sharing the
 * events before `seedUntil`: those events, then the parent's later decisions about them, in the
 * parent's order (the store numbers a seed from 0 and keeps each event's time).
 */
export function branchSeed(parent: readonly Event[], seedUntil: number): Event[] {
  const shared = parent.filter((e) => e.seq < seedUntil);
  const later = parent.filter((e) => e.seq >= seedUntil);
  if (shared.length === 0 || later.length === 0) return shared;
  const { images, calls } = sharedSubjects(shared);
  const passes = later.filter((e) => e.type === 'pruning');
  const lastPass = passes[passes.length - 1];
  const passBefore = shared.some((e) => e.type === 'pruning');
  const inherited: Event[] = [];
  for (const e of later) {
    if (e.type === 'image-set-aside' && images.has(e.key)) inherited.push(e);
    else if (e.type === 'tool-result-trimmed' && calls.has(e.callId)) inherited.push(e);
    else if (e.type === 'pruning' && e === lastPass) {
      const projection = e.projection.filter((entry) => calls.has(entry.callId));
      // A pass that pruned none of the shared results matters only as the one that replaced an
      // earlier projection the seed holds: the parent no longer prunes those results.
      if (projection.length > 0 || passBefore) inherited.push({ ...e, projection });
    }
  }
  return [...shared, ...inherited];
}
