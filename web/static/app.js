// glassroom notebook UI.
//
// Plain script (no build step, no dependencies). Everything lives inside this
// closure; the only global it sets is window.glassroomReady.
//
// Safety rules followed throughout: kernel output is turned into DOM with
// createElement/textContent only (never innerHTML), images go through data:
// URLs in <img>, and HTML output is shown only in <iframe sandbox=""> via
// srcdoc, so nothing the kernel prints can run script in this origin.
(function () {
  'use strict';

  // ---------------------------------------------------------------------
  // Constants and state
  // ---------------------------------------------------------------------

  var LS_TOKEN = 'glassroom.token';
  var LS_LAST_SESSION = 'glassroom.lastSession';
  var LS_NOTEBOOK = 'glassroom.notebook';

  var BACKOFF_MIN_MS = 500;
  var BACKOFF_MAX_MS = 5000;
  var SESSION_POLL_MS = 30000;

  var MIME_ORDER = [
    'image/png',
    'image/jpeg',
    'image/svg+xml',
    'text/html',
    'text/markdown',
    'text/plain'
  ];

  var state = {
    token: '',
    session: null, // {id, state, runtime, created_at, expires_at}
    kernelState: 'none',
    kernelEvents: 0, // bumped by every kernel event
    ws: null,
    wsOpen: false,
    wsGen: 0,
    lastSeq: 0, // seq of the last stream event handled
    streamFloor: null, // where this page's stream began; null before the first connection
    backoff: BACKOFF_MIN_MS,
    reconnectTimer: 0,
    pollTimer: 0,
    outbox: [],
    cells: [],
    execs: new Map(), // execute id -> cell
    displays: new Map(), // display_id -> Set of output records
    activeCell: null,
    execCounter: 0,
    filesDir: '',
    filesReq: 0,
    filesTimer: 0,
    refreshSessionTimer: 0,
    saveTimer: 0,
    ticker: 0,
    renderQueued: new Set(),
    renderFrame: 0
  };

  // ---------------------------------------------------------------------
  // Small helpers
  // ---------------------------------------------------------------------

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function lsGet(k) {
    try {
      return window.localStorage.getItem(k);
    } catch (_) {
      return null;
    }
  }

  function lsSet(k, v) {
    try {
      window.localStorage.setItem(k, v);
      return true;
    } catch (_) {
      return false;
    }
  }

  function lsDel(k) {
    try {
      window.localStorage.removeItem(k);
    } catch (_) {
      /* ignore */
    }
  }

  function randomId() {
    if (window.crypto && typeof window.crypto.randomUUID === 'function') {
      return window.crypto.randomUUID();
    }
    var b = new Uint8Array(16);
    window.crypto.getRandomValues(b);
    var s = '';
    for (var i = 0; i < b.length; i++) s += (b[i] + 256).toString(16).slice(1);
    return s.slice(0, 8) + '-' + s.slice(8, 12) + '-' + s.slice(12, 16) + '-' + s.slice(16, 20) + '-' + s.slice(20);
  }

  function fmtClock(ms) {
    var total = Math.max(0, Math.floor(ms / 1000));
    var h = Math.floor(total / 3600);
    var m = Math.floor((total % 3600) / 60);
    var s = total % 60;
    var ss = (s < 10 ? '0' : '') + s;
    if (h > 0) return h + ':' + (m < 10 ? '0' : '') + m + ':' + ss;
    return m + ':' + ss;
  }

  function fmtElapsed(ms) {
    if (ms < 60000) return (ms / 1000).toFixed(1) + 's';
    return fmtClock(ms);
  }

  function fmtSize(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '';
    if (n < 1024) return n + ' B';
    var units = ['KB', 'MB', 'GB', 'TB'];
    var v = n;
    var i = -1;
    do {
      v /= 1024;
      i++;
    } while (v >= 1024 && i < units.length - 1);
    return (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ' + units[i];
  }

  // Joins mime/stream text that may arrive as an array of lines. nbformat
  // style arrays keep their newlines ("a\n", "b"); plain line lists don't.
  function joinText(v) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'string') return v;
    if (Array.isArray(v)) {
      var keepends = true;
      for (var i = 0; i < v.length - 1; i++) {
        if (typeof v[i] !== 'string' || v[i].slice(-1) !== '\n') {
          keepends = false;
          break;
        }
      }
      return v.map(String).join(keepends ? '' : '\n');
    }
    if (typeof v === 'object') {
      try {
        return JSON.stringify(v, null, 2);
      } catch (_) {
        return String(v);
      }
    }
    return String(v);
  }

  function splitLines(s) {
    if (!s) return [];
    return s.match(/[^\n]*\n|[^\n]+$/g) || [];
  }

  function basename(p) {
    var parts = String(p).split('/').filter(Boolean);
    return parts.length ? parts[parts.length - 1] : String(p);
  }

  // Percent-encodes each segment of a relative, '/'-separated path.
  function encPath(p) {
    return String(p)
      .split('/')
      .filter(function (s) {
        return s !== '' && s !== '.';
      })
      .map(encodeURIComponent)
      .join('/');
  }

  // ---------------------------------------------------------------------
  // Status messages
  // ---------------------------------------------------------------------

  var msgTimer = 0;

  function showMessage(text, kind) {
    var m = $('message');
    m.textContent = text;
    m.className = 'message ' + (kind || 'info');
    m.hidden = false;
    clearTimeout(msgTimer);
    msgTimer = setTimeout(function () {
      m.hidden = true;
    }, kind === 'error' ? 9000 : 4000);
  }

  // ---------------------------------------------------------------------
  // REST API
  // ---------------------------------------------------------------------

  function ApiError(status, code, message) {
    var e = new Error(message);
    e.status = status;
    e.code = code;
    return e;
  }

  function api(method, path, opts) {
    opts = opts || {};
    var headers = {};
    if (state.token) headers['Authorization'] = 'Bearer ' + state.token;
    var body;
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.form) {
      body = opts.form;
    }
    return fetch(path, {
      method: method,
      headers: headers,
      body: body,
      cache: 'no-store',
      credentials: 'same-origin',
      redirect: 'error'
    }).then(
      function (resp) {
        if (!resp.ok) {
          var code = 'http_' + resp.status;
          var message = resp.status + ' ' + (resp.statusText || 'error');
          return resp
            .json()
            .catch(function () {
              return null;
            })
            .then(function (j) {
              if (j && j.error) {
                if (j.error.code) code = String(j.error.code);
                if (j.error.message) message = String(j.error.message);
              }
              if (resp.status === 401) message = 'API key rejected: ' + message;
              throw ApiError(resp.status, code, message);
            });
        }
        if (opts.raw) return resp;
        if (resp.status === 204) return null;
        var ct = resp.headers.get('Content-Type') || '';
        if (ct.indexOf('json') >= 0) return resp.json();
        return null;
      },
      function (err) {
        throw ApiError(0, 'network', 'Network error: ' + (err && err.message ? err.message : err));
      }
    );
  }

  function sessPath(suffix) {
    return '/v1/sessions/' + encodeURIComponent(state.session.id) + (suffix || '');
  }

  // ---------------------------------------------------------------------
  // API key
  // ---------------------------------------------------------------------

  function initToken() {
    var url;
    try {
      url = new URL(window.location.href);
    } catch (_) {
      url = null;
    }
    var fromUrl = url ? url.searchParams.get('token') : null;
    if (fromUrl) {
      lsSet(LS_TOKEN, fromUrl);
      url.searchParams.delete('token');
      var clean = url.pathname + (url.searchParams.toString() ? '?' + url.searchParams.toString() : '') + url.hash;
      try {
        window.history.replaceState(window.history.state, '', clean);
      } catch (_) {
        /* ignore */
      }
    }
    state.token = fromUrl || lsGet(LS_TOKEN) || '';
    $('token-input').value = state.token;
    renderTokenState();
  }

  function renderTokenState() {
    var s = $('token-state');
    s.textContent = state.token ? 'saved' : 'not set';
    s.className = 'hint ' + (state.token ? 'ok' : 'warn');
  }

  function saveToken() {
    var v = $('token-input').value.trim();
    state.token = v;
    if (v) {
      lsSet(LS_TOKEN, v);
      showMessage('API key saved');
    } else {
      lsDel(LS_TOKEN);
      showMessage('API key cleared');
    }
    renderTokenState();
    if (state.session) {
      // Reconnect with the new key right away.
      disconnectWs();
      connectWs();
    }
  }

  function requireToken() {
    if (state.token) return true;
    showMessage('Enter your API key first', 'error');
    $('token-input').focus();
    return false;
  }

  // ---------------------------------------------------------------------
  // Sessions
  // ---------------------------------------------------------------------

  function createSession() {
    if (!requireToken()) return Promise.resolve();
    var btn = $('new-session');
    btn.disabled = true;
    return api('POST', '/v1/sessions', { json: {} })
      .then(function (s) {
        if (!s || !s.id) throw ApiError(0, 'bad_response', 'server returned no session id');
        openSession(s);
        showMessage('Session ' + s.id + ' created');
      })
      .catch(function (e) {
        showMessage('Could not create session: ' + e.message, 'error');
      })
      .then(function () {
        btn.disabled = false;
      });
  }

  function reopenSession(id) {
    id = String(id || '').trim();
    if (!id) {
      showMessage('Enter a session id to reopen', 'error');
      return Promise.resolve();
    }
    if (!requireToken()) return Promise.resolve();
    return api('GET', '/v1/sessions/' + encodeURIComponent(id))
      .then(function (s) {
        openSession(s && s.id ? s : { id: id, state: 'idle' });
        showMessage('Reopened session ' + id);
      })
      .catch(function (e) {
        if (e.status === 404) {
          showMessage('Session ' + id + ' not found (it may have expired)', 'error');
          if (lsGet(LS_LAST_SESSION) === id) {
            lsDel(LS_LAST_SESSION);
            renderReopenLast();
          }
        } else {
          showMessage('Could not reopen session: ' + e.message, 'error');
        }
      });
  }

  function openSession(s) {
    closeSession();
    state.session = s;
    state.kernelState = s.state || 'starting';
    state.lastSeq = 0;
    state.streamFloor = null;
    state.backoff = BACKOFF_MIN_MS;
    state.filesDir = '';
    lsSet(LS_LAST_SESSION, s.id);
    $('reopen-id').value = '';
    renderSession();
    connectWs();
    refreshFiles();
    state.pollTimer = setInterval(function () {
      refreshSession();
    }, SESSION_POLL_MS);
  }

  // Forgets the current session locally (the server side is untouched).
  function closeSession() {
    disconnectWs();
    clearInterval(state.pollTimer);
    clearTimeout(state.refreshSessionTimer);
    state.pollTimer = 0;
    state.session = null;
    state.kernelState = 'none';
    state.outbox = [];
    state.cells.forEach(function (c) {
      if (c.execId) finishCellLocally(c, null);
    });
    state.execs.clear();
    renderSession();
    refreshFiles();
  }

  function endSession() {
    if (!state.session) return Promise.resolve();
    var id = state.session.id;
    return api('DELETE', sessPath(''))
      .catch(function (e) {
        if (e.status !== 404) throw e;
      })
      .then(function () {
        if (lsGet(LS_LAST_SESSION) === id) lsDel(LS_LAST_SESSION);
        closeSession();
        showMessage('Session ' + id + ' ended');
      })
      .catch(function (e) {
        showMessage('Could not end session: ' + e.message, 'error');
      });
  }

  function sessionGone() {
    if (!state.session) return;
    var id = state.session.id;
    if (lsGet(LS_LAST_SESSION) === id) lsDel(LS_LAST_SESSION);
    closeSession();
    showMessage('Session ' + id + ' no longer exists (expired or deleted). Start a new one.', 'error');
  }

  // Fetches the session object again (expires_at moves with activity).
  // Resolves to false when the session is gone.
  function refreshSession(useState) {
    if (!state.session) return Promise.resolve(false);
    var id = state.session.id;
    var kernelEvents = state.kernelEvents;
    return api('GET', sessPath(''))
      .then(function (s) {
        if (!state.session || state.session.id !== id || !s) return true;
        state.session = Object.assign({}, state.session, s);
        // A kernel event that arrived meanwhile is newer than this answer.
        if (useState && s.state && kernelEvents === state.kernelEvents) state.kernelState = s.state;
        renderSession();
        return true;
      })
      .catch(function (e) {
        if (e.status === 404 && state.session && state.session.id === id) {
          sessionGone();
          return false;
        }
        if (e.status === 401) showMessage(e.message, 'error');
        return true;
      });
  }

  function scheduleSessionRefresh() {
    clearTimeout(state.refreshSessionTimer);
    state.refreshSessionTimer = setTimeout(function () {
      refreshSession(false);
    }, 1000);
  }

  function renderSession() {
    var s = state.session;
    $('session-id').textContent = s ? s.id : 'none';
    $('session-runtime').textContent = s && s.runtime ? s.runtime : '';
    $('end-session').disabled = !s;
    $('interrupt-btn').disabled = !s;
    $('restart-btn').disabled = !s;
    $('files-refresh').disabled = !s;
    $('file-input').disabled = !s;
    document.body.classList.toggle('has-session', !!s);
    renderKernelStatus();
    renderCountdown();
    renderReopenLast();
  }

  function renderReopenLast() {
    var b = $('reopen-last');
    var last = lsGet(LS_LAST_SESSION);
    if (last && (!state.session || state.session.id !== last)) {
      b.textContent = 'Reopen last (' + (last.length > 14 ? last.slice(0, 12) + '\u2026' : last) + ')';
      b.title = 'Reopen session ' + last;
      b.dataset.sessionId = last;
      b.hidden = false;
    } else {
      b.hidden = true;
    }
  }

  function renderCountdown() {
    var e = $('session-expiry');
    var s = state.session;
    if (!s || !s.expires_at) {
      e.textContent = '';
      e.classList.remove('expiring');
      return;
    }
    var t = Date.parse(s.expires_at);
    if (isNaN(t)) {
      e.textContent = '';
      return;
    }
    var ms = t - Date.now();
    if (ms <= 0) {
      e.textContent = 'idle timeout reached';
      e.classList.add('expiring');
      return;
    }
    e.textContent = 'idle timeout in ' + fmtClock(ms);
    e.classList.toggle('expiring', ms < 60000);
  }

  function renderKernelStatus() {
    var b = $('kernel-status');
    var s;
    if (!state.session) s = 'no session';
    else if (!state.wsOpen) s = 'disconnected';
    else s = state.kernelState || 'idle';
    b.textContent = s;
    b.dataset.state = s;
    b.className = 'badge state-' + s.replace(/[^a-z]+/g, '-');
  }

  function setKernelState(s, reason) {
    if (!s) return;
    var prev = state.kernelState;
    state.kernelEvents++;
    state.kernelState = String(s);
    if (state.session) state.session.state = state.kernelState;
    renderKernelStatus();
    if (s === 'dead' && prev !== 'dead') {
      showMessage('Kernel died' + (reason ? ': ' + reason : ''), 'error');
      state.cells.forEach(function (c) {
        if (c.execId) finishCellLocally(c, 'Kernel died' + (reason ? ': ' + reason : ''));
      });
    } else if (s === 'restarting' && reason) {
      showMessage('Kernel restarting: ' + reason);
    }
  }

  function interruptKernel() {
    if (!state.session) return;
    api('POST', sessPath('/interrupt'))
      .then(function () {
        showMessage('Interrupt sent');
      })
      .catch(function (e) {
        showMessage('Interrupt failed: ' + e.message, 'error');
      });
  }

  function restartKernel() {
    if (!state.session) return;
    var btn = $('restart-btn');
    btn.disabled = true;
    api('POST', sessPath('/restart'))
      .then(function () {
        showMessage('Kernel restarted');
      })
      .catch(function (e) {
        showMessage('Restart failed: ' + e.message, 'error');
      })
      .then(function () {
        btn.disabled = !state.session;
      });
  }

  // ---------------------------------------------------------------------
  // WebSocket
  // ---------------------------------------------------------------------

  function connectWs() {
    if (!state.session) return;
    clearTimeout(state.reconnectTimer);
    var gen = ++state.wsGen;
    var proto = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
    // The first connection starts at the live end of the stream: older
    // events belong to executions this page does not know. After a drop, ask
    // for every event after the last one handled, so that output produced
    // while disconnected is not lost.
    var url = proto + '//' + window.location.host + sessPath('/ws') + '?token=' + encodeURIComponent(state.token);
    if (state.streamFloor !== null) url += '&since=' + Math.max(state.lastSeq, state.streamFloor);
    var first = true;
    var ws;
    try {
      ws = new WebSocket(url);
    } catch (_) {
      scheduleReconnect(gen);
      return;
    }
    state.ws = ws;
    ws.onopen = function () {
      if (gen !== state.wsGen) return;
      state.wsOpen = true;
      state.backoff = BACKOFF_MIN_MS;
      var pending = state.outbox;
      state.outbox = [];
      pending.forEach(function (f) {
        ws.send(JSON.stringify(f));
      });
      renderKernelStatus();
      refreshSession(true);
      scheduleFilesRefresh();
    };
    ws.onmessage = function (m) {
      if (gen !== state.wsGen || typeof m.data !== 'string') return;
      var ev;
      try {
        ev = JSON.parse(m.data);
      } catch (_) {
        return;
      }
      if (first) {
        first = false;
        // The server opens with a snapshot of the kernel state. Its seq is
        // the stream's position when it was taken, not an event of the
        // stream: events up to it may still follow (replayed after a drop),
        // so it must not advance lastSeq or they would be dropped.
        if (ev && !Array.isArray(ev) && ev.type === 'kernel') {
          if (state.streamFloor === null) state.streamFloor = typeof ev.seq === 'number' ? ev.seq : 0;
          setKernelState(ev.state, null);
          return;
        }
      }
      if (Array.isArray(ev)) ev.forEach(safeHandleEvent);
      else safeHandleEvent(ev);
    };
    ws.onclose = function () {
      if (gen !== state.wsGen) return;
      state.wsOpen = false;
      state.ws = null;
      renderKernelStatus();
      scheduleReconnect(gen);
    };
    ws.onerror = function () {
      /* onclose follows */
    };
  }

  function scheduleReconnect(gen) {
    if (!state.session || gen !== state.wsGen) return;
    var delay = state.backoff;
    state.backoff = Math.min(state.backoff * 2, BACKOFF_MAX_MS);
    clearTimeout(state.reconnectTimer);
    state.reconnectTimer = setTimeout(function () {
      if (gen !== state.wsGen || !state.session) return;
      // Make sure the session still exists before hammering the socket.
      refreshSession(false).then(function (alive) {
        if (alive && gen === state.wsGen && state.session) connectWs();
      });
    }, delay);
  }

  function disconnectWs() {
    state.wsGen++;
    clearTimeout(state.reconnectTimer);
    var ws = state.ws;
    state.ws = null;
    state.wsOpen = false;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close();
      } catch (_) {
        /* ignore */
      }
    }
  }

  // Sends a frame now, or after the next (re)connect.
  function send(frame) {
    if (state.ws && state.wsOpen && state.ws.readyState === WebSocket.OPEN) {
      state.ws.send(JSON.stringify(frame));
    } else {
      state.outbox.push(frame);
    }
  }

  function safeHandleEvent(ev) {
    try {
      handleEvent(ev);
    } catch (e) {
      // A malformed event must not break the stream of later ones.
      if (window.console) window.console.warn('glassroom: bad event', ev, e);
    }
  }

  function handleEvent(ev) {
    if (!ev || typeof ev !== 'object') return;
    if (typeof ev.seq === 'number') {
      if (ev.seq <= state.lastSeq) return; // duplicate from a replay
      state.lastSeq = ev.seq;
    }
    switch (ev.type) {
      case 'kernel':
        setKernelState(ev.state, ev.reason);
        if (ev.state === 'busy') onExecutionStarted();
        return;
      case 'file':
        scheduleFilesRefresh();
        return;
      case 'rejected':
        onRejected(ev);
        return;
      case 'update_display':
        applyUpdateDisplay(ev);
        return;
    }
    if (ev.id === undefined || ev.id === null) return;
    var id = String(ev.id);
    var cell = state.execs.get(id);
    if (!cell || cell.execId !== id) return; // not ours, or superseded
    onExecEvent(cell, ev);
  }

  // The kernel goes busy once per execution it starts, in the order they
  // were queued; the server sends no per-execution "started" event, and a
  // cell that prints nothing (a long loop) would otherwise look queued until
  // it ends. The first of our waiting cells that has no execution ahead of
  // it is the one that started; the others move up one place.
  function onExecutionStarted() {
    var started = false;
    state.execs.forEach(function (cell, id) {
      if (cell.execId !== id || cell.status !== 'queued') return;
      if (cell.queuePos != null && cell.queuePos > 1) {
        cell.queuePos--;
      } else if (!started) {
        started = true;
        cell.status = 'running';
        cell.queuePos = null;
      } else {
        return;
      }
      renderCellStatus(cell);
    });
  }

  function onExecEvent(cell, ev) {
    if (ev.type === 'queued' && cell.status === 'running') return; // raced with its start
    if (cell.clearPending && OUTPUT_EVENTS[ev.type]) clearOutputs(cell);
    if (ev.type !== 'queued') {
      cell.gotEvents = true;
      if (cell.status === 'queued') {
        cell.status = 'running';
        renderCellStatus(cell);
      }
    }
    switch (ev.type) {
      case 'queued':
        cell.queuePos = typeof ev.position === 'number' ? ev.position : null;
        cell.status = 'queued';
        renderCellStatus(cell);
        break;
      case 'stream':
        appendStream(cell, ev.name === 'stderr' ? 'stderr' : 'stdout', joinText(ev.text));
        break;
      case 'display':
        addOutput(cell, {
          output_type: 'display_data',
          data: normData(ev.data),
          metadata: ev.metadata || {},
          display_id: ev.display_id || (ev.transient && ev.transient.display_id) || null
        });
        break;
      case 'result':
        if (typeof ev.execution_count === 'number') cell.executionCount = ev.execution_count;
        addOutput(cell, {
          output_type: 'execute_result',
          data: normData(ev.data),
          metadata: ev.metadata || {},
          execution_count: typeof ev.execution_count === 'number' ? ev.execution_count : null
        });
        break;
      case 'error':
        addOutput(cell, {
          output_type: 'error',
          ename: ev.name != null ? String(ev.name) : 'Error',
          evalue: ev.value != null ? String(ev.value) : '',
          traceback: Array.isArray(ev.traceback) ? ev.traceback.map(String) : []
        });
        break;
      case 'input_request':
        showInputRequest(cell, ev);
        break;
      case 'clear_output':
        // wait: clear when the next output arrives (no flicker).
        if (ev.wait) cell.clearPending = true;
        else clearOutputs(cell);
        break;
      case 'done':
        finishCell(cell, ev);
        break;
    }
    scheduleSave();
  }

  var OUTPUT_EVENTS = { stream: true, display: true, result: true, error: true, input_request: true };

  function onRejected(ev) {
    var msg = 'Rejected' + (ev.code ? ' (' + ev.code + ')' : '') + ': ' + (ev.message || 'bad request');
    var cell = ev.id != null ? state.execs.get(String(ev.id)) : null;
    if (cell && cell.execId === String(ev.id)) {
      addOutput(cell, { output_type: 'notice', cls: 'output-notice output-rejected', text: msg });
      if (!cell.gotEvents) finishCellLocally(cell, null);
    } else {
      showMessage(msg, 'error');
    }
  }

  // ---------------------------------------------------------------------
  // Cells
  // ---------------------------------------------------------------------

  function newCell(opts) {
    opts = opts || {};
    var cell = {
      id: opts.id && /^[A-Za-z0-9_-]{1,64}$/.test(opts.id) ? opts.id : randomId(),
      type: opts.type || 'code',
      source: opts.source || '',
      executionCount: typeof opts.executionCount === 'number' ? opts.executionCount : null,
      outputs: [],
      execId: null,
      status: 'idle',
      startedAt: 0,
      queuePos: null,
      gotEvents: false,
      clearPending: false,
      lastDuration: null,
      lastStatus: null,
      el: null
    };
    buildCell(cell);
    (opts.outputs || []).forEach(function (o) {
      addOutput(cell, o, true);
    });
    return cell;
  }

  function buildCell(cell) {
    var root = el('div', 'cell cell-' + cell.type);
    root.dataset.cellId = cell.id;

    var gutter = el('div', 'cell-gutter');
    var count = el('span', 'exec-count');
    var elapsed = el('span', 'elapsed');
    gutter.appendChild(count);
    gutter.appendChild(elapsed);

    var main = el('div', 'cell-main');
    var bar = el('div', 'cell-toolbar');
    if (cell.type !== 'code') bar.appendChild(el('span', 'cell-type', cell.type));
    var runBtn = toolButton('run-cell', '\u25B6 Run', 'Run (Ctrl+Enter)');
    var upBtn = toolButton('move-up', '\u2191', 'Move up');
    var downBtn = toolButton('move-down', '\u2193', 'Move down');
    var addBtn = toolButton('add-below', '+', 'Add a cell below');
    var clearBtn = toolButton('clear-output', 'Clear', 'Clear output');
    var delBtn = toolButton('delete-cell', '\u2715', 'Delete cell');
    if (cell.type !== 'code') runBtn.disabled = true;
    [runBtn, upBtn, downBtn, addBtn, clearBtn, delBtn].forEach(function (b) {
      bar.appendChild(b);
    });

    var editor = el('div', 'editor');
    var pre = el('pre', 'highlight');
    pre.setAttribute('aria-hidden', 'true');
    var ta = el('textarea', 'code');
    ta.spellcheck = false;
    ta.rows = 1;
    ta.wrap = 'soft';
    ta.setAttribute('autocomplete', 'off');
    ta.setAttribute('autocorrect', 'off');
    ta.setAttribute('autocapitalize', 'off');
    ta.setAttribute('aria-label', cell.type === 'code' ? 'Code cell' : cell.type + ' cell');
    ta.value = cell.source;
    editor.appendChild(pre);
    editor.appendChild(ta);

    var outputs = el('div', 'outputs');
    main.appendChild(bar);
    main.appendChild(editor);
    main.appendChild(outputs);
    root.appendChild(gutter);
    root.appendChild(main);

    cell.el = { root: root, count: count, elapsed: elapsed, ta: ta, pre: pre, outputs: outputs };

    ta.addEventListener('input', function () {
      cell.source = ta.value;
      renderHighlight(cell);
      scheduleSave();
    });
    ta.addEventListener('keydown', function (e) {
      onEditorKeydown(cell, e);
    });
    ta.addEventListener('focus', function () {
      setActiveCell(cell);
    });
    runBtn.addEventListener('click', function () {
      runCell(cell);
    });
    upBtn.addEventListener('click', function () {
      moveCell(cell, -1);
    });
    downBtn.addEventListener('click', function () {
      moveCell(cell, 1);
    });
    addBtn.addEventListener('click', function () {
      var c = insertCell(indexOf(cell) + 1);
      c.el.ta.focus();
    });
    clearBtn.addEventListener('click', function () {
      clearOutputs(cell);
      scheduleSave();
    });
    delBtn.addEventListener('click', function () {
      deleteCell(cell);
    });

    renderHighlight(cell);
    renderCellStatus(cell);
  }

  function toolButton(cls, label, title) {
    var b = el('button', cls, label);
    b.type = 'button';
    b.title = title;
    b.setAttribute('aria-label', title);
    return b;
  }

  function indexOf(cell) {
    return state.cells.indexOf(cell);
  }

  function renderCellOrder() {
    var container = $('cells');
    state.cells.forEach(function (c, i) {
      c.el.root.dataset.index = String(i);
      if (container.children[i] !== c.el.root) container.insertBefore(c.el.root, container.children[i] || null);
    });
    while (container.children.length > state.cells.length) {
      container.removeChild(container.lastChild);
    }
  }

  function insertCell(index, opts) {
    var cell = newCell(opts);
    if (index < 0 || index > state.cells.length) index = state.cells.length;
    state.cells.splice(index, 0, cell);
    renderCellOrder();
    scheduleSave();
    return cell;
  }

  function deleteCell(cell) {
    var i = indexOf(cell);
    if (i < 0) return;
    if (cell.execId) state.execs.delete(cell.execId);
    cell.execId = null;
    dropDisplays(cell);
    state.cells.splice(i, 1);
    cell.el.root.remove();
    if (state.activeCell === cell) state.activeCell = null;
    renderCellOrder();
    var next = state.cells[i] || state.cells[i - 1];
    if (next) next.el.ta.focus();
    scheduleSave();
  }

  function moveCell(cell, delta) {
    var i = indexOf(cell);
    var j = i + delta;
    if (i < 0 || j < 0 || j >= state.cells.length) return;
    var hadFocus = document.activeElement === cell.el.ta;
    state.cells.splice(i, 1);
    state.cells.splice(j, 0, cell);
    renderCellOrder();
    if (hadFocus) cell.el.ta.focus();
    scheduleSave();
  }

  function setActiveCell(cell) {
    if (state.activeCell && state.activeCell !== cell && state.activeCell.el) {
      state.activeCell.el.root.classList.remove('active');
    }
    state.activeCell = cell;
    cell.el.root.classList.add('active');
  }

  function renderCellStatus(cell) {
    var busy = cell.status === 'queued' || cell.status === 'running';
    var count = cell.type !== 'code' ? '' : busy ? '[*]' : '[' + (cell.executionCount != null ? cell.executionCount : ' ') + ']';
    cell.el.count.textContent = count;
    cell.el.root.classList.toggle('running', cell.status === 'running');
    cell.el.root.classList.toggle('queued', cell.status === 'queued');
    cell.el.root.dataset.status = cell.status;
    var e = cell.el.elapsed;
    e.className = 'elapsed';
    if (busy) {
      var t = fmtElapsed(performance.now() - cell.startedAt);
      if (cell.status === 'queued') {
        e.textContent = 'queued' + (cell.queuePos != null ? ' #' + cell.queuePos : '') + ' ' + t;
      } else {
        e.textContent = t;
      }
      e.classList.add('busy');
    } else if (cell.lastDuration != null) {
      e.textContent = fmtElapsed(cell.lastDuration);
      if (cell.lastStatus && cell.lastStatus !== 'ok') {
        e.classList.add('status-' + cell.lastStatus.replace(/[^a-z]+/g, '-'));
        e.title = cell.lastStatus;
      } else {
        e.title = 'ok';
      }
    } else {
      e.textContent = '';
    }
  }

  function startTicker() {
    if (state.ticker) return;
    state.ticker = setInterval(function () {
      var any = false;
      state.cells.forEach(function (c) {
        if (c.status === 'queued' || c.status === 'running') {
          any = true;
          renderCellStatus(c);
        }
      });
      if (!any) {
        clearInterval(state.ticker);
        state.ticker = 0;
      }
    }, 100);
  }

  // ---------------------------------------------------------------------
  // Running cells
  // ---------------------------------------------------------------------

  function runCell(cell) {
    if (cell.type !== 'code') return true;
    if (!state.session) {
      showMessage('Create or reopen a session first', 'error');
      return false;
    }
    cell.source = cell.el.ta.value;
    renderHighlight(cell); // in case the value was set without an input event
    if (cell.execId) state.execs.delete(cell.execId);
    clearOutputs(cell);
    var id = cell.id + '-' + Date.now().toString(36) + '-' + ++state.execCounter;
    cell.execId = id;
    state.execs.set(id, cell);
    cell.status = 'queued';
    cell.queuePos = null;
    cell.gotEvents = false;
    cell.startedAt = performance.now();
    cell.lastDuration = null;
    cell.lastStatus = null;
    renderCellStatus(cell);
    startTicker();
    send({ type: 'execute', id: id, code: cell.source });
    scheduleSave();
    return true;
  }

  function runAndAdvance(cell) {
    if (!runCell(cell)) return;
    var i = indexOf(cell);
    var next = state.cells[i + 1] || insertCell(i + 1);
    next.el.ta.focus();
    next.el.root.scrollIntoView({ block: 'nearest' });
  }

  function runAll() {
    if (!state.session) {
      showMessage('Create or reopen a session first', 'error');
      return;
    }
    state.cells.forEach(function (c) {
      if (c.type === 'code') runCell(c);
    });
  }

  function finishCell(cell, ev) {
    state.execs.delete(String(ev.id));
    cell.execId = null;
    cell.status = 'idle';
    cell.queuePos = null;
    cell.clearPending = false;
    if (typeof ev.execution_count === 'number') cell.executionCount = ev.execution_count;
    cell.lastDuration = typeof ev.duration_ms === 'number' ? ev.duration_ms : performance.now() - cell.startedAt;
    cell.lastStatus = ev.status ? String(ev.status) : 'ok';
    cancelPendingInputs(cell);
    var notes = {
      timeout: 'Execution timed out',
      interrupted: 'Execution interrupted',
      died: 'The kernel died during execution'
    };
    if (notes[cell.lastStatus]) {
      addOutput(cell, { output_type: 'notice', cls: 'output-notice status-' + cell.lastStatus, text: notes[cell.lastStatus] });
    }
    if (ev.truncated) {
      addOutput(cell, { output_type: 'notice', cls: 'truncated-marker', text: 'Output truncated: the kernel produced more output than the gateway keeps.' });
    }
    renderCellStatus(cell);
    scheduleSessionRefresh();
  }

  // Ends a run without a server "done" (session closed, kernel died).
  function finishCellLocally(cell, note) {
    if (cell.execId) state.execs.delete(cell.execId);
    cell.execId = null;
    cell.status = 'idle';
    cell.queuePos = null;
    cell.clearPending = false;
    cancelPendingInputs(cell);
    if (note) addOutput(cell, { output_type: 'notice', cls: 'output-notice status-died', text: note });
    renderCellStatus(cell);
  }

  // ---------------------------------------------------------------------
  // Editor: keys and highlighting
  // ---------------------------------------------------------------------

  function onEditorKeydown(cell, e) {
    if (e.isComposing) return;
    if (e.key === 'Enter' && e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      runAndAdvance(cell);
      return;
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.altKey) {
      e.preventDefault();
      runCell(cell);
      return;
    }
    if (e.key === 'Tab' && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      if (e.shiftKey) dedent(cell.el.ta);
      else indent(cell.el.ta);
    }
  }

  // Replaces ta.value[a:b] with text, keeping the browser's undo stack when
  // execCommand is available.
  function replaceRange(ta, a, b, text) {
    if (a === b && text === '') return;
    ta.focus();
    ta.setSelectionRange(a, b);
    var before = ta.value;
    var expected = before.slice(0, a) + text + before.slice(b);
    var ok = false;
    try {
      ok = text === '' ? document.execCommand('delete', false) : document.execCommand('insertText', false, text);
    } catch (_) {
      ok = false;
    }
    if (!ok || ta.value !== expected) {
      ta.value = expected;
      ta.setSelectionRange(a + text.length, a + text.length);
      ta.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }

  function lineRange(v, s, e) {
    var start = v.lastIndexOf('\n', s - 1) + 1;
    var endPos = e;
    if (endPos > s && v.charAt(endPos - 1) === '\n') endPos--;
    var nl = v.indexOf('\n', endPos);
    return [start, nl === -1 ? v.length : nl];
  }

  function indent(ta) {
    var v = ta.value;
    var s = ta.selectionStart;
    var e = ta.selectionEnd;
    if (s === e || v.slice(s, e).indexOf('\n') === -1) {
      replaceRange(ta, s, e, '    ');
      return;
    }
    var r = lineRange(v, s, e);
    var block = v.slice(r[0], r[1]);
    var out = block
      .split('\n')
      .map(function (l) {
        return '    ' + l;
      })
      .join('\n');
    replaceRange(ta, r[0], r[1], out);
    ta.setSelectionRange(r[0], r[0] + out.length);
  }

  function dedent(ta) {
    var v = ta.value;
    var s = ta.selectionStart;
    var e = ta.selectionEnd;
    var r = lineRange(v, s, e);
    var lines = v.slice(r[0], r[1]).split('\n');
    var removedFirst = 0;
    var removedTotal = 0;
    var out = lines
      .map(function (l, i) {
        var m = /^( {1,4}|\t)/.exec(l);
        var n = m ? m[0].length : 0;
        if (i === 0) removedFirst = n;
        removedTotal += n;
        return l.slice(n);
      })
      .join('\n');
    if (removedTotal === 0) return;
    replaceRange(ta, r[0], r[1], out);
    if (s === e) {
      var caret = Math.max(r[0], s - removedFirst);
      ta.setSelectionRange(caret, caret);
    } else {
      ta.setSelectionRange(r[0], r[0] + out.length);
    }
  }

  var PY_KEYWORDS = new Set(
    ('and as assert async await break class continue def del elif else except finally for from global if import in is ' +
      'lambda nonlocal not or pass raise return try while with yield match case').split(' ')
  );
  var PY_CONSTANTS = new Set(['True', 'False', 'None', 'Ellipsis', 'NotImplemented', '__name__', '__file__']);
  var PY_BUILTINS = new Set(
    ('abs all any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex delattr dict dir ' +
      'divmod enumerate eval exec filter float format frozenset getattr globals hasattr hash help hex id input int ' +
      'isinstance issubclass iter len list locals map max memoryview min next object oct open ord pow print property ' +
      'range repr reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip ' +
      'Exception BaseException ValueError TypeError KeyError IndexError AttributeError RuntimeError NameError ' +
      'ImportError ModuleNotFoundError StopIteration ZeroDivisionError KeyboardInterrupt OSError FileNotFoundError ' +
      'NotImplementedError AssertionError').split(' ')
  );
  var PY_TOKEN = new RegExp(
    [
      '(#[^\\n]*)', // 1 comment
      '((?:[rRbBuUfF]{1,2})?(?:\'\'\'[\\s\\S]*?(?:\'\'\'|$(?![\\s\\S]))|"""[\\s\\S]*?(?:"""|$(?![\\s\\S]))))', // 2 triple-quoted string
      '((?:[rRbBuUfF]{1,2})?(?:\'(?:[^\'\\\\\\n]|\\\\[\\s\\S])*(?:\'|$)|"(?:[^"\\\\\\n]|\\\\[\\s\\S])*(?:"|$)))', // 3 string
      '((?:\\b|(?=\\.\\d))(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\\d[\\d_]*\\.?[\\d_]*|\\.\\d[\\d_]*)(?:[eE][+-]?\\d[\\d_]*)?[jJ]?))', // 4 number
      '(@[A-Za-z_][\\w.]*)', // 5 decorator
      '([A-Za-z_][A-Za-z0-9_]*)' // 6 identifier
    ].join('|'),
    'gm'
  );

  // Builds highlighted DOM for Python source (text nodes and spans only).
  function highlightPython(src) {
    var frag = document.createDocumentFragment();
    var last = 0;
    var afterDef = false;
    var m;
    PY_TOKEN.lastIndex = 0;
    while ((m = PY_TOKEN.exec(src)) !== null) {
      if (m[0] === '') {
        PY_TOKEN.lastIndex++;
        continue;
      }
      if (m.index > last) frag.appendChild(document.createTextNode(src.slice(last, m.index)));
      var cls = null;
      if (m[1] !== undefined) cls = 'tok-com';
      else if (m[2] !== undefined || m[3] !== undefined) cls = 'tok-str';
      else if (m[4] !== undefined) cls = 'tok-num';
      else if (m[5] !== undefined) cls = 'tok-deco';
      else if (m[6] !== undefined) {
        var w = m[6];
        if (afterDef) cls = 'tok-def';
        else if (PY_KEYWORDS.has(w)) cls = 'tok-kw';
        else if (PY_CONSTANTS.has(w)) cls = 'tok-const';
        else if (PY_BUILTINS.has(w)) cls = 'tok-builtin';
        else if (w === 'self' || w === 'cls') cls = 'tok-self';
        afterDef = w === 'def' || w === 'class';
      }
      if (m[6] === undefined) afterDef = false;
      if (cls) frag.appendChild(el('span', cls, m[0]));
      else frag.appendChild(document.createTextNode(m[0]));
      last = m.index + m[0].length;
    }
    if (last < src.length) frag.appendChild(document.createTextNode(src.slice(last)));
    return frag;
  }

  function renderHighlight(cell) {
    var pre = cell.el.pre;
    clear(pre);
    var src = cell.el.ta.value;
    if (cell.type === 'code') pre.appendChild(highlightPython(src));
    else pre.appendChild(document.createTextNode(src));
    // A <pre> ignores one trailing newline; the textarea does not.
    pre.appendChild(document.createTextNode('\n'));
  }

  // ---------------------------------------------------------------------
  // Outputs
  // ---------------------------------------------------------------------

  function normData(d) {
    var out = {};
    if (!d || typeof d !== 'object') return out;
    Object.keys(d).forEach(function (k) {
      var v = d[k];
      if (Array.isArray(v) && (k.indexOf('json') < 0 || k === 'text/plain')) v = joinText(v);
      out[k] = v;
    });
    return out;
  }

  function clearOutputs(cell) {
    cell.clearPending = false;
    dropDisplays(cell);
    cell.outputs = [];
    clear(cell.el.outputs);
    cell.el.root.classList.remove('has-output');
  }

  function dropDisplays(cell) {
    cell.outputs.forEach(function (rec) {
      if (rec.display_id) {
        var set = state.displays.get(rec.display_id);
        if (set) {
          set.delete(rec);
          if (!set.size) state.displays.delete(rec.display_id);
        }
      }
    });
  }

  function addOutput(cell, rec, quiet) {
    cell.outputs.push(rec);
    rec.cell = cell;
    rec.el = el('div', 'output');
    fillOutput(rec);
    cell.el.outputs.appendChild(rec.el);
    cell.el.root.classList.add('has-output');
    if (rec.display_id) {
      var set = state.displays.get(rec.display_id);
      if (!set) {
        set = new Set();
        state.displays.set(rec.display_id, set);
      }
      set.add(rec);
    }
    if (!quiet) scrollOutputsToEnd(cell);
    return rec;
  }

  function scrollOutputsToEnd(cell) {
    var o = cell.el.outputs;
    o.scrollTop = o.scrollHeight;
  }

  function appendStream(cell, name, text) {
    if (!text) return;
    var last = cell.outputs[cell.outputs.length - 1];
    if (last && last.output_type === 'stream' && last.name === name) {
      last.text += text;
      queueStreamRender(last);
    } else {
      addOutput(cell, { output_type: 'stream', name: name, text: text });
    }
  }

  // Stream chunks can arrive very fast; re-render at most once per frame.
  function queueStreamRender(rec) {
    state.renderQueued.add(rec);
    if (state.renderFrame) return;
    state.renderFrame = window.requestAnimationFrame(function () {
      state.renderFrame = 0;
      var recs = Array.from(state.renderQueued);
      state.renderQueued.clear();
      recs.forEach(function (r) {
        if (r.el) renderStreamText(r);
      });
    });
  }

  // Applies carriage returns the way a terminal would (progress bars).
  function applyCR(text) {
    if (text.indexOf('\r') < 0) return text;
    return text
      .replace(/\r\n/g, '\n')
      .split('\n')
      .map(function (line) {
        var trimmed = line.replace(/\r+$/, '');
        var i = trimmed.lastIndexOf('\r');
        return i >= 0 ? trimmed.slice(i + 1) : trimmed;
      })
      .join('\n');
  }

  function renderStreamText(rec) {
    var pre = rec.el.firstChild;
    if (!pre) return;
    var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    clear(pre);
    renderAnsi(pre, applyCR(rec.text));
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  }

  function fillOutput(rec) {
    var w = rec.el;
    clear(w);
    switch (rec.output_type) {
      case 'stream':
        w.className = 'output output-stream ' + (rec.name === 'stderr' ? 'stderr' : 'stdout');
        w.appendChild(el('pre', 'stream-text'));
        renderStreamText(rec);
        break;
      case 'display_data':
        w.className = 'output output-display';
        renderBundle(w, rec.data, rec.metadata);
        break;
      case 'execute_result':
        w.className = 'output output-result';
        renderBundle(w, rec.data, rec.metadata);
        break;
      case 'error':
        w.className = 'output output-error';
        var head = el('div', 'error-header');
        head.appendChild(el('span', 'error-name', rec.ename));
        if (rec.evalue) head.appendChild(el('span', 'error-value', ': ' + rec.evalue));
        w.appendChild(head);
        if (rec.traceback && rec.traceback.length) {
          var tb = el('pre', 'traceback');
          renderAnsi(tb, rec.traceback.join('\n'));
          w.appendChild(tb);
        }
        break;
      case 'input':
        fillInput(rec);
        break;
      default:
        w.className = 'output ' + (rec.cls || 'output-notice');
        w.textContent = rec.text || '';
    }
  }

  function pickMime(data) {
    for (var i = 0; i < MIME_ORDER.length; i++) {
      var v = data[MIME_ORDER[i]];
      if (v !== undefined && v !== null) return MIME_ORDER[i];
    }
    var keys = Object.keys(data);
    for (var j = 0; j < keys.length; j++) {
      if (/json$/.test(keys[j])) return keys[j];
    }
    return keys.length ? keys[0] : null;
  }

  function renderBundle(w, data, metadata) {
    data = data || {};
    metadata = metadata || {};
    var mime = pickMime(data);
    if (mime) w.dataset.mime = mime;
    switch (mime) {
      case 'image/png':
      case 'image/jpeg': {
        w.classList.add('output-image');
        var b64 = joinText(data[mime]).replace(/[^A-Za-z0-9+/=]/g, '');
        w.appendChild(makeImg('data:' + mime + ';base64,' + b64, metadata[mime], data['text/plain']));
        break;
      }
      case 'image/svg+xml': {
        w.classList.add('output-image');
        w.appendChild(makeImg('data:image/svg+xml;base64,' + utf8ToBase64(joinText(data[mime])), metadata[mime], data['text/plain']));
        break;
      }
      case 'text/html': {
        w.classList.add('output-html');
        w.appendChild(makeHtmlFrame(joinText(data[mime])));
        break;
      }
      case 'text/markdown': {
        w.classList.add('output-markdown');
        w.appendChild(el('pre', 'output-text', joinText(data[mime])));
        break;
      }
      case 'text/plain': {
        w.classList.add('output-plain');
        var pre = el('pre', 'output-text');
        renderAnsi(pre, joinText(data[mime]));
        w.appendChild(pre);
        break;
      }
      case null:
        break;
      default: {
        var v = data[mime];
        w.classList.add('output-plain');
        if (/json$/.test(mime)) {
          w.appendChild(el('pre', 'output-text', joinText(v)));
        } else {
          w.appendChild(el('pre', 'output-text output-unsupported', '[' + mime + ' output is not shown]'));
        }
      }
    }
  }

  function makeImg(src, meta, alt) {
    var img = document.createElement('img');
    img.alt = alt ? joinText(alt).slice(0, 200) : 'image output';
    img.decoding = 'async';
    img.src = src;
    if (meta && typeof meta === 'object') {
      if (typeof meta.width === 'number' && meta.width > 0) img.width = Math.round(meta.width);
      if (typeof meta.height === 'number' && meta.height > 0) img.height = Math.round(meta.height);
    }
    return img;
  }

  function utf8ToBase64(s) {
    var bytes = new TextEncoder().encode(s);
    var bin = '';
    var CHUNK = 0x8000;
    for (var i = 0; i < bytes.length; i += CHUNK) {
      bin += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK));
    }
    return window.btoa(bin);
  }

  // HTML output lives in a sandboxed frame with no scripts and an opaque
  // origin; it can neither run code nor reach this page.
  function makeHtmlFrame(html) {
    var box = el('div', 'html-frame-box');
    var f = document.createElement('iframe');
    f.setAttribute('sandbox', '');
    f.setAttribute('referrerpolicy', 'no-referrer');
    f.title = 'HTML output';
    f.className = 'html-frame';
    f.height = String(estimateHtmlHeight(html));
    f.srcdoc = html;
    box.appendChild(f);
    return box;
  }

  function estimateHtmlHeight(html) {
    var blocks = (html.match(/<(tr|br|p|div|li|h[1-6]|pre|table)\b/gi) || []).length;
    var lines = (html.match(/\n/g) || []).length;
    var rows = Math.max(blocks, Math.ceil(html.replace(/<[^>]*>/g, '').length / 120), Math.min(lines, 40), 1);
    return Math.min(480, Math.max(40, rows * 24 + 16));
  }

  function applyUpdateDisplay(ev) {
    var did = ev.display_id || (ev.transient && ev.transient.display_id);
    if (!did) return;
    var set = state.displays.get(String(did));
    if (!set) return;
    set.forEach(function (rec) {
      rec.data = normData(ev.data);
      rec.metadata = ev.metadata || {};
      fillOutput(rec);
    });
    scheduleSave();
  }

  // input(): a prompt with a text (or password) box inside the cell.
  function showInputRequest(cell, ev) {
    var rec = addOutput(cell, {
      output_type: 'input',
      prompt: ev.prompt != null ? String(ev.prompt) : '',
      password: !!ev.password,
      value: null,
      cancelled: false,
      execId: String(ev.id)
    });
    var input = rec.el.querySelector('input');
    if (input) input.focus();
  }

  function fillInput(rec) {
    var w = rec.el;
    w.className = 'output input-request' + (rec.value !== null ? ' answered' : '') + (rec.cancelled ? ' cancelled' : '');
    w.appendChild(el('span', 'input-prompt', rec.prompt));
    if (rec.value !== null) {
      w.appendChild(el('span', 'input-echo', rec.password ? '\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022' : rec.value));
      return;
    }
    if (rec.cancelled) {
      w.appendChild(el('span', 'input-echo', '(no input)'));
      return;
    }
    var input = document.createElement('input');
    input.type = rec.password ? 'password' : 'text';
    input.className = 'input-field';
    input.spellcheck = false;
    input.setAttribute('autocomplete', rec.password ? 'new-password' : 'off');
    input.setAttribute('aria-label', rec.prompt || 'input');
    input.addEventListener('keydown', function (e) {
      if (e.key !== 'Enter' || e.isComposing) return;
      e.preventDefault();
      rec.value = input.value;
      send({ type: 'input_reply', id: rec.execId, value: rec.value });
      clear(w);
      fillInput(rec);
      if (rec.cell && rec.cell.el) rec.cell.el.ta.focus({ preventScroll: true });
      scheduleSave();
    });
    w.appendChild(input);
  }

  function cancelPendingInputs(cell) {
    cell.outputs.forEach(function (rec) {
      if (rec.output_type === 'input' && rec.value === null && !rec.cancelled) {
        rec.cancelled = true;
        fillOutput(rec);
      }
    });
  }

  // ---------------------------------------------------------------------
  // ANSI escape rendering
  // ---------------------------------------------------------------------

  // CSI sequences, OSC strings, other ESC sequences, and stray ESC bytes.
  var ANSI_RE = /\x1b\[([0-?]*)[ -\/]*([@-~])|\x1b\[[0-?]*[ -\/]*$|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -\/]*[0-~]?|\x9b[0-?]*[ -\/]*[@-~]/g;

  function renderAnsi(parent, text) {
    text = String(text);
    var st = { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false };
    if (text.indexOf('\x1b') < 0 && text.indexOf('\x9b') < 0) {
      appendStyled(parent, text, st);
      return;
    }
    var last = 0;
    var m;
    ANSI_RE.lastIndex = 0;
    while ((m = ANSI_RE.exec(text)) !== null) {
      if (m.index > last) appendStyled(parent, text.slice(last, m.index), st);
      if (m[2] === 'm') applySgr(st, m[1] || '');
      last = m.index + m[0].length;
      if (m[0] === '') ANSI_RE.lastIndex++;
    }
    if (last < text.length) appendStyled(parent, text.slice(last), st);
  }

  function appendStyled(parent, s, st) {
    // Control characters other than tab/newline are never shown raw.
    s = s.replace(/[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]/g, '');
    if (!s) return;
    if (st.fg === null && st.bg === null && !st.bold && !st.dim && !st.italic && !st.underline) {
      parent.appendChild(document.createTextNode(s));
      return;
    }
    var span = el('span', null, s);
    var cls = [];
    if (typeof st.fg === 'number') cls.push('ansi-fg-' + st.fg);
    else if (typeof st.fg === 'string') span.style.color = st.fg;
    if (typeof st.bg === 'number') cls.push('ansi-bg-' + st.bg);
    else if (typeof st.bg === 'string') span.style.backgroundColor = st.bg;
    if (st.bold) cls.push('ansi-bold');
    if (st.dim) cls.push('ansi-dim');
    if (st.italic) cls.push('ansi-italic');
    if (st.underline) cls.push('ansi-underline');
    span.className = cls.join(' ');
    parent.appendChild(span);
  }

  function xterm256(n) {
    if (n < 16) return n;
    if (n >= 232) {
      var g = 8 + (n - 232) * 10;
      return 'rgb(' + g + ',' + g + ',' + g + ')';
    }
    var levels = [0, 95, 135, 175, 215, 255];
    var i = n - 16;
    return 'rgb(' + levels[Math.floor(i / 36)] + ',' + levels[Math.floor(i / 6) % 6] + ',' + levels[i % 6] + ')';
  }

  function applySgr(st, params) {
    var p = params === '' ? [0] : params.split(/[;:]/).map(function (x) {
      var n = parseInt(x, 10);
      return isNaN(n) ? 0 : n;
    });
    for (var i = 0; i < p.length; i++) {
      var c = p[i];
      if (c === 0) {
        st.fg = st.bg = null;
        st.bold = st.dim = st.italic = st.underline = false;
      } else if (c === 1) st.bold = true;
      else if (c === 2) st.dim = true;
      else if (c === 3) st.italic = true;
      else if (c === 4) st.underline = true;
      else if (c === 22) st.bold = st.dim = false;
      else if (c === 23) st.italic = false;
      else if (c === 24) st.underline = false;
      else if (c >= 30 && c <= 37) st.fg = c - 30;
      else if (c === 39) st.fg = null;
      else if (c >= 40 && c <= 47) st.bg = c - 40;
      else if (c === 49) st.bg = null;
      else if (c >= 90 && c <= 97) st.fg = c - 90 + 8;
      else if (c >= 100 && c <= 107) st.bg = c - 100 + 8;
      else if (c === 38 || c === 48) {
        var color = null;
        if (p[i + 1] === 5 && i + 2 < p.length) {
          var n = p[i + 2];
          if (n >= 0 && n < 256) color = xterm256(n);
          i += 2;
        } else if (p[i + 1] === 2 && i + 4 < p.length) {
          var rgb = [p[i + 2], p[i + 3], p[i + 4]].map(function (x) {
            return Math.max(0, Math.min(255, x));
          });
          color = 'rgb(' + rgb.join(',') + ')';
          i += 4;
        } else {
          i = p.length; // malformed: ignore the rest
        }
        if (c === 38) st.fg = color;
        else st.bg = color;
      }
    }
  }

  // ---------------------------------------------------------------------
  // Files panel
  // ---------------------------------------------------------------------

  function fileUrl(path) {
    return sessPath('/files/' + encPath(path));
  }

  function scheduleFilesRefresh() {
    clearTimeout(state.filesTimer);
    state.filesTimer = setTimeout(refreshFiles, 300);
  }

  function renderFilesPath() {
    $('files-path').textContent = '/' + state.filesDir;
    $('files-up').disabled = !state.session || !state.filesDir;
  }

  function refreshFiles() {
    var list = $('file-list');
    renderFilesPath();
    var req = ++state.filesReq;
    if (!state.session) {
      clear(list);
      list.appendChild(el('div', 'file-empty', 'No session'));
      return Promise.resolve();
    }
    var dir = state.filesDir;
    var url = sessPath('/files') + (dir ? '?path=' + encodeURIComponent(dir) : '');
    list.classList.add('loading');
    return api('GET', url)
      .then(function (r) {
        if (req !== state.filesReq) return;
        renderFileList((r && r.entries) || []);
      })
      .catch(function (e) {
        if (req !== state.filesReq) return;
        if (e.status === 404 && dir) {
          // The folder went away: go back to the root.
          state.filesDir = '';
          refreshFiles();
          return;
        }
        clear(list);
        list.appendChild(el('div', 'file-empty error', 'Could not list files: ' + e.message));
      })
      .then(function () {
        if (req === state.filesReq) list.classList.remove('loading');
      });
  }

  function renderFileList(entries) {
    var list = $('file-list');
    clear(list);
    entries = entries.slice().sort(function (a, b) {
      var da = a.type === 'dir' ? 0 : 1;
      var db = b.type === 'dir' ? 0 : 1;
      if (da !== db) return da - db;
      return String(a.name).localeCompare(String(b.name));
    });
    if (!entries.length) {
      list.appendChild(el('div', 'file-empty', 'No files yet. Upload some, or write them from code.'));
      return;
    }
    entries.forEach(function (ent) {
      var path = ent.path || (state.filesDir ? state.filesDir + '/' : '') + ent.name;
      var isDir = ent.type === 'dir';
      var row = el('div', 'file-entry' + (isDir ? ' dir' : ''));
      row.dataset.path = path;
      row.dataset.type = isDir ? 'dir' : 'file';
      var link = el('a', 'file-name', (ent.name || basename(path)) + (isDir ? '/' : ''));
      link.href = isDir ? '#' : fileUrl(path);
      link.title = isDir ? 'Open folder ' + path : 'Download ' + path;
      if (!isDir) link.setAttribute('download', basename(path));
      link.addEventListener('click', function (e) {
        e.preventDefault();
        if (isDir) {
          state.filesDir = path.replace(/\/+$/, '');
          refreshFiles();
        } else {
          downloadFile(path);
        }
      });
      row.appendChild(link);
      row.appendChild(el('span', 'file-size', isDir ? '' : fmtSize(ent.size)));
      var del = el('button', 'file-delete', '\u2715');
      del.type = 'button';
      del.title = 'Delete ' + path;
      del.setAttribute('aria-label', 'Delete ' + path);
      del.addEventListener('click', function () {
        deleteFile(path);
      });
      row.appendChild(del);
      list.appendChild(row);
    });
  }

  function downloadFile(path) {
    if (!state.session) return;
    api('GET', fileUrl(path), { raw: true })
      .then(function (resp) {
        return resp.blob();
      })
      .then(function (blob) {
        var url = URL.createObjectURL(blob);
        var a = document.createElement('a');
        a.href = url;
        a.download = basename(path);
        a.className = 'visually-hidden';
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () {
          URL.revokeObjectURL(url);
        }, 60000);
      })
      .catch(function (e) {
        showMessage('Download failed: ' + e.message, 'error');
      });
  }

  function deleteFile(path) {
    if (!state.session) return;
    api('DELETE', fileUrl(path))
      .then(function () {
        showMessage('Deleted ' + path);
      })
      .catch(function (e) {
        showMessage('Delete failed: ' + e.message, 'error');
      })
      .then(refreshFiles);
  }

  function uploadFiles(files) {
    files = Array.prototype.slice.call(files || []);
    if (!files.length) return Promise.resolve();
    if (!state.session) {
      showMessage('Create or reopen a session first', 'error');
      return Promise.resolve();
    }
    var form = new FormData();
    if (state.filesDir) form.append('dir', state.filesDir);
    files.forEach(function (f) {
      form.append('file', f, f.name);
    });
    showMessage('Uploading ' + files.length + ' file' + (files.length > 1 ? 's' : '') + '\u2026');
    $('files-panel').classList.add('uploading');
    return api('POST', sessPath('/files'), { form: form })
      .then(function (r) {
        var n = r && r.files ? r.files.length : files.length;
        showMessage('Uploaded ' + n + ' file' + (n === 1 ? '' : 's'));
      })
      .catch(function (e) {
        showMessage('Upload failed: ' + e.message, 'error');
      })
      .then(function () {
        $('files-panel').classList.remove('uploading');
        refreshFiles();
      });
  }

  function hasFiles(e) {
    var t = e.dataTransfer && e.dataTransfer.types;
    if (!t) return false;
    for (var i = 0; i < t.length; i++) if (t[i] === 'Files') return true;
    return false;
  }

  function droppedFiles(dt) {
    var out = [];
    var items = dt.items;
    if (items && items.length) {
      for (var i = 0; i < items.length; i++) {
        var it = items[i];
        if (it.kind !== 'file') continue;
        var entry = typeof it.webkitGetAsEntry === 'function' ? it.webkitGetAsEntry() : null;
        if (entry && entry.isDirectory) continue; // folders are not uploaded
        var f = it.getAsFile();
        if (f) out.push(f);
      }
      return out;
    }
    return Array.prototype.slice.call(dt.files || []);
  }

  function bindDropZone() {
    var panel = $('files-panel');
    var depth = 0;
    panel.addEventListener('dragenter', function (e) {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      panel.classList.add('dragover');
    });
    panel.addEventListener('dragover', function (e) {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = state.session ? 'copy' : 'none';
    });
    panel.addEventListener('dragleave', function (e) {
      if (!hasFiles(e)) return;
      depth = Math.max(0, depth - 1);
      if (!depth) panel.classList.remove('dragover');
    });
    panel.addEventListener('drop', function (e) {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.stopPropagation();
      depth = 0;
      panel.classList.remove('dragover');
      uploadFiles(droppedFiles(e.dataTransfer));
    });
    // A file dropped anywhere else must not navigate away from the notebook.
    window.addEventListener('dragover', function (e) {
      if (hasFiles(e)) e.preventDefault();
    });
    window.addEventListener('drop', function (e) {
      if (hasFiles(e)) e.preventDefault();
    });
  }

  // ---------------------------------------------------------------------
  // nbformat import / export
  // ---------------------------------------------------------------------

  function dataToNb(data) {
    var out = {};
    Object.keys(data || {}).forEach(function (k) {
      var v = data[k];
      if (typeof v === 'string' && (k.indexOf('text/') === 0 || k === 'image/svg+xml')) out[k] = splitLines(v);
      else out[k] = v;
    });
    return out;
  }

  function outputToNb(rec) {
    switch (rec.output_type) {
      case 'stream':
        return { output_type: 'stream', name: rec.name, text: splitLines(rec.text) };
      case 'display_data':
        return { output_type: 'display_data', data: dataToNb(rec.data), metadata: rec.metadata || {} };
      case 'execute_result':
        return {
          output_type: 'execute_result',
          data: dataToNb(rec.data),
          metadata: rec.metadata || {},
          execution_count: typeof rec.execution_count === 'number' ? rec.execution_count : null
        };
      case 'error':
        return { output_type: 'error', ename: rec.ename, evalue: rec.evalue, traceback: rec.traceback || [] };
      case 'input':
        if (rec.value === null) return null;
        return {
          output_type: 'stream',
          name: 'stdout',
          text: splitLines(rec.prompt + (rec.password ? '\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7' : rec.value) + '\n')
        };
      default:
        return null;
    }
  }

  function toNotebook(withOutputs) {
    return {
      nbformat: 4,
      nbformat_minor: 5,
      metadata: {
        kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
        language_info: { name: 'python' }
      },
      cells: state.cells.map(function (c) {
        var src = splitLines(c.el.ta.value);
        if (c.type !== 'code') {
          return { cell_type: c.type, id: c.id, metadata: {}, source: src };
        }
        var outs = [];
        if (withOutputs) {
          c.outputs.forEach(function (rec) {
            var o = outputToNb(rec);
            if (!o) return;
            var prev = outs[outs.length - 1];
            if (o.output_type === 'stream' && prev && prev.output_type === 'stream' && prev.name === o.name) {
              prev.text = splitLines(prev.text.join('') + o.text.join(''));
            } else {
              outs.push(o);
            }
          });
        }
        return {
          cell_type: 'code',
          id: c.id,
          metadata: {},
          source: src,
          execution_count: c.executionCount != null ? c.executionCount : null,
          outputs: outs
        };
      })
    };
  }

  function outputFromNb(o) {
    if (!o || typeof o !== 'object') return null;
    switch (o.output_type) {
      case 'stream':
        return { output_type: 'stream', name: o.name === 'stderr' ? 'stderr' : 'stdout', text: joinText(o.text) };
      case 'display_data':
        return { output_type: 'display_data', data: normData(o.data), metadata: o.metadata || {}, display_id: null };
      case 'execute_result':
      case 'pyout':
        return {
          output_type: 'execute_result',
          data: normData(o.data),
          metadata: o.metadata || {},
          execution_count: typeof o.execution_count === 'number' ? o.execution_count : null
        };
      case 'error':
      case 'pyerr':
        return {
          output_type: 'error',
          ename: String(o.ename || 'Error'),
          evalue: String(o.evalue || ''),
          traceback: Array.isArray(o.traceback) ? o.traceback.map(String) : []
        };
      default:
        return null;
    }
  }

  // Replaces the notebook with the cells of an nbformat 4 document.
  function loadNotebook(nb) {
    if (!nb || typeof nb !== 'object' || !Array.isArray(nb.cells)) throw new Error('not a notebook (no cells)');
    if (nb.nbformat !== undefined && nb.nbformat < 4) throw new Error('nbformat ' + nb.nbformat + ' is not supported (need 4)');
    state.cells.forEach(function (c) {
      if (c.execId) state.execs.delete(c.execId);
      dropDisplays(c);
    });
    state.cells = [];
    state.activeCell = null;
    clear($('cells'));
    var seen = new Set();
    nb.cells.forEach(function (c) {
      if (!c || typeof c !== 'object') return;
      var type = c.cell_type === 'markdown' || c.cell_type === 'raw' ? c.cell_type : 'code';
      var id = typeof c.id === 'string' && !seen.has(c.id) ? c.id : null;
      if (id) seen.add(id);
      var outs = type === 'code' && Array.isArray(c.outputs) ? c.outputs.map(outputFromNb).filter(Boolean) : [];
      var cell = newCell({
        id: id,
        type: type,
        source: joinText(c.source),
        executionCount: type === 'code' && typeof c.execution_count === 'number' ? c.execution_count : null,
        outputs: outs
      });
      state.cells.push(cell);
    });
    renderCellOrder();
  }

  function saveIpynb() {
    var nb = toNotebook(true);
    var blob = new Blob([JSON.stringify(nb, null, 1) + '\n'], { type: 'application/x-ipynb+json' });
    var url = URL.createObjectURL(blob);
    var a = document.createElement('a');
    a.href = url;
    a.download = (state.session ? 'glassroom-' + state.session.id.slice(0, 12) : 'notebook') + '.ipynb';
    a.className = 'visually-hidden';
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () {
      URL.revokeObjectURL(url);
    }, 60000);
  }

  function openIpynb(file) {
    if (!file) return;
    file
      .text()
      .then(function (text) {
        loadNotebook(JSON.parse(text));
        if (!state.cells.length) insertCell(0);
        saveNow();
        showMessage('Opened ' + file.name + ' (' + state.cells.length + ' cells)');
      })
      .catch(function (e) {
        showMessage('Could not open ' + file.name + ': ' + e.message, 'error');
      });
  }

  // ---------------------------------------------------------------------
  // Local persistence of the notebook (survives page reloads)
  // ---------------------------------------------------------------------

  function scheduleSave() {
    clearTimeout(state.saveTimer);
    state.saveTimer = setTimeout(saveNow, 800);
  }

  function saveNow() {
    clearTimeout(state.saveTimer);
    if (!lsSet(LS_NOTEBOOK, JSON.stringify(toNotebook(true)))) {
      // Probably over quota: keep at least the code.
      lsSet(LS_NOTEBOOK, JSON.stringify(toNotebook(false)));
    }
  }

  function restoreNotebook() {
    var raw = lsGet(LS_NOTEBOOK);
    if (!raw) return false;
    try {
      loadNotebook(JSON.parse(raw));
      return state.cells.length > 0;
    } catch (_) {
      return false;
    }
  }

  // ---------------------------------------------------------------------
  // Wiring
  // ---------------------------------------------------------------------

  function bindUI() {
    $('token-form').addEventListener('submit', function (e) {
      e.preventDefault();
      saveToken();
    });
    $('new-session').addEventListener('click', function () {
      createSession();
    });
    $('reopen-form').addEventListener('submit', function (e) {
      e.preventDefault();
      reopenSession($('reopen-id').value);
    });
    $('reopen-last').addEventListener('click', function () {
      reopenSession($('reopen-last').dataset.sessionId || lsGet(LS_LAST_SESSION));
    });
    $('end-session').addEventListener('click', function () {
      endSession();
    });
    $('interrupt-btn').addEventListener('click', interruptKernel);
    $('restart-btn').addEventListener('click', restartKernel);
    $('add-cell').addEventListener('click', function () {
      var c = insertCell(state.cells.length);
      c.el.ta.focus();
    });
    $('add-cell-bottom').addEventListener('click', function () {
      var c = insertCell(state.cells.length);
      c.el.ta.focus();
    });
    $('run-all').addEventListener('click', runAll);
    $('save-ipynb').addEventListener('click', saveIpynb);
    $('open-ipynb').addEventListener('change', function (e) {
      var f = e.target.files && e.target.files[0];
      openIpynb(f);
      e.target.value = '';
    });
    $('files-refresh').addEventListener('click', function () {
      refreshFiles();
    });
    $('files-up').addEventListener('click', function () {
      var parts = state.filesDir.split('/').filter(Boolean);
      parts.pop();
      state.filesDir = parts.join('/');
      refreshFiles();
    });
    $('file-input').addEventListener('change', function (e) {
      var files = Array.prototype.slice.call(e.target.files || []);
      e.target.value = '';
      uploadFiles(files);
    });
    bindDropZone();
    window.addEventListener('beforeunload', saveNow);
    document.addEventListener('visibilitychange', function () {
      if (document.visibilityState === 'hidden') saveNow();
      else if (state.session) refreshSession(false);
    });
  }

  function init() {
    initToken();
    bindUI();
    if (!restoreNotebook()) insertCell(0);
    renderSession();
    refreshFiles();
    setInterval(renderCountdown, 1000);
    var last = lsGet(LS_LAST_SESSION);
    if (last) $('reopen-id').value = last;
    window.glassroomReady = true;
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
