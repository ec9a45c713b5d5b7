// @ts-check
/* global URLSearchParams */
/**
 * The sessions list: newest activity first, paged, filtered by id, team and date. It reads
 * `GET /v1/sessions` with `limit`, `cursor`, `id_contains`, `team`, `from` and `to`; a gateway that answers
 * the whole list at once (`{"sessions": [...]}`) is paged and filtered here instead.
 */
import { el, replace } from './dom.js';
import { num, time } from './format.js';
import { getJson } from './api.js';

export const LIST_PAGE = 50;

/**
 * @typedef {{ id: string, createdAt?: number, lastActivityAt?: number, eventCount?: number, parent?: string, team?: string, [field: string]: any }} Summary
 * @typedef {{ q: string, team: string, from: string, to: string }} Filters
 * @typedef {{ items: Summary[], hasMore: boolean, nextCursor: string | undefined, indexing?: boolean }} ListPage
 */

/**
 * A date input's value (YYYY-MM-DD) as ms since the epoch at local midnight; `endOfDay` moves it to
 * the end of that day.
 * @param {string} value
 * @param {boolean} endOfDay
 */
function dayMs(value, endOfDay) {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const [y, m, d] = value.split('-').map(Number);
  const start = new Date(y ?? 1970, (m ?? 1) - 1, d ?? 1).getTime();
  return endOfDay ? start + 24 * 3600 * 1000 - 1 : start;
}

/**
 * The team a chat belongs to: its `team` field, else its id's team namespace (`t:<team>:`).
 * @param {Summary} s
 */
export function teamOf(s) {
  if (typeof s.team === 'string') return s.team;
  const m = /^t:([^:]+):/.exec(s.id);
  return m ? m[1] : undefined;
}

/**
 * One page of the sessions list.
 * @param {Filters} filters
 * @param {string | undefined} cursor
 * @returns {Promise<ListPage>}
 */
export async function listSessions(filters, cursor) {
  const params = new URLSearchParams({ limit: String(LIST_PAGE) });
  if (cursor) params.set('cursor', cursor);
  if (filters.q) params.set('id_contains', filters.q);
  if (filters.team) params.set('team', filters.team);
  const from = dayMs(filters.from, false);
  const to = dayMs(filters.to, true);
  if (from !== undefined) params.set('from', String(from));
  if (to !== undefined) params.set('to', String(to));
  const body = await getJson(`/v1/sessions?${params}`);
  if (Array.isArray(body.data)) {
    return {
      items: body.data,
      hasMore: body.has_more === true,
      nextCursor: body.next_cursor ?? undefined,
      indexing: body.indexing === true,
    };
  }
  // The whole list at once: filter, sort and page it here.
  /** @type {Summary[]} */
  const all = Array.isArray(body.sessions) ? body.sessions : [];
  const q = filters.q.toLowerCase();
  const matching = all
    .filter((s) => !q || s.id.toLowerCase().includes(q))
    .filter((s) => !filters.team || teamOf(s) === filters.team)
    .filter((s) => from === undefined || (s.lastActivityAt ?? s.createdAt ?? 0) >= from)
    .filter((s) => to === undefined || (s.createdAt ?? 0) <= to)
    .sort(
      (a, b) =>
        (b.lastActivityAt ?? b.createdAt ?? 0) - (a.lastActivityAt ?? a.createdAt ?? 0) ||
        (a.id < b.id ? -1 : 1),
    );
  const start = cursor && /^\d+$/.test(cursor) ? Number(cursor) : 0;
  const items = matching.slice(start, start + LIST_PAGE);
  const hasMore = start + LIST_PAGE < matching.length;
  return { items, hasMore, nextCursor: hasMore ? String(start + LIST_PAGE) : undefined };
}

/**
 * Renders a page of the list; a click on a session calls `open`.
 * @param {HTMLElement} list
 * @param {Summary[]} items
 * @param {string | undefined} selected
 * @param {(id: string) => void} open
 */
export function renderSessions(list, items, selected, open) {
  if (items.length === 0) {
    replace(list, el('li', 'muted', 'No sessions.'));
    return;
  }
  replace(
    list,
    items.map((s) => {
      const team = teamOf(s);
      const kind = s.conversation?.kind ?? (s.parent ? 'child' : undefined);
      return el(
        'li',
        { attrs: { class: s.id === selected ? 'session selected' : 'session' } },
        el(
          'button',
          {
            attrs: {
              type: 'button',
              class: 'session-open',
              'aria-current': s.id === selected ? 'true' : undefined,
            },
            data: { id: s.id },
            on: { click: () => open(s.id) },
          },
          el('span', 'session-id', s.id),
          el(
            'span',
            'session-meta',
            [
              team ? `team ${team}` : '',
              kind ?? '',
              time(s.lastActivityAt ?? s.createdAt),
              `${num(s.eventCount)} events`,
            ]
              .filter(Boolean)
              .join(' · '),
          ),
        ),
      );
    }),
  );
}
