// @ts-check
/* global IntersectionObserver */
/**
 * One logged message as a card: its content as the client sent it and, when the gateway changed
 * what the model received, that form beside it with the reason for each change (a trim marker, a
 * pruning note, a set-aside note with the image it replaced, an image replay placeholder) and a way
 * to see the original. Every piece of chat content is shown as text; images come only from the
 * gateway's attachment route, as blob: URLs, and a remote image URL in a chat is shown, never loaded.
 */
import { el } from './dom.js';
import { bytes, codePoints, num, prettyJson, time } from './format.js';
import { getBlob, path } from './api.js';

/**
 * @typedef {{ kind: string, [field: string]: any }} Part
 * @typedef {{ by: string, path: number[], [field: string]: any }} Effect
 * @typedef {{ seq: number, content: Part[], effects: Effect[] }} Received
 */

/** Texts longer than this many code points show their start and end until opened. */
const FOLD_AT = 6000;

/** Loads thumbnails when they come into view, each attachment once, as blob: URLs. */
export class Thumbnails {
  /** @param {string} chatId */
  constructor(chatId) {
    this.chatId = chatId;
    /** @type {Map<string, Promise<string>>} */
    this.urls = new Map();
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        const img = /** @type {HTMLImageElement} */ (entry.target);
        this.observer.unobserve(img);
        void this.load(img);
      }
    });
  }

  /** @param {HTMLImageElement} img */
  async load(img) {
    const sha = img.dataset.sha256 ?? '';
    let url = this.urls.get(sha);
    if (!url) {
      url = getBlob(path`/v1/sessions/${this.chatId}/attachments/${sha}`).then((blob) =>
        URL.createObjectURL(blob),
      );
      this.urls.set(sha, url);
    }
    try {
      img.src = await url;
    } catch (err) {
      img.alt = `image not available: ${err instanceof Error ? err.message : String(err)}`;
      img.classList.add('broken');
      this.urls.delete(sha);
    }
  }

  /**
   * A thumbnail element for an image attachment.
   * @param {{sha256: string, mediaType?: string, width?: number, height?: number, bytes?: number}} attachment
   */
  thumb(attachment) {
    const facts = [
      attachment.mediaType,
      attachment.width && attachment.height ? `${attachment.width}×${attachment.height}` : '',
      typeof attachment.bytes === 'number' ? bytes(attachment.bytes) : '',
    ]
      .filter(Boolean)
      .join(', ');
    const img = el('img', {
      attrs: { class: 'thumb', alt: `image ${facts}`, title: `sha256 ${attachment.sha256}` },
      data: { sha256: attachment.sha256 },
    });
    img.addEventListener('click', () => img.classList.toggle('enlarged'));
    this.observer.observe(img);
    return el('figure', 'image', img, el('figcaption', null, facts));
  }

  close() {
    this.observer.disconnect();
    for (const url of this.urls.values()) url.then((u) => URL.revokeObjectURL(u)).catch(() => {});
    this.urls.clear();
  }
}

/**
 * A text as a <pre>; a long one shows its start and end with a button that opens the whole.
 * @param {string} text
 * @param {string} [cls]
 */
export function textBlock(text, cls = 'text') {
  const total = codePoints(text);
  if (total <= FOLD_AT) return el('pre', cls, text);
  const chars = Array.from(text);
  const folded = `${chars.slice(0, 3000).join('')}\n…\n${chars.slice(-1500).join('')}`;
  const pre = el('pre', cls, folded);
  const button = el('button', { attrs: { type: 'button', class: 'link' } }, `Show all ${num(total)} chars`);
  let open = false;
  button.addEventListener('click', () => {
    open = !open;
    pre.textContent = open ? text : folded;
    button.textContent = open ? 'Fold' : `Show all ${num(total)} chars`;
  });
  return el('div', 'fold', pre, button);
}

/**
 * The texts the mechanisms leave in what the model receives (the trim marker, the pruning notes and
 * placeholder, the image replay placeholders), found so they can be shown as markers.
 */
const MARKERS =
  /\n{0,2}\[\.\.\. tool result middle pruned \.\.\.\]\n{0,2}|\n{0,2}\[Tool result trimmed: kept first \d+ chars and last \d+ chars of \d+ chars\.\]|\n\.\.\.\n|\[Old tool result content cleared\]|\[image data removed - already processed by model\]|\[media reference removed - already processed by model\]|\[image removed during context pruning\]/g;

/**
 * A received text with the mechanisms' markers highlighted between its pieces, so a trimmed
 * result shows its head, the marker and its tail even when the pieces are folded.
 * @param {string} text
 */
function markedText(text) {
  /** @type {Node[]} */
  const pieces = [];
  let last = 0;
  for (const m of text.matchAll(MARKERS)) {
    const at = m.index ?? 0;
    if (at > last) pieces.push(textBlock(text.slice(last, at), 'text received'));
    pieces.push(el('mark', 'marker', m[0].trim() === '...' ? '…' : m[0].trim()));
    last = at + m[0].length;
  }
  if (pieces.length === 0) return textBlock(text, 'text received');
  if (last < text.length) pieces.push(textBlock(text.slice(last), 'text received'));
  return el('div', 'marked', pieces);
}

/**
 * @param {Part} part
 * @param {Thumbnails} thumbs
 * @returns {Node}
 */
function imagePart(part, thumbs) {
  if (part.attachment && typeof part.attachment.sha256 === 'string') return thumbs.thumb(part.attachment);
  if (typeof part.url === 'string' && /^data:/i.test(part.url)) {
    const url = part.url;
    return el(
      'div',
      'remote-image',
      el('span', 'label', 'Inline data the gateway did not store as an image (not shown): '),
      el('code', null, url.length > 120 ? `${url.slice(0, 120)}… (${num(url.length)} chars)` : url),
    );
  }
  if (typeof part.url === 'string') {
    return el(
      'div',
      'remote-image',
      el('span', 'label', 'Remote image (not loaded): '),
      el('code', null, part.url),
    );
  }
  return el('div', 'remote-image', 'Image (no copy)');
}

/**
 * One content part as sent.
 * @param {Part} part
 * @param {Thumbnails} thumbs
 * @param {(inner: Part[], index: number) => Node[]} [innerParts] renders a tool result's content
 * @param {number} [index]
 * @returns {Node}
 */
export function renderPart(part, thumbs, innerParts, index = 0) {
  switch (part.kind) {
    case 'text':
      return textBlock(String(part.text ?? ''));
    case 'reasoning': {
      const body = part.redacted
        ? el('p', 'muted', '(redacted reasoning)')
        : textBlock(String(part.text ?? ''), 'text reasoning');
      return el('details', 'reasoning', el('summary', null, 'Reasoning'), body);
    }
    case 'image':
      return imagePart(part, thumbs);
    case 'file':
      return el(
        'div',
        'file',
        el('span', 'label', 'File '),
        [
          part.name,
          part.mediaType,
          typeof part.bytes === 'number' ? bytes(part.bytes) : '',
          // Content sent inline is kept in the log as its data URL: said, not printed.
          typeof part.url === 'string' && /^data:/i.test(part.url) ? 'content kept in the log' : part.url,
        ]
          .filter(Boolean)
          .join(' · ') || '(no name)',
      );
    case 'tool-call':
      return el(
        'div',
        'tool-call',
        el(
          'div',
          'tool-head',
          el('span', 'label', 'Tool call '),
          el('strong', null, String(part.name ?? '')),
          el('code', 'call-id', String(part.id ?? '')),
        ),
        textBlock(prettyJson(String(part.args ?? '')), 'text args'),
      );
    case 'tool-result': {
      const inner = Array.isArray(part.content) ? part.content : [];
      return el(
        'div',
        part.failed ? 'tool-result failed' : 'tool-result',
        el(
          'div',
          'tool-head',
          el('span', 'label', part.failed ? 'Tool result (failed) ' : 'Tool result '),
          part.toolName ? el('strong', null, String(part.toolName)) : null,
          el('code', 'call-id', String(part.callId ?? '')),
        ),
        innerParts ? innerParts(inner, index) : inner.map((/** @type {Part} */ p) => renderPart(p, thumbs)),
      );
    }
    case 'raw':
      return el(
        'div',
        'raw',
        el('span', 'label', 'Kept as sent '),
        textBlock(JSON.stringify(part.value, null, 2), 'text json'),
      );
    default:
      return el(
        'div',
        'raw',
        el('span', 'label', `${part.kind} `),
        textBlock(JSON.stringify(part, null, 2), 'text json'),
      );
  }
}

/**
 * What one effect says, for people.
 * @param {Effect} e
 */
export function effectLabel(e) {
  switch (e.by) {
    case 'trimmed': {
      const why = e.trigger === 'overflow' ? 'after a context-overflow refusal' : 'at the compaction point';
      return typeof e.originalChars === 'number'
        ? `Trimmed ${why}: kept the first ${num(e.headChars)} and last ${num(e.tailChars)} of ${num(e.originalChars)} chars`
        : `Trimmed ${why}`;
    }
    case 'pruned':
      return e.action === 'cleared'
        ? 'Pruned: cleared (the prompt cache had gone cold)'
        : 'Pruned: soft-trimmed (the prompt cache had gone cold)';
    case 'set-aside':
      return `Image${typeof e.ordinal === 'number' ? ` #${e.ordinal}` : ''} set aside after an image-limit refusal`;
    case 'image-replay':
      return e.what === 'image'
        ? 'Image replay clean-up: image already seen by the model'
        : 'Image replay clean-up: media reference removed';
    default:
      return String(e.by);
  }
}

/**
 * A changed part as received: the received form, why it changed, and the original.
 * @param {Part} received
 * @param {Part | undefined} sent
 * @param {Effect[]} effects
 * @param {Thumbnails} thumbs
 */
function changedPart(received, sent, effects, thumbs) {
  const badges = el(
    'div',
    'effects',
    effects.map((e) => el('span', { attrs: { class: `effect effect-${e.by}` } }, effectLabel(e))),
  );
  const body =
    received.kind === 'text' ? markedText(String(received.text ?? '')) : renderPart(received, thumbs);
  let original = null;
  if (sent?.kind === 'image') {
    original = el('div', 'original-image', el('span', 'label', 'In place of: '), imagePart(sent, thumbs));
  } else if (sent?.kind === 'text') {
    const text = String(sent.text ?? '');
    const box = el(
      'div',
      { attrs: { class: 'original', hidden: true } },
      el('div', 'label', 'Original as sent:'),
      el('pre', 'text original-text', text),
    );
    const button = el(
      'button',
      { attrs: { type: 'button', class: 'link show-original' } },
      `Show original (${num(codePoints(text))} chars)`,
    );
    button.addEventListener('click', () => {
      box.hidden = !box.hidden;
      button.textContent = box.hidden ? `Show original (${num(codePoints(text))} chars)` : 'Hide original';
    });
    original = el('div', null, button, box);
  }
  return el('div', `changed changed-${effects[0]?.by ?? 'other'}`, badges, body, original);
}

/**
 * The received form of a message, part by part beside the sent parts (same places).
 * @param {Part[]} sent
 * @param {Received} received
 * @param {Thumbnails} thumbs
 */
function receivedParts(sent, received, thumbs) {
  /** @type {Map<string, Effect[]>} */
  const byPath = new Map();
  for (const e of received.effects) {
    const key = e.path.join('.');
    byPath.set(key, [...(byPath.get(key) ?? []), e]);
  }
  return received.content.map((part, i) => {
    const effects = byPath.get(String(i));
    if (effects) return changedPart(part, sent[i], effects, thumbs);
    return renderPart(part, thumbs, (inner) =>
      inner.map((child, j) => {
        const innerEffects = byPath.get(`${i}.${j}`);
        const sentInner = sent[i]?.content?.[j];
        return innerEffects ? changedPart(child, sentInner, innerEffects, thumbs) : renderPart(child, thumbs);
      }),
    );
  });
}

const ROLE_NAMES = /** @type {Record<string, string>} */ ({
  user: 'User',
  model: 'Model',
  tool: 'Tool',
  developer: 'Developer',
  system: 'System',
  other: 'Other',
});

/**
 * A message event as a card; with a received form, the two side by side.
 * @param {any} event a `message` event
 * @param {Received | undefined} received
 * @param {Thumbnails} thumbs
 */
export function messageCard(event, received, thumbs) {
  const role = String(event.role);
  const wireRole = event.wire && typeof event.wire.role === 'string' ? ` (${event.wire.role})` : '';
  const source =
    event.source?.kind === 'provider' ? 'answer' : event.source?.kind === 'gateway' ? 'from the gateway' : '';
  const head = el(
    'header',
    'msg-head',
    el('span', `role role-${role}`, (ROLE_NAMES[role] ?? role) + wireRole),
    source ? el('span', 'source', source) : null,
    el('span', 'seq', `#${event.seq}`),
    el('time', null, time(event.at)),
  );
  const content = Array.isArray(event.content) ? event.content : [];
  const card = el('article', { attrs: { class: `msg role-${role}` }, data: { seq: event.seq } }, head);
  card.append(messageBody(content, received, thumbs));
  return card;
}

/**
 * The body of a message card (replaced when a newer received form arrives).
 * @param {Part[]} content
 * @param {Received | undefined} received
 * @param {Thumbnails} thumbs
 */
export function messageBody(content, received, thumbs) {
  if (!received) {
    return el(
      'div',
      'msg-body',
      content.length > 0 ? content.map((p) => renderPart(p, thumbs)) : el('p', 'muted', '(empty)'),
    );
  }
  return el(
    'div',
    'msg-body two-columns',
    el(
      'div',
      'column sent',
      el('h4', null, 'Sent by the client'),
      content.map((p) => renderPart(p, thumbs)),
    ),
    el(
      'div',
      'column received',
      el('h4', null, 'Received by the model'),
      receivedParts(content, received, thumbs),
    ),
  );
}
