// @ts-check
// The API key and the session: create, reopen, end, the kernels' states,
// the idle countdown, interrupt and restart.
//
// A session runs one kernel per context: its first (id 'default', in the
// language it was created with) and one per other language the notebook
// ran in (the gateway starts a language's default context on the first
// execute that names the language). The kernel badge and Restart are about
// the context of the notebook's language (store.language).
/** @import { ContextEvent } from '../../types/wire' */

import { $ } from './dom.js';
import { ApiError, sessionPath } from './api.js';
import { DEFAULT_KERNEL, kernelOf } from './languages.js';
import { LS_LAST_SESSION, LS_TOKEN, lsDel, lsGet, lsSet } from './storage.js';
import { fmtClock } from './text.js';

const SESSION_POLL_MS = 30000;
const LIST_LIMIT = 100; // GET /v1/sessions's largest page

/** The id of a session's first context. */
const FIRST = 'default';

/**
 * @import { Request } from './api.js'
 * @import { Cell } from './cells.js'
 * @import { Msg } from './dom.js'
 * @import { Session, Store } from './store.js'
 * @import { Connection, StreamPosition } from './ws.js'
 */

/** @typedef {ReturnType<typeof createSessions>} Sessions */

// createSessions owns store.token and store.session. deps:
//   store, request (api.js), conn (ws.js), msg (status messages)
//   onOpened()         a session was opened (after store.session is set)
//   onClosed()         the session was forgotten (store.session is null)
//   onKernelDead(note, context)  a context's kernel died or the context
//                      ended; its runs in flight (inContext) will get no
//                      "done"
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Connection} deps.conn
 * @param {Msg} deps.msg
 * @param {() => void} deps.onOpened
 * @param {() => void} deps.onClosed
 * @param {(note: string, context: string) => void} deps.onKernelDead
 */
export function createSessions({ store, request, conn, msg, onOpened, onClosed, onKernelDead }) {
  let kernelEvents = 0; // bumped by every kernel event, to order REST answers against them
  // The session's contexts, as far as the page knows them: their kernels'
  // states and languages (context id -> value), and each language's
  // default context (kernel name -> context id), where the notebook's
  // executes of that language run.
  /** @type {Map<string, string>} */
  let states = new Map();
  /** @type {Map<string, string>} */
  let languages = new Map();
  /** @type {Map<string, string>} */
  let defaults = new Map();
  let contextsTimer = 0;
  let pollTimer = 0;
  let refreshTimer = 0;

  /**
   * path is the API path of the open session plus suffix (only called with
   * a session).
   * @param {string} suffix
   */
  const path = (suffix) => sessionPath(/** @type {Session} */ (store.session).id, suffix);

  // ---- API key

  let offered = ''; // a key a link carried, until the user takes or refuses it

  // initToken reads the key: the saved one, or one a link carries
  // (?token=, taken out of the address bar at once). A link's key is saved
  // silently only when no key, or the same key, is saved: a key is a
  // tenant, and a link (anyone's) must not move the user into another
  // tenant unasked. Otherwise the saved key stays in use, and the page asks
  // (offerToken).
  function initToken() {
    let url;
    try {
      url = new URL(location.href);
    } catch (_) {
      url = null;
    }
    const fromUrl = url ? url.searchParams.get('token') : null;
    if (url && url.searchParams.has('token')) {
      url.searchParams.delete('token');
      const q = url.searchParams.toString();
      try {
        history.replaceState(history.state, '', url.pathname + (q ? '?' + q : '') + url.hash);
      } catch (_) {
        /* ignore */
      }
    }
    const saved = lsGet(LS_TOKEN) || '';
    if (fromUrl && saved && fromUrl !== saved) {
      store.token = saved;
      offerToken(fromUrl);
    } else {
      if (fromUrl) lsSet(LS_TOKEN, fromUrl);
      store.token = fromUrl || saved;
    }
    $('token-input').value = store.token;
    renderTokenState();
  }

  // offerToken asks whether to replace the saved key with a link's. Until
  // the user answers "use", the saved key stays; leaving the page forgets
  // the link's key.
  /** @param {string} key */
  function offerToken(key) {
    offered = key;
    $('token-offer').hidden = false;
    $('token-offer-keep').focus();
  }

  // answerOffer ends the question: use tells whether the link's key
  // replaces the saved one.
  /** @param {boolean} use */
  function answerOffer(use) {
    if (!offered) return;
    const key = offered;
    closeOffer();
    if (use) {
      $('token-input').value = key;
      saveToken();
    } else {
      msg('Kept the saved API key');
    }
  }

  function closeOffer() {
    offered = '';
    $('token-offer').hidden = true;
  }

  let editingKey = false; // the key box shows although a key is saved ("Change key")

  // renderTokenState says whether a key is saved; once one is, the key box
  // gives way to a small account menu (change key, forget key).
  function renderTokenState() {
    const s = $('token-state');
    s.textContent = store.token ? 'saved' : 'not set';
    s.className = 'hint ' + (store.token ? 'ok' : 'warn');
    const menu = !!store.token && !editingKey;
    $('token-form').hidden = menu;
    $('account-box').hidden = !menu;
    $('account-menu').hidden = true;
    $('account-btn').setAttribute('aria-expanded', 'false');
  }

  // The account menu.
  function toggleAccountMenu() {
    const m = $('account-menu');
    m.hidden = !m.hidden;
    $('account-btn').setAttribute('aria-expanded', String(!m.hidden));
  }

  function changeKey() {
    editingKey = true;
    renderTokenState();
    $('token-input').focus();
    $('token-input').select();
  }

  function forgetKey() {
    $('token-input').value = '';
    saveToken();
  }

  function saveToken() {
    closeOffer(); // a key the user typed answers a link's too
    editingKey = false;
    const v = $('token-input').value.trim();
    const changed = v !== store.token;
    store.token = v;
    if (v) {
      lsSet(LS_TOKEN, v);
      msg('API key saved');
    } else {
      lsDel(LS_TOKEN);
      msg('API key cleared');
    }
    renderTokenState();
    if (store.session && changed) {
      // Another key is another tenant: the open session is not its own.
      cancelAuto();
      close();
    } else if (store.session) {
      // Reconnect with the key right away.
      conn.disconnect();
      conn.connect();
    }
  }

  function requireToken() {
    if (store.token) return true;
    msg('Enter your API key first', 'error');
    $('token-input').focus();
    return false;
  }

  // ---- sessions

  // ---- ready on open

  // starting is the automatic open in flight (autoOpen), or null; autoGen
  // numbers it, and a session the user creates or reopens meanwhile wins
  // (the automatic one, if it made a session, ends it).
  /** @type {Promise<void> | null} */
  let starting = null;
  let autoGen = 0;

  // autoOpen gets the page a kernel without a click, when a key is in hand
  // and no session is open: the last session of this browser if the
  // gateway still has it, else a new one (from the warm pool when there is
  // one). Cells run meanwhile wait for it (cells.js). It resolves when done,
  // whatever the outcome.
  // opts.last names the session to come back to (default: the browser's
  // last); opts.fresh skips it (a new notebook's own session); opts.resume
  // is where the page left that session's stream (its events after it are
  // replayed, if it is still there).
  /** @param {{last?: string | null, fresh?: boolean, resume?: StreamPosition}} [opts] */
  function autoOpen(opts) {
    if (!store.token || store.session || starting) return starting || Promise.resolve();
    const g = ++autoGen;
    const o = opts || {};
    const last = o.fresh ? null : o.last !== undefined ? o.last : lsGet(LS_LAST_SESSION);
    // The list, not GET on the session: a session that expired (or is
    // another key's) is not an error to report.
    const reuse = last
      ? request('GET', '/v1/sessions?limit=' + LIST_LIMIT).then((page) => {
          const s = page && Array.isArray(page.sessions) ? page.sessions.find((/** @type {any} */ x) => x && x.id === last) : null;
          if (!s) throw new ApiError(0, 'gone', 'the last session is gone');
          return { s, made: false };
        })
      : Promise.reject(new Error('no last session'));
    starting = reuse
      .catch(() =>
        request('POST', '/v1/sessions', { json: { language: store.language } }).then((s) => {
          if (!s || !s.id) throw new ApiError(0, 'bad_response', 'server returned no session id');
          return { s, made: true };
        })
      )
      .then(({ s, made }) => {
        if (g !== autoGen || store.session) {
          if (made) request('DELETE', sessionPath(s.id)).catch(() => {});
          return;
        }
        open(s, made ? undefined : o.resume);
        if (made && o.resume) msg('The notebook\'s session ended while it was in the background: its runs are lost; a new session started (' + s.id + ')', 'error');
        else msg(made ? 'Kernel ready (session ' + s.id + ')' : 'Reopened session ' + s.id);
      })
      .catch((e) => {
        if (g === autoGen) msg('Could not start a kernel: ' + e.message, 'error');
      })
      .then(() => {
        if (g === autoGen) starting = null;
        renderKernelStatus();
      });
    renderKernelStatus();
    return starting;
  }

  // isStarting reports whether a kernel is on its way (autoOpen, or a
  // session being created): a cell run now waits for it.
  const isStarting = () => !!starting || creating > 0;
  let creating = 0;

  // switchTo leaves the open session running and serves another notebook's:
  // its session id (reopened when the gateway still lists it, else a new
  // one), or a new session when id is null. resume is where that notebook
  // left the session's stream. The open session is closed before it
  // returns; the other opens later (the promise).
  /**
   * @param {string | null} id
   * @param {StreamPosition} [resume]
   */
  function switchTo(id, resume) {
    cancelAuto();
    if (store.session) close();
    if (!id) return autoOpen({ fresh: true });
    return autoOpen(resume ? { last: id, resume } : { last: id });
  }

  // cancelAuto makes a pending autoOpen give way to what the user does.
  function cancelAuto() {
    if (!starting) return;
    autoGen++;
    starting = null;
  }

  function create() {
    if (!requireToken()) return Promise.resolve();
    cancelAuto();
    creating++;
    const btn = $('new-session');
    btn.disabled = true;
    // Its first context runs the notebook's language.
    return request('POST', '/v1/sessions', { json: { language: store.language } })
      .then((s) => {
        if (!s || !s.id) throw new ApiError(0, 'bad_response', 'server returned no session id');
        open(s);
        msg('Session ' + s.id + ' created');
      })
      .catch((e) => msg('Could not create session: ' + e.message, 'error'))
      .then(() => {
        creating--;
        btn.disabled = false;
        renderKernelStatus();
      });
  }

  /** @param {string | null | undefined} input */
  function reopen(input) {
    const id = String(input || '').trim();
    if (!id) {
      msg('Enter a session id to reopen', 'error');
      return Promise.resolve();
    }
    if (!requireToken()) return Promise.resolve();
    cancelAuto();
    return request('GET', sessionPath(id))
      .then((s) => {
        open(s && s.id ? s : { id, state: 'idle' });
        msg('Reopened session ' + id);
      })
      .catch((e) => {
        if (e.status === 404) {
          msg('Session ' + id + ' not found (it may have expired)', 'error');
          if (lsGet(LS_LAST_SESSION) === id) {
            lsDel(LS_LAST_SESSION);
            renderReopenLast();
          }
        } else {
          msg('Could not reopen session: ' + e.message, 'error');
        }
      });
  }

  // open makes s the page's session (closing the one open); resume, where
  // the page left s's stream before: the runs of the page's cells go on
  // there. Without it, runs the cells still wait for (of another session,
  // or of a stream that cannot be resumed) are let go (onClosed).
  /**
   * @param {Session} s
   * @param {StreamPosition} [resume]
   */
  function open(s, resume) {
    const had = !!store.session;
    if (had) close();
    else conn.reset();
    if (resume) conn.resumeAt(resume);
    else if (!had) onClosed();
    store.session = s;
    resetContexts(s);
    lsSet(LS_LAST_SESSION, s.id);
    $('reopen-id').value = '';
    render();
    conn.connect();
    onOpened();
    pollTimer = setInterval(() => refresh(false), SESSION_POLL_MS);
  }

  // close forgets the current session locally (the server side is untouched).
  function close() {
    conn.reset();
    clearInterval(pollTimer);
    clearTimeout(refreshTimer);
    clearTimeout(contextsTimer);
    pollTimer = 0;
    store.session = null;
    resetContexts(null);
    onClosed();
    render();
  }

  function end() {
    if (!store.session) return Promise.resolve();
    const id = store.session.id;
    return request('DELETE', path(''))
      .catch((e) => {
        if (e.status !== 404) throw e;
      })
      .then(() => {
        if (lsGet(LS_LAST_SESSION) === id) lsDel(LS_LAST_SESSION);
        close();
        msg('Session ' + id + ' ended');
      })
      .catch((e) => msg('Could not end session: ' + e.message, 'error'));
  }

  function gone() {
    if (!store.session) return;
    const id = store.session.id;
    if (lsGet(LS_LAST_SESSION) === id) lsDel(LS_LAST_SESSION);
    close();
    msg('Session ' + id + ' no longer exists (expired or deleted). Start a new one.', 'error');
  }

  // refresh fetches the session object again (expires_at moves with
  // activity); with useState it also takes the kernel state from it. It
  // resolves to false when the session is gone.
  /**
   * @param {boolean} useState
   * @returns {Promise<boolean>}
   */
  function refresh(useState) {
    if (!store.session) return Promise.resolve(false);
    const id = store.session.id;
    const seen = kernelEvents;
    return request('GET', path(''))
      .then((s) => {
        if (!store.session || store.session.id !== id || !s) return true;
        store.session = Object.assign({}, store.session, s);
        // A kernel event that arrived meanwhile is newer than this answer.
        if (useState && s.state && seen === kernelEvents) states.set(FIRST, String(s.state));
        if (typeof s.language === 'string' && s.language) firstLanguage(s.language);
        render();
        loadContexts();
        return true;
      })
      .catch((e) => {
        if (e.status === 404 && store.session && store.session.id === id) {
          gone();
          return false;
        }
        if (e.status === 401) msg(e.message, 'error');
        return true;
      });
  }

  // refreshSoon refreshes once activity settles (an execution just ended).
  function refreshSoon() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => refresh(false), 1000);
  }

  // ---- rendering

  function render() {
    const s = store.session;
    $('session-id').textContent = s ? s.id : 'none';
    $('session-runtime').textContent = s && s.runtime ? s.runtime : '';
    for (const id of /** @type {const} */ (['end-session', 'interrupt-btn', 'restart-btn', 'fork-btn', 'files-refresh', 'file-input'])) $(id).disabled = !s;
    document.body.classList.toggle('has-session', !!s);
    renderKernelStatus();
    renderCountdown();
    renderReopenLast();
  }

  function renderReopenLast() {
    const b = $('reopen-last');
    const last = lsGet(LS_LAST_SESSION);
    if (last && (!store.session || store.session.id !== last)) {
      b.textContent = 'Reopen last (' + (last.length > 14 ? last.slice(0, 12) + '\u2026' : last) + ')';
      b.title = 'Reopen session ' + last;
      b.dataset.sessionId = last;
      b.hidden = false;
    } else {
      b.hidden = true;
    }
  }

  function renderCountdown() {
    const e = $('session-expiry');
    const s = store.session;
    if (!s || !s.expires_at) {
      e.textContent = '';
      e.classList.remove('expiring');
      return;
    }
    const t = Date.parse(s.expires_at);
    if (isNaN(t)) {
      e.textContent = '';
      return;
    }
    const ms = t - Date.now();
    if (ms <= 0) {
      e.textContent = 'idle timeout reached';
      e.classList.add('expiring');
      return;
    }
    e.textContent = 'idle timeout in ' + fmtClock(ms);
    e.classList.toggle('expiring', ms < 60000);
  }

  function renderKernelStatus() {
    const b = $('kernel-status');
    const ctx = notebookContext();
    const name = kernelOf(store.language, store.kernels).display_name;
    let s;
    if (!store.session) s = isStarting() ? 'starting' : 'no session';
    else if (!conn.isOpen()) s = 'disconnected';
    else if (!ctx) s = 'not started';
    else s = states.get(ctx) || 'idle';
    b.title = !store.session
      ? ''
      : ctx
        ? name + ' kernel (context ' + ctx + ')'
        : 'The ' + name + ' kernel starts when a cell runs';
    b.textContent = s;
    b.dataset.state = s;
    b.className = 'badge state-' + s.replace(/[^a-z]+/g, '-');
  }

  // ---- contexts

  // resetContexts starts over for session s (or none): the page knows its
  // first context only.
  /** @param {Session | null} s */
  function resetContexts(s) {
    clearTimeout(contextsTimer);
    states = new Map();
    languages = new Map();
    defaults = new Map();
    if (!s) return;
    states.set(FIRST, s.state || 'starting');
    firstLanguage(s.language || DEFAULT_KERNEL);
  }

  /** @param {string} kernel the first context's */
  function firstLanguage(kernel) {
    if (languages.get(FIRST) === kernel) return;
    for (const [k, id] of defaults) if (id === FIRST) defaults.delete(k);
    languages.set(FIRST, kernel);
    defaults.set(kernel, FIRST);
  }

  // loadContexts asks the gateway for the session's contexts (their
  // states, and which is each language's default).
  function loadContexts() {
    if (!store.session) return;
    const id = store.session.id;
    const seen = kernelEvents;
    request('GET', path('/contexts'))
      .then((r) => {
        if (!store.session || store.session.id !== id || !r || !Array.isArray(r.contexts)) return;
        for (const c of r.contexts) {
          if (!c || typeof c.id !== 'string' || typeof c.language !== 'string') continue;
          languages.set(c.id, c.language);
          if (c.default) defaults.set(c.language, c.id);
          // A kernel event that arrived meanwhile is newer than this answer.
          if (typeof c.state === 'string' && (seen === kernelEvents || !states.has(c.id))) states.set(c.id, c.state);
        }
        renderKernelStatus();
      })
      .catch(() => {
        /* the badge keeps what the events said */
      });
  }

  function loadContextsSoon() {
    clearTimeout(contextsTimer);
    contextsTimer = setTimeout(loadContexts, 200);
  }

  // notebookContext is the id of the context the notebook's executes run
  // in (its language's default context), or null before it started.
  /** @returns {string | null} */
  function notebookContext() {
    return defaults.get(store.language) || null;
  }

  // learnContext records that executes of language run in context (an
  // execution's events said so).
  /**
   * @param {string} context
   * @param {string} language
   */
  function learnContext(context, language) {
    if (languages.get(context) === language && defaults.get(language) === context) return;
    languages.set(context, language);
    defaults.set(language, context);
    if (!states.has(context)) loadContextsSoon();
    renderKernelStatus();
  }

  // inContext selects the cells whose run went to context: those whose
  // events named it, and those of its language whose events have not come.
  /**
   * @param {string} context
   * @returns {(cell: Cell) => boolean}
   */
  function inContext(context) {
    const language = languages.get(context);
    return (cell) => cell.runContext === context || (cell.runContext === null && !!language && cell.runLanguage === language);
  }

  // onContextEvent applies a context event: one was created or deleted.
  /** @param {ContextEvent} ev */
  function onContextEvent(ev) {
    const id = typeof ev.context === 'string' ? ev.context : '';
    if (!id || id === FIRST) return;
    if (ev.state === 'created') {
      if (typeof ev.name === 'string' && ev.name) languages.set(id, ev.name);
      states.set(id, 'idle');
      loadContextsSoon(); // is it its language's default?
    } else if (ev.state === 'deleted') {
      const lang = languages.get(id);
      const name = lang ? kernelOf(lang, store.kernels).display_name : 'A';
      onKernelDead(name + ' context ended' + (ev.reason ? ': ' + ev.reason : ''), id);
      states.delete(id);
      languages.delete(id);
      for (const [k, v] of defaults) if (v === id) defaults.delete(k);
    }
    renderKernelStatus();
  }

  // notebookState is the state of the notebook's kernel ('' when it has
  // not started).
  function notebookState() {
    const ctx = notebookContext();
    return ctx ? states.get(ctx) || '' : '';
  }

  // ---- kernel

  // setKernelState applies a kernel state event (or the snapshot) of
  // context ('' or absent: the first).
  /**
   * @param {unknown} s the state
   * @param {unknown} reason why (dead, restarting)
   * @param {unknown} [context]
   */
  function setKernelState(s, reason, context) {
    if (!s) return;
    const id = typeof context === 'string' && context ? context : FIRST;
    const prev = states.get(id);
    kernelEvents++;
    states.set(id, String(s));
    if (id === FIRST && store.session) store.session.state = String(s);
    renderKernelStatus();
    const lang = languages.get(id);
    const name = lang && (id !== FIRST || languages.size > 1) ? kernelOf(lang, store.kernels).display_name + ' kernel' : 'Kernel';
    if (s === 'dead' && prev !== 'dead') {
      const note = name + ' died' + (reason ? ': ' + reason : '');
      msg(note, 'error');
      onKernelDead(note, id);
    } else if (s === 'restarting' && reason) {
      msg(name + ' restarting: ' + reason);
    }
  }

  function interrupt() {
    if (!store.session) return;
    request('POST', path('/interrupt'))
      .then(() => msg('Interrupt sent'))
      .catch((e) => msg('Interrupt failed: ' + e.message, 'error'));
  }

  // restart restarts the kernel of the notebook's language.
  // restart restarts the notebook language's kernel. It resolves to
  // 'restarted', 'not started' (that kernel starts with its first cell:
  // nothing to restart), or 'failed' (said).
  /** @returns {Promise<'restarted' | 'not started' | 'failed'>} */
  function restart() {
    if (!store.session) return Promise.resolve('failed');
    const ctx = notebookContext();
    const name = kernelOf(store.language, store.kernels).display_name;
    if (!ctx) {
      msg('The ' + name + ' kernel has not started: it starts when a cell runs');
      return Promise.resolve('not started');
    }
    const btn = $('restart-btn');
    btn.disabled = true;
    return request('POST', path(ctx === FIRST ? '/restart' : '/contexts/' + encodeURIComponent(ctx) + '/restart'))
      .then(() => {
        msg(name + ' kernel restarted');
        return /** @type {const} */ ('restarted');
      })
      .catch((e) => {
        msg('Restart failed: ' + e.message, 'error');
        return /** @type {const} */ ('failed');
      })
      .finally(() => {
        btn.disabled = !store.session;
      });
  }

  return {
    initToken,
    saveToken,
    toggleAccountMenu,
    changeKey,
    forgetKey,
    answerOffer,
    autoOpen,
    isStarting,
    switchTo,
    // position is where the page read the open session's stream up to.
    position: () => conn.position(),
    create,
    reopen,
    end,
    refresh,
    refreshSoon,
    render,
    renderKernelStatus,
    renderCountdown,
    setKernelState,
    onContextEvent,
    learnContext,
    notebookContext,
    inContext,
    notebookState,
    interrupt,
    restart
  };
}
