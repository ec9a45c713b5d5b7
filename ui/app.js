// @ts-check
/* global DOMException, HTMLButtonElement, HTMLElement, HTMLFormElement, HTMLInputElement, URLSearchParams, document, history, location, window */
/**
 * The log viewer page: asks for a key when the gateway wants one, lists the sessions, and shows a
 * session's conversations and a conversation's timeline. The location hash names the session and
 * conversation shown (`#session=<id>&chat=<id>`), never a key.
 */
import { byId, el, replace } from './dom.js';
import { ApiError, badKeyChar, getJson, path, storedKey, storeKey } from './api.js';
import { afterAskedWait, asksWait } from './asked-wait.js';
import { SessionList } from './session-list.js';
import { ConversationView } from './conversation.js';
import { SessionPanel } from './session-panel.js';

const ui = {
  keyPanel: byId('key-panel', HTMLElement),
  keyForm: byId('key-form', HTMLFormElement),
  keyInput: byId('key-input', HTMLInputElement),
  keyError: byId('key-error', HTMLElement),
  main: byId('main', HTMLElement),
  who: byId('who', HTMLElement),
  filters: byId('filters', HTMLFormElement),
  q: byId('filter-q', HTMLInputElement),
  team: byId('filter-team', HTMLInputElement),
  from: byId('filter-from', HTMLInputElement),
  to: byId('filter-to', HTMLInputElement),
  list: byId('sessions-list', HTMLElement),
  pageFirst: byId('page-first', HTMLButtonElement),
  pageNext: byId('page-next', HTMLButtonElement),
  pageInfo: byId('page-info', HTMLElement),
  sessionEmpty: byId('session-empty', HTMLElement),
  sessionView: byId('session-view', HTMLElement),
  sessionWait: byId('session-wait', HTMLElement),
  summary: byId('session-summary', HTMLElement),
  tree: byId('conversation-tree', HTMLElement),
  title: byId('conversation-title', HTMLElement),
  live: byId('live', HTMLElement),
  turns: byId('turns', HTMLElement),
  turnsTop: byId('turns-top', HTMLElement),
  turnsList: byId('turns-list', HTMLElement),
  fatal: byId('fatal', HTMLElement),
};

/** While a session is open, how often its tree is read again to show conversations that appeared. */
const TREE_REFRESH_MS = 15_000;
/** How often the list's first page is read again while it is shown. */
const LIST_REFRESH_MS = 30_000;
/** New events in the open conversation read the tree again at most this often. */
const TREE_AFTER_EVENTS_MS = 5_000;

const state = {
  /** @type {string | undefined} */
  session: undefined,
  /** @type {string | undefined} */
  chat: undefined,
  /** @type {ConversationView | undefined} */
  conversation: undefined,
  /** Routes shown so far: a route whose turn has passed stops at its next wait. */
  route: 0,
  /** When the tree was last read (ms), and a read after new events already waiting. */
  treeReadAt: 0,
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  treeTimer: undefined,
  /** A read of the tree under way (or waiting as the gateway asked): the timers leave it alone. */
  treeReading: false,
  /** The route whose session answered 404 (gone): its tree is not read again. */
  goneRoute: -1,
};

const list = new SessionList({
  form: ui.filters,
  q: ui.q,
  team: ui.team,
  from: ui.from,
  to: ui.to,
  list: ui.list,
  pageFirst: ui.pageFirst,
  pageNext: ui.pageNext,
  pageInfo: ui.pageInfo,
  selected: () => state.session,
  open: (id) => go(id),
  onShown: () => {
    ui.fatal.hidden = true;
    ui.keyPanel.hidden = true;
    ui.main.hidden = false;
  },
  onRefused: () => keyRefused(),
  onError: (err) => showError(err),
  onWait: (text) => showError(text),
});

/** The open session's summary, tree and the line that says its reads wait. */
const panel = new SessionPanel(
  { summary: ui.summary, tree: ui.tree, wait: ui.sessionWait },
  () => list.items,
  go,
);
/** @param {string} text */
const sayWait = (text) => panel.say(text);

function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { session: params.get('session') ?? undefined, chat: params.get('chat') ?? undefined };
}

/**
 * The location hash (without `#`) that names a session's conversation.
 * @param {string} session
 * @param {string} [chat]
 */
function routeHash(session, chat) {
  const params = new URLSearchParams({ session });
  if (chat && chat !== session) params.set('chat', chat);
  return params.toString();
}

/**
 * Shows a session's conversation. Picking the one the address already names (after it failed to
 * load) changes no hash, so it loads again here.
 * @param {string} session
 * @param {string} [chat]
 */
function go(session, chat) {
  const hash = routeHash(session, chat);
  if (location.hash.slice(1) === hash) void showRoute().catch(showError);
  else location.hash = hash;
}

/** @param {unknown} err */
function showError(err) {
  ui.fatal.hidden = false;
  ui.fatal.textContent = err instanceof Error ? err.message : String(err);
}

function askForKey(message = '') {
  ui.main.hidden = true;
  ui.keyPanel.hidden = false;
  ui.keyError.textContent = message;
  ui.keyInput.value = '';
  ui.keyInput.focus();
}

function showWho() {
  const key = storedKey();
  if (!key) {
    replace(ui.who);
    return;
  }
  replace(
    ui.who,
    el('span', 'muted', 'Signed in with a key'),
    el(
      'button',
      { attrs: { type: 'button', class: 'link', id: 'sign-out' }, on: { click: signOut } },
      'Sign out',
    ),
  );
}

/** A key the gateway refused (or none where it wants one): forget it and ask for one. */
function keyRefused() {
  const hadKey = storedKey() !== null;
  storeKey(null);
  showWho();
  // The list and a session refused together ask once; a key that was refused says so.
  if (hadKey || ui.keyPanel.hidden) askForKey(hadKey ? 'That key was refused.' : '');
}

function signOut() {
  storeKey(null);
  state.conversation?.close();
  state.conversation = undefined;
  state.session = undefined;
  state.chat = undefined;
  history.replaceState(null, '', location.pathname);
  showWho();
  askForKey();
}

/**
 * Reads the open session again and redraws its tree when conversations appeared or grew (keeping
 * the one shown selected) and its summary when its figures changed: new turns the live tail
 * brings are counted there a few seconds later, from this one read (the log is not read again).
 * Quiet: a failed read leaves both as they were (the conversation's own live badge says when the
 * gateway is out of reach or the chat is gone); a session that answers 404 is not read again
 * until it is opened again. While the gateway asks the page to wait (any of its reads refused with
 * `retry-after`, 429 or 503) the read waits until the wait is over, saying so, and one refused so
 * is made again then.
 */
async function refreshTree() {
  const { session, chat, conversation } = state;
  if (!session || !chat || !conversation || ui.main.hidden || document.hidden) return;
  const turn = state.route;
  if (state.goneRoute === turn || state.treeReading) return;
  const stale = () => turn !== state.route || state.conversation !== conversation;
  state.treeReading = true;
  try {
    for (let again = false; ; again = true) {
      if (!(await afterAskedWait('Reading the session', again, sayWait, stale))) return;
      state.treeReadAt = Date.now();
      try {
        const detail = await getJson(path`/v1/sessions/${session}`);
        if (stale()) return;
        panel.say('');
        panel.showTree(detail, session, chat, true);
        panel.showSummary(detail, true);
        return;
      } catch (err) {
        // A session gone (its log removed) stays gone: asking again would only count against the key.
        if (err instanceof ApiError && err.status === 404) state.goneRoute = turn;
        if (stale()) return;
        if (!asksWait(err)) return panel.say('');
      }
    }
  } finally {
    state.treeReading = false;
  }
}

/** New events in the open conversation: read the tree again soon, at most once per few seconds. */
function treeAfterEvents() {
  if (state.treeTimer !== undefined) return;
  const wait = Math.max(1000, state.treeReadAt + TREE_AFTER_EVENTS_MS - Date.now());
  state.treeTimer = setTimeout(() => {
    state.treeTimer = undefined;
    void refreshTree();
  }, wait);
}

async function showRoute() {
  const named = route();
  let session = named.session;
  const chat = named.chat;
  if (!session) {
    state.conversation?.close();
    state.conversation = undefined;
    ui.sessionView.hidden = true;
    ui.sessionEmpty.hidden = false;
    return;
  }
  const target = chat ?? session;
  if (session === state.session && target === state.chat) return;
  // Only the latest route goes on after each wait: picks made while one loads never leave two views.
  const turn = ++state.route;
  state.session = session;
  state.chat = target;
  list.redraw();
  ui.sessionEmpty.hidden = true;
  ui.sessionView.hidden = false;
  state.conversation?.close();
  state.conversation = undefined;
  // The view closed follows nothing any more.
  replace(ui.live);
  ui.live.className = 'live';
  panel.say('');
  /** Whether the summary, tree and title shown are this route's. */
  let shown = false;
  try {
    // Picked while the gateway asks the page to wait: opened once the wait is over, unless
    // another is picked meanwhile.
    if (!(await afterAskedWait('Opening the session', false, sayWait, () => turn !== state.route))) return;
    let detail = await getJson(path`/v1/sessions/${session}`);
    if (turn !== state.route) return;
    /** The shown conversation's own detail, when the session's is not it. */
    let targetDetail;
    // A sub-agent, side chat or branch picked in the list belongs to its agent session: show it
    // there, with the session's summary and tree, and name the session in the address.
    const owner = detail.header?.conversation?.session;
    if (typeof owner === 'string' && owner !== '' && owner !== session) {
      const ownerDetail = await getJson(path`/v1/sessions/${owner}`).catch((err) => {
        // A session whose main chat is gone (or not the key's): the chat stays its own session.
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      });
      if (turn !== state.route) return;
      if (ownerDetail) {
        if (target === session) targetDetail = detail;
        session = owner;
        detail = ownerDetail;
        state.session = owner;
        history.replaceState(null, '', `#${routeHash(owner, target)}`);
        list.redraw();
      }
    }
    shown = true;
    panel.say('');
    panel.showSummary(detail);
    panel.showTree(detail, session, target);
    state.treeReadAt = Date.now();
    ui.title.textContent =
      target === session ? `Conversation ${target}` : `Conversation ${target} (of ${session})`;
    const view = new ConversationView({
      chatId: target,
      scroller: ui.turns,
      list: ui.turnsList,
      top: ui.turnsTop,
      live: ui.live,
      onEvents: treeAfterEvents,
      // The session's own chat gone: its tree is not read again either.
      onGone: () => {
        if (target === session && state.conversation === view) state.goneRoute = turn;
      },
      // A key refused for the tail asks for another; the session loads again once one is given.
      onRefused: () => {
        if (state.conversation !== view) return;
        view.close();
        state.conversation = undefined;
        state.session = undefined;
        state.chat = undefined;
        keyRefused();
      },
    });
    state.conversation = view;
    await view.open(target === session ? detail : targetDetail);
  } catch (err) {
    if (turn !== state.route) return;
    if (err instanceof DOMException && err.name === 'AbortError') return;
    // Nothing of the session shown before stays beside the error, and picking this one again
    // loads it again.
    state.conversation?.close();
    state.conversation = undefined;
    state.session = undefined;
    state.chat = undefined;
    replace(ui.live);
    ui.live.className = 'live';
    if (!shown) {
      panel.clear();
      ui.title.textContent = '';
    }
    // A refused key asks for another; this session loads again once one is given.
    if (err instanceof ApiError && err.status === 401) {
      replace(ui.turnsList);
      keyRefused();
      return;
    }
    // Refused with a wait (429, 503 with `retry-after`): opened again once it is over.
    if (asksWait(err)) {
      replace(ui.turnsList);
      const stale = () => turn !== state.route;
      if (await afterAskedWait('Opening the session', true, sayWait, stale)) await showRoute();
      return;
    }
    replace(ui.turnsList, el('p', 'error', err instanceof Error ? err.message : String(err)));
  }
}

ui.keyForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const key = ui.keyInput.value.trim();
  if (!key) return;
  // A pasted smart quote or zero-width space cannot go in a header: say so rather than send it.
  const bad = badKeyChar(key);
  if (bad) {
    ui.keyError.textContent = `That is not a key: keys are printable ASCII, and this one has ${bad}${bad === 'U+0020' ? ' (a space)' : ''}. Paste it again without it.`;
    return;
  }
  storeKey(key);
  ui.keyInput.value = '';
  showWho();
  void list
    .first()
    .then(async (ok) => {
      if (ok) await showRoute();
    })
    .catch(showError);
});

// While the page is open (and in view), sessions and conversations made since show up: the open
// session's tree and the list's first page are read again now and then. Each read counts against
// the key's requests per minute, so only a few a minute.
setInterval(() => void refreshTree(), TREE_REFRESH_MS);
setInterval(() => {
  if (!list.onFirstPage() || ui.main.hidden || document.hidden) return;
  void list.refresh(true).catch(() => {
    // The next refresh (or a pick) tries again; a refused key asked for another already.
  });
}, LIST_REFRESH_MS);

window.addEventListener('hashchange', () => void showRoute().catch(showError));

showWho();
// The list and the session the address names load side by side; without a key both are refused
// and the list asks for one (its submit loads both again).
void list.first().catch(showError);
void showRoute().catch(showError);
