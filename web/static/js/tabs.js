// @ts-check
// Several notebooks at once: tabs, each a notebook of its own (cached in
// local storage under its own key) with a session of its own, and the
// launcher that opens new ones. One tab is live at a time: switching saves
// the notebook and its session's id, and brings the other's back (its
// session reopened, or a new one). A tab left while its cells run keeps
// them aside (cells.detach) with where it left its session's stream; back
// in it, they come back and the events of their runs that came meanwhile
// are replayed (ws.js resumeAt), so a long run goes on in the background.
// The sessions panel opens a session in a tab too (openSession): its
// notebook comes from the session's workspace, so a notebook saved from
// one browser opens in another.

import { $, clear, el } from './dom.js';
import { kernelOf, knownKernels, resolve } from './languages.js';
import { WORKSPACE_FILE } from './notebook.js';
import { LS_LAST_SESSION, LS_NOTEBOOK, lsDel, lsGet, lsSet } from './storage.js';

/**
 * @import { Request } from './api.js'
 * @import { Cells, Detached } from './cells.js'
 * @import { Kernels } from './kernels.js'
 * @import { Notebook } from './notebook.js'
 * @import { Sessions } from './session.js'
 * @import { Store } from './store.js'
 * @import { StreamPosition } from './ws.js'
 */

/**
 * A tab left while its cells ran: the cells, and where it left its
 * session's stream.
 * @typedef {{cells: Detached, sessionId: string | null, pos: StreamPosition | null}} Kept
 */

/** @typedef {ReturnType<typeof createTabs>} Tabs */

/**
 * @typedef {object} Tab
 * @property {string} id
 * @property {string} title
 * @property {string | null} sessionId its session, once it had one
 * @property {string} language the notebook's language when it was made
 */

const LS_TABS = 'glassroom.tabs';
const STATES_MS = 5000;

// createTabs returns the tab bar and the launcher. deps: store, request,
// cells, kernels, notebook, sessions, listing() (the sessions panel
// lists them now), onLeave() (the live tab gives way), and the launcher's
// other doors: terminal() and upload().
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Cells} deps.cells
 * @param {Kernels} deps.kernels
 * @param {Notebook} deps.notebook
 * @param {() => Sessions} deps.sessions
 * @param {() => boolean} deps.listing whether the sessions panel lists the sessions now
 * @param {() => void} deps.onLeave the live tab is about to give way
 * @param {() => void} deps.terminal
 * @param {() => void} deps.upload
 */
export function createTabs({ store, request, cells, kernels, notebook, sessions, listing, onLeave, terminal, upload }) {
  /** @type {Tab[]} */
  let tabs = [];
  let active = '';
  let seq = 0;
  /** @type {Map<string, string>} session id -> state, from the list */
  let states = new Map();
  /** @type {Map<string, Kept>} tab id -> its running cells, while another tab is live */
  const kept = new Map();
  /** @type {{tab: string, sessionId: string, pos: StreamPosition} | null} a resume under way: the live tab's session is opening */
  let opening = null;

  // cacheKey is where a tab's notebook is kept: the first tab's is the
  // page's old single notebook, so it survives the upgrade.
  /** @param {string} id */
  const cacheKey = (id) => (id === 't1' ? LS_NOTEBOOK : LS_NOTEBOOK + '.' + id);

  function persist() {
    lsSet(LS_TABS, JSON.stringify({ active, seq, tabs }));
  }

  // init reads the tabs (a first visit has one, over the page's notebook)
  // and makes the active one the notebook's place; the caller restores it.
  function init() {
    try {
      const saved = JSON.parse(lsGet(LS_TABS) || 'null');
      if (saved && Array.isArray(saved.tabs) && saved.tabs.length) {
        tabs = saved.tabs
          .filter((/** @type {any} */ t) => t && typeof t.id === 'string' && /^t[0-9]+$/.test(t.id))
          .map((/** @type {any} */ t) => ({
            id: t.id,
            title: String(t.title || 'Notebook').slice(0, 40),
            sessionId: typeof t.sessionId === 'string' ? t.sessionId : null,
            language: typeof t.language === 'string' ? t.language : store.language
          }));
        seq = Number(saved.seq) || tabs.length;
        active = tabs.some((t) => t.id === saved.active) ? saved.active : tabs[0].id;
      }
    } catch (_) {
      tabs = [];
    }
    if (!tabs.length) {
      seq = 1;
      tabs = [{ id: 't1', title: 'Notebook 1', sessionId: lsGet(LS_LAST_SESSION), language: store.language }];
      active = 't1';
    }
    notebook.useCache(cacheKey(active));
    persist();
    render();
    setInterval(refreshStates, STATES_MS);
  }

  const current = () => /** @type {Tab} */ (tabs.find((t) => t.id === active));

  // activeSession is the session the active tab had (to reopen).
  const activeSession = () => current().sessionId;

  // sessionOpened records the session the active tab now has.
  function sessionOpened() {
    opening = null;
    if (!store.session) return;
    current().sessionId = store.session.id;
    persist();
    render();
  }

  const busy = () => store.cells.some((c) => c.status === 'running' || c.status === 'queued');

  // leave saves the live tab before another takes the page; cells that
  // run (or wait for the kernel) are kept aside, with the stream's
  // position, until the tab is live again.
  // A tab left again before its session reopened keeps the position it
  // came back with.
  function leave() {
    onLeave();
    notebook.saveNow();
    const tab = current();
    if (store.session) tab.sessionId = store.session.id;
    const at = store.session
      ? { sessionId: store.session.id, pos: sessions().position() }
      : opening && opening.tab === tab.id
        ? { sessionId: opening.sessionId, pos: opening.pos }
        : null;
    opening = null;
    if (busy()) kept.set(tab.id, { cells: cells.detach(), sessionId: at ? at.sessionId : null, pos: at ? at.pos : null });
  }

  /** @param {string} id */
  function forget(id) {
    const k = kept.get(id);
    if (k) cells.discard(k.cells);
    kept.delete(id);
    lsDel(cacheKey(id));
  }

  /** @param {string} id */
  function switchTo(id) {
    if (id === active || !tabs.some((t) => t.id === id)) return;
    leave();
    activate(id);
  }

  // activate makes tab id the live one (the previous one was left).
  /** @param {string} id */
  function activate(id) {
    active = id;
    const tab = current();
    const k = kept.get(id);
    kept.delete(id);
    notebook.useCache(cacheKey(id));
    if (!notebook.restore()) {
      cells.replaceAll([]);
      cells.insert(0);
      kernels.choose(tab.language);
    }
    persist();
    render();
    refreshStates();
    // The page's session closes now, before the kept cells come back;
    // their session opens later, resumed where they left it (or, when it
    // cannot be, their runs are let go as it opens: sessions.open).
    if (k && k.pos && k.sessionId && k.sessionId === tab.sessionId) {
      opening = { tab: id, sessionId: k.sessionId, pos: k.pos };
      sessions().switchTo(k.sessionId, k.pos);
    } else {
      sessions().switchTo(tab.sessionId);
    }
    if (k) cells.attach(k.cells);
    if (store.cells[0]) cells.edit(store.cells[0]);
  }

  // open makes a new tab: a blank notebook in kernel name, with a session
  // of its own (started now).
  /** @param {string} name */
  function open(name) {
    addTab(kernelOf(name, store.kernels).display_name + ' #' + (seq + 1), null, name);
    sessions().switchTo(null);
    if (store.cells[0]) cells.edit(store.cells[0]);
  }

  // addTab leaves the live tab for a new one with a blank notebook in
  // kernel name (for session sessionId, or none yet), and returns its id;
  // the caller opens its session.
  /**
   * @param {string} title
   * @param {string | null} sessionId
   * @param {string} name
   */
  function addTab(title, sessionId, name) {
    leave();
    closeLauncher();
    seq++;
    const id = 't' + seq;
    tabs.push({ id, title, sessionId, language: name });
    active = id;
    notebook.useCache(cacheKey(id));
    lsDel(cacheKey(id));
    cells.replaceAll([]);
    kernels.choose(name);
    cells.insert(0);
    persist();
    render();
    refreshStates();
    return id;
  }

  // close drops a tab from the page; its session runs on (the sessions
  // panel lists it) until its idle timeout.
  /** @param {string} id */
  function closeTab(id) {
    if (tabs.length < 2) return;
    if (id === active) {
      const other = tabs.find((t) => t.id !== id);
      if (!other) return;
      leave();
      tabs = tabs.filter((t) => t.id !== id);
      forget(id);
      activate(other.id);
      return;
    }
    tabs = tabs.filter((t) => t.id !== id);
    forget(id);
    persist();
    render();
  }

  // openSession shows session id (of the key's list, in language) in a
  // tab: the tab that has it, else a new one whose notebook is the one
  // saved in the session's workspace (blank when there is none).
  /**
   * @param {string} id
   * @param {string} language
   */
  function openSession(id, language) {
    const have = tabs.find((t) => t.sessionId === id);
    if (have) {
      switchTo(have.id);
      return;
    }
    const name = resolve(language, store.kernels || knownKernels()) || store.language;
    const tid = addTab(kernelOf(name, store.kernels).display_name + ' ' + id.slice(0, 6), id, name);
    sessions()
      .switchTo(id)
      .then(() => {
        // Until the file comes: the tab is still live, on that session,
        // and its notebook untouched.
        const still = () =>
          active === tid &&
          !!store.session &&
          store.session.id === id &&
          store.cells.length === 1 &&
          store.cells[0].editor.value() === '' &&
          !store.cells[0].outputs.length;
        return still() ? notebook.openFromWorkspace(WORKSPACE_FILE, true, still) : undefined;
      });
    if (store.cells[0]) cells.edit(store.cells[0]);
  }

  // refreshStates learns the other tabs' kernel states from the list; the
  // sessions panel, while it shows, lists them anyway (learnStates).
  function refreshStates() {
    if (!store.token || tabs.length < 2 || listing()) return;
    request('GET', '/v1/sessions?limit=100')
      .then((page) => learnStates(page && Array.isArray(page.sessions) ? page.sessions : []))
      .catch(() => {});
  }

  // learnStates takes the tabs' kernel states from a listing of the
  // key's sessions (hostile input: anything).
  /** @param {any[]} list */
  function learnStates(list) {
    /** @type {Map<string, string>} */
    const m = new Map();
    for (const s of list) {
      if (s && typeof s.id === 'string') m.set(s.id, s.paused ? 'paused' : String(s.state || 'idle'));
    }
    states = m;
    render();
  }

  let shape = ''; // the tabs the bar was built for: rebuilt only when they change

  /** @param {Tab} t */
  function stateOf(t) {
    if (t.id === active) return $('kernel-status').dataset.state || '';
    if (!t.sessionId) return 'no session';
    return states.get(t.sessionId) || (states.size ? 'ended' : '');
  }

  // render draws the tab bar. The buttons stay while the tabs do (only
  // their states change), so that a click is never lost to a redraw.
  function render() {
    const bar = $('tab-bar');
    const now = JSON.stringify([active, tabs.map((t) => [t.id, t.title])]);
    if (now === shape) {
      for (const t of tabs) {
        const dot = bar.querySelector('.tab[data-tab="' + t.id + '"] .tab-state');
        if (!dot) continue;
        const state = stateOf(t);
        if (dot.textContent !== state) {
          dot.textContent = state;
          dot.className = 'tab-state badge state-' + state.replace(/[^a-z]+/g, '-');
        }
      }
      return;
    }
    shape = now;
    clear(bar);
    for (const t of tabs) {
      const on = t.id === active;
      const tab = el('div', 'tab' + (on ? ' active' : ''));
      tab.dataset.tab = t.id;
      tab.setAttribute('role', 'tab');
      tab.setAttribute('aria-selected', String(on));
      const state = stateOf(t);
      const b = el('button', 'tab-title', t.title);
      b.type = 'button';
      b.title = t.title + (t.sessionId ? ' (session ' + t.sessionId + ')' : '');
      b.addEventListener('click', () => switchTo(t.id));
      tab.appendChild(b);
      const dot = el('span', 'tab-state badge state-' + state.replace(/[^a-z]+/g, '-'), state);
      tab.appendChild(dot);
      if (tabs.length > 1) {
        const x = el('button', 'tab-close', '\u2715');
        x.type = 'button';
        x.title = 'Close this tab (its session runs on)';
        x.setAttribute('aria-label', 'Close ' + t.title);
        x.addEventListener('click', () => closeTab(t.id));
        tab.appendChild(x);
      }
      bar.appendChild(tab);
    }
    const plus = el('button', 'tab-new', '+');
    plus.type = 'button';
    plus.id = 'tab-new';
    plus.title = 'New: a notebook, a terminal, an upload';
    plus.setAttribute('aria-label', 'Open the launcher');
    plus.addEventListener('click', () => openLauncher());
    bar.appendChild(plus);
  }

  // ---- the launcher

  function openLauncher() {
    const grid = $('launcher-kernels');
    clear(grid);
    const ks = store.kernels || [{ name: 'python3', display_name: 'Python 3', language: 'python', aliases: [] }];
    for (const k of ks) {
      const b = el('button', 'launch-item launch-kernel');
      b.type = 'button';
      b.dataset.kernel = k.name;
      b.title = 'A new ' + k.display_name + ' notebook, with a session of its own';
      if (store.token) {
        const img = el('img', 'launch-logo');
        img.alt = '';
        img.src = '/kernelspecs/' + encodeURIComponent(k.name) + '/logo-64x64.png?token=' + encodeURIComponent(store.token);
        img.addEventListener('error', () => img.remove());
        b.appendChild(img);
      }
      b.appendChild(el('span', 'launch-name', k.display_name));
      b.addEventListener('click', () => open(k.name));
      grid.appendChild(b);
    }
    $('launcher').hidden = false;
    const first = grid.querySelector('button');
    if (first) /** @type {HTMLButtonElement} */ (first).focus();
  }

  function closeLauncher() {
    $('launcher').hidden = true;
  }

  function bind() {
    $('launcher-close').addEventListener('click', closeLauncher);
    $('launcher').addEventListener('keydown', (/** @type {KeyboardEvent} */ e) => {
      if (e.key === 'Escape') closeLauncher();
    });
    $('launch-terminal').addEventListener('click', () => {
      closeLauncher();
      terminal();
    });
    $('launch-upload').addEventListener('click', () => {
      closeLauncher();
      upload();
    });
  }

  return { init, bind, render, activeSession, sessionOpened, openLauncher, openSession, learnStates };
}
