// @ts-check
// The terminal pane: xterm.js (from the vendor bundle) over the session's
// PTY WebSocket, GET /v1/sessions/{id}/terminal?cols=&rows=, which runs
// `bash -l` in the session's sandbox.
//
// Protocol: the page sends what is typed as binary frames and its size as
// text frames {"type":"resize","cols":N,"rows":N}; the server sends the
// output as binary frames and, when the shell ends, one text frame
// {"type":"exit","exit_code":N} before it closes. The pane follows the
// page: it fits its terminal to its size (and sends the new size) whenever
// it is resized, and closes the terminal when the session changes.
//
// terminalUrl, resizeFrame and parseControl are pure (unit-tested).

import { FitAddon, Terminal } from '../vendor/vendor.js';
import { sessionPath } from './api.js';

/**
 * @import { Msg } from './dom.js'
 * @import { Store } from './store.js'
 */

/**
 * @typedef {object} TerminalPane
 * @property {() => void} toggle shows the pane (opening a terminal if none is running) or hides it
 * @property {() => void} restart closes the terminal and opens a new one
 * @property {() => void} sessionChanged closes the terminal (a new session, or none); hides the pane without a session
 */

// terminalUrl is the WebSocket URL of a new terminal of session id.
/**
 * @param {{protocol: string, host: string}} loc the page's location
 * @param {string} id
 * @param {string} token
 * @param {number} cols
 * @param {number} rows
 * @returns {string}
 */
export function terminalUrl(loc, id, token, cols, rows) {
  const proto = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  const size = '?cols=' + clampSize(cols, 80) + '&rows=' + clampSize(rows, 24);
  return proto + '//' + loc.host + sessionPath(id, '/terminal') + size + (token ? '&token=' + encodeURIComponent(token) : '');
}

/**
 * @param {number} n
 * @param {number} dflt
 */
function clampSize(n, dflt) {
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1000) : dflt;
}

// resizeFrame is the text frame that tells the server the terminal's size.
/**
 * @param {number} cols
 * @param {number} rows
 * @returns {string}
 */
export function resizeFrame(cols, rows) {
  return JSON.stringify({ type: 'resize', cols: clampSize(cols, 80), rows: clampSize(rows, 24) });
}

// parseControl reads a text frame from the server: the exit frame, or null
// for anything else (ignored).
/**
 * @param {string} text
 * @returns {{type: 'exit', exit_code: number | null} | null}
 */
export function parseControl(text) {
  /** @type {unknown} */
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = /** @type {{[k: string]: unknown}} */ (v);
  if (o.type !== 'exit') return null;
  return { type: 'exit', exit_code: typeof o.exit_code === 'number' && Number.isInteger(o.exit_code) ? o.exit_code : null };
}

// createTerminal binds the pane's elements: the panel (shown or hidden),
// the element the terminal draws into, its status line, and the toolbar
// button that toggles it.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Msg} deps.msg
 * @param {{panel: HTMLElement, screen: HTMLElement, status: HTMLElement, toggle: HTMLButtonElement}} deps.els
 * @returns {TerminalPane}
 */
export function createTerminal({ store, msg, els }) {
  /** @type {Terminal | null} */
  let term = null;
  /** @type {FitAddon | null} */
  let fit = null;
  /** @type {WebSocket | null} */
  let ws = null;
  let gen = 0; // bumped by every open and close; stale sockets compare it
  /** @type {string | null} */
  let sessionId = null; // the session the terminal belongs to
  const encoder = new TextEncoder();

  /** @param {string} text @param {string} state */
  function status(text, state) {
    els.status.textContent = text;
    els.status.dataset.state = state;
    els.panel.dataset.state = state;
  }

  function ensureTerm() {
    if (term) return term;
    const t = new Terminal({ cursorBlink: true, scrollback: 5000, fontSize: 13, fontFamily: getComputedStyle(els.screen).fontFamily || 'monospace' });
    const f = new FitAddon();
    t.loadAddon(f);
    t.open(els.screen);
    t.onData((data) => sendInput(data));
    t.onBinary((data) => {
      const bytes = new Uint8Array(data.length);
      for (let i = 0; i < data.length; i++) bytes[i] = data.charCodeAt(i) & 0xff;
      sendBytes(bytes);
    });
    t.onResize(({ cols, rows }) => {
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(resizeFrame(cols, rows));
    });
    term = t;
    fit = f;
    return t;
  }

  /** @param {string} data */
  function sendInput(data) {
    sendBytes(encoder.encode(data));
  }

  /** @param {Uint8Array<ArrayBuffer>} bytes */
  function sendBytes(bytes) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(bytes);
  }

  function refit() {
    if (!fit || els.panel.hidden) return;
    try {
      fit.fit();
    } catch {
      // not laid out yet
    }
  }

  function open() {
    if (!store.session) {
      msg('The terminal needs a session: create or reopen one', 'error');
      return;
    }
    closeSocket();
    const t = ensureTerm();
    t.reset();
    refit();
    const myGen = ++gen;
    sessionId = store.session.id;
    /** @type {WebSocket} */
    let sock;
    try {
      sock = new WebSocket(terminalUrl(location, store.session.id, store.token, t.cols, t.rows));
    } catch (e) {
      status('could not connect: ' + (e instanceof Error ? e.message : String(e)), 'closed');
      return;
    }
    sock.binaryType = 'arraybuffer';
    ws = sock;
    status('connecting\u2026', 'connecting');
    let exited = false;
    sock.addEventListener('open', () => {
      if (myGen !== gen) return;
      status('running', 'open');
      // The size may have changed while connecting.
      sock.send(resizeFrame(t.cols, t.rows));
      t.focus();
    });
    sock.addEventListener('message', (ev) => {
      if (myGen !== gen) return;
      if (ev.data instanceof ArrayBuffer) {
        t.write(new Uint8Array(ev.data));
        return;
      }
      const c = typeof ev.data === 'string' ? parseControl(ev.data) : null;
      if (c && c.type === 'exit') {
        exited = true;
        t.write('\r\n[exited' + (c.exit_code !== null ? ' with code ' + c.exit_code : '') + ']\r\n');
        status('exited' + (c.exit_code !== null ? ' (' + c.exit_code + ')' : ''), 'exited');
      }
    });
    sock.addEventListener('close', (ev) => {
      if (myGen !== gen) return;
      ws = null;
      if (!exited) {
        t.write('\r\n[disconnected]\r\n');
        status('closed' + (ev.code && ev.code !== 1000 && ev.code !== 1005 ? ' (' + ev.code + (ev.reason ? ': ' + ev.reason : '') + ')' : ''), 'closed');
      }
    });
  }

  function closeSocket() {
    gen++;
    if (ws) {
      const s = ws;
      ws = null;
      try {
        s.close(1000);
      } catch {
        // already closed
      }
    }
  }

  function show() {
    els.panel.hidden = false;
    els.toggle.setAttribute('aria-pressed', 'true');
    if (!ws) open();
    else {
      refit();
      if (term) term.focus();
    }
  }

  function hide() {
    els.panel.hidden = true;
    els.toggle.setAttribute('aria-pressed', 'false');
  }

  // The pane's size follows the window and its resize handle.
  new ResizeObserver(() => refit()).observe(els.screen);

  return {
    toggle() {
      if (els.panel.hidden) show();
      else hide();
    },
    restart() {
      els.panel.hidden = false;
      els.toggle.setAttribute('aria-pressed', 'true');
      open();
    },
    sessionChanged() {
      const id = store.session ? store.session.id : null;
      els.toggle.disabled = !id;
      if (id === sessionId) return;
      sessionId = id;
      closeSocket();
      if (term) term.reset();
      status(id ? 'not started' : 'no session', 'closed');
      if (!id) hide();
      else if (!els.panel.hidden) open();
    }
  };
}
