// @ts-check
// The API key and the session: create, reopen, end, the kernel's state,
// the idle countdown, interrupt and restart.

import { $ } from './dom.js';
import { ApiError, sessionPath } from './api.js';
import { LS_LAST_SESSION, LS_TOKEN, lsDel, lsGet, lsSet } from './storage.js';
import { fmtClock } from './text.js';

const SESSION_POLL_MS = 30000;

/**
 * @import { Request } from './api.js'
 * @import { Msg } from './dom.js'
 * @import { Session, Store } from './store.js'
 * @import { Connection } from './ws.js'
 */

/** @typedef {ReturnType<typeof createSessions>} Sessions */

// createSessions owns store.token and store.session. deps:
//   store, request (api.js), conn (ws.js), msg (status messages)
//   onOpened()         a session was opened (after store.session is set)
//   onClosed()         the session was forgotten (store.session is null)
//   onKernelDead(note) the kernel died; runs in flight will get no "done"
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Connection} deps.conn
 * @param {Msg} deps.msg
 * @param {() => void} deps.onOpened
 * @param {() => void} deps.onClosed
 * @param {(note: string) => void} deps.onKernelDead
 */
export function createSessions({ store, request, conn, msg, onOpened, onClosed, onKernelDead }) {
  let kernelState = 'none';
  let kernelEvents = 0; // bumped by every kernel event, to order REST answers against them
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

  function renderTokenState() {
    const s = $('token-state');
    s.textContent = store.token ? 'saved' : 'not set';
    s.className = 'hint ' + (store.token ? 'ok' : 'warn');
  }

  function saveToken() {
    closeOffer(); // a key the user typed answers a link's too
    const v = $('token-input').value.trim();
    store.token = v;
    if (v) {
      lsSet(LS_TOKEN, v);
      msg('API key saved');
    } else {
      lsDel(LS_TOKEN);
      msg('API key cleared');
    }
    renderTokenState();
    if (store.session) {
      // Reconnect with the new key right away.
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

  function create() {
    if (!requireToken()) return Promise.resolve();
    const btn = $('new-session');
    btn.disabled = true;
    return request('POST', '/v1/sessions', { json: {} })
      .then((s) => {
        if (!s || !s.id) throw new ApiError(0, 'bad_response', 'server returned no session id');
        open(s);
        msg('Session ' + s.id + ' created');
      })
      .catch((e) => msg('Could not create session: ' + e.message, 'error'))
      .then(() => {
        btn.disabled = false;
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

  /** @param {Session} s */
  function open(s) {
    close();
    store.session = s;
    kernelState = s.state || 'starting';
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
    pollTimer = 0;
    store.session = null;
    kernelState = 'none';
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
        if (useState && s.state && seen === kernelEvents) kernelState = s.state;
        render();
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
    for (const id of /** @type {const} */ (['end-session', 'interrupt-btn', 'restart-btn', 'files-refresh', 'file-input'])) $(id).disabled = !s;
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
    let s;
    if (!store.session) s = 'no session';
    else if (!conn.isOpen()) s = 'disconnected';
    else s = kernelState || 'idle';
    b.textContent = s;
    b.dataset.state = s;
    b.className = 'badge state-' + s.replace(/[^a-z]+/g, '-');
  }

  // ---- kernel

  // setKernelState applies a kernel state event (or the snapshot).
  /**
   * @param {unknown} s the state
   * @param {unknown} reason why (dead, restarting)
   */
  function setKernelState(s, reason) {
    if (!s) return;
    const prev = kernelState;
    kernelEvents++;
    kernelState = String(s);
    if (store.session) store.session.state = kernelState;
    renderKernelStatus();
    if (s === 'dead' && prev !== 'dead') {
      const note = 'Kernel died' + (reason ? ': ' + reason : '');
      msg(note, 'error');
      onKernelDead(note);
    } else if (s === 'restarting' && reason) {
      msg('Kernel restarting: ' + reason);
    }
  }

  function interrupt() {
    if (!store.session) return;
    request('POST', path('/interrupt'))
      .then(() => msg('Interrupt sent'))
      .catch((e) => msg('Interrupt failed: ' + e.message, 'error'));
  }

  function restart() {
    if (!store.session) return;
    const btn = $('restart-btn');
    btn.disabled = true;
    request('POST', path('/restart'))
      .then(() => msg('Kernel restarted'))
      .catch((e) => msg('Restart failed: ' + e.message, 'error'))
      .then(() => {
        btn.disabled = !store.session;
      });
  }

  return {
    initToken,
    saveToken,
    answerOffer,
    create,
    reopen,
    end,
    refresh,
    refreshSoon,
    render,
    renderKernelStatus,
    renderCountdown,
    setKernelState,
    interrupt,
    restart
  };
}
