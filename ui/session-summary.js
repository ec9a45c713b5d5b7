// @ts-check
/**
 * The log viewer's summary of a session: its header facts and totals, what each mechanism removed
 * from what the model received, and every other read-model value in a fold.
 */
import { el } from './dom.js';
import { num, time } from './format.js';

/**
 * Header facts and read-model values of a chat as a definition list.
 * @param {any} detail
 */
export function sessionSummary(detail) {
  const h = detail.header ?? {};
  const totals = detail.snapshot?.values?.totals ?? {};
  // The chat's bill: its own answered calls (a branch's inherited ones stay on its parent's), input
  // at the full price only (OpenAI's prompt tokens less the cached ones).
  const billed = detail.usage ?? {};
  /** @type {Array<[string, string]>} */
  const rows = [
    ['Session', String(h.id)],
    ['Team', h.team ?? '–'],
    ['Created', time(h.createdAt)],
    ['Last activity', time(totals.lastActivityAt)],
    ['Messages', num(totals.messageCount)],
    [
      'Model calls',
      `${num(totals.requestCount)}${totals.failedResponseCount ? ` (${num(totals.failedResponseCount)} failed)` : ''}`,
    ],
    ['Tokens in', num(billed.inputTokens)],
    [
      'Cache read / write',
      `${num(billed.cacheReadTokens)} / ${num(billed.cacheWriteTokens)}${billed.cacheWrite1hTokens ? ` (1h ${num(billed.cacheWrite1hTokens)})` : ''}`,
    ],
    ['Tokens out', num(billed.outputTokens)],
  ];
  for (const key of ['cwd', 'origin', 'depth', 'preset', 'parent']) {
    if (h[key] !== undefined) rows.push([key, String(h[key])]);
  }
  return el(
    'div',
    null,
    el(
      'dl',
      'facts',
      rows.map(([k, v]) => el('div', null, el('dt', null, k), el('dd', null, v))),
    ),
    savedLine(detail.savings ?? detail.snapshot?.values?.savings),
    moreFacts(detail),
  );
}

/**
 * The chat's savings in one line, from a savings read model that names what each mechanism removed.
 * @param {any} savings
 */
function savedLine(savings) {
  // The route's `savings` names the mechanisms directly; the read model holds them under `removed`.
  const removed = savings?.removed ?? savings;
  if (!removed || typeof removed !== 'object') return null;
  const names = /** @type {Record<string, string>} */ ({
    trimming: 'trimming',
    pruning: 'pruning',
    imageSetAside: 'images set aside',
    imageReplay: 'image replay',
  });
  const parts = Object.entries(removed)
    .filter(([k, v]) => k !== 'total' && v && typeof v.chars === 'number' && v.chars > 0)
    .map(([k, v]) => `${names[k] ?? k} ${num(v.chars)} chars`);
  const total = removed.total;
  if (parts.length === 0 && !(total?.chars > 0))
    return el('p', 'saved-line muted', 'Nothing removed from what the model received yet.');
  return el(
    'p',
    'saved-line',
    `Removed from what the model received: ${parts.join(' · ')}${total && typeof total.tokens === 'number' ? ` (≈ ${num(total.tokens)} tokens in all)` : ''}`,
  );
}

/**
 * Every other value of the snapshot (and the route's usage and savings), flattened, in a fold.
 * @param {any} detail
 */
function moreFacts(detail) {
  /** @type {Array<[string, string]>} */
  const rows = [];
  /**
   * @param {string} prefix
   * @param {unknown} value
   * @param {number} depth
   */
  const walk = (prefix, value, depth) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && depth < 4) {
      for (const [k, v] of Object.entries(value)) walk(prefix ? `${prefix}.${k}` : k, v, depth + 1);
    } else {
      rows.push([prefix, typeof value === 'number' ? num(value) : JSON.stringify(value)]);
    }
  };
  walk('', detail.snapshot?.values ?? {}, 0);
  for (const group of ['usage', 'savings']) if (detail[group] !== undefined) walk(group, detail[group], 1);
  if (rows.length === 0) return null;
  return el(
    'details',
    'more-facts',
    el('summary', null, 'All read-model values'),
    el(
      'dl',
      'facts',
      rows.map(([k, v]) => el('div', null, el('dt', null, k), el('dd', null, v))),
    ),
  );
}
