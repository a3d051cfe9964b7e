// @ts-check
// glassroom notebook UI: the entry point. It builds the modules, hands each
// the state and the other modules it needs, routes WebSocket events and
// binds the page's controls. When the page is ready it sets
// window.glassroomReady (the browser test waits for it).

import { $, createMessages } from './dom.js';
import { createApi, sessionPath } from './api.js';
import { createAssist } from './assist.js';
import { createCells } from './cells.js';
import { bindCommandMode } from './commands.js';
import { createFiles } from './files.js';
import { createFind } from './find.js';
import { createKernels } from './kernels.js';
import { createNotebook } from './notebook.js';
import { createOutputs } from './outputs.js';
import { createHelp } from './pager.js';
import { createPorts } from './ports.js';
import { createSessions } from './session.js';
import { createSessionList } from './sessionlist.js';
import { LS_LAST_SESSION, lsGet } from './storage.js';
import { createStore } from './store.js';
import { createTabs } from './tabs.js';
import { createTerminal } from './terminal.js';
import { encPath } from './text.js';
import { createWidgets } from './widgets.js';
import { createConnection } from './ws.js';

/**
 * @import { Cells } from './cells.js'
 * @import { EditorAssist } from './editor.js'
 * @import { Files } from './files.js'
 * @import { Kernels } from './kernels.js'
 * @import { Notebook } from './notebook.js'
 * @import { Sessions } from './session.js'
 * @import { Connection, Frame, ServerEvent } from './ws.js'
 */

function start() {
  const store = createStore();
  const msg = createMessages($('message'));
  const request = createApi(store);

  // The modules refer to each other through these late-bound calls, so the
  // order they are built in does not matter.
  /** @type {Connection} */
  let conn;
  /** @type {Sessions} */
  let sessions;
  /** @type {Files} */
  let files;
  /** @type {Cells} */
  let cells;
  /** @type {Notebook} */
  let notebook;
  /** @type {Kernels} */
  let kernels;
  /** @param {Frame} frame */
  const send = (frame) => conn.send(frame);
  const changed = () => notebook.scheduleSave();

  // Markdown images and links reach workspace files with the key in the
  // URL, as downloads may.
  /** @param {string} path */
  const fileUrl = (path) =>
    store.session ? sessionPath(store.session.id, '/files/' + encPath(path)) + '?token=' + encodeURIComponent(store.token) : null;

  const assist = createAssist({ store, conn: { isOpen: () => conn.isOpen(), send }, request });
  /** @type {EditorAssist} */
  const editorAssist = {
    complete: assist.complete,
    inspect: assist.inspect,
    cancel: assist.cancel,
    busy: () => !!store.session && sessions.notebookState() === 'busy',
    failed: (e) => msg(store.session ? 'The kernel could not help: ' + e.message : 'Completion and help need a session: create or reopen one', 'error')
  };
  const widgets = createWidgets({
    send,
    msg,
    renderOutputs: (box, list) => outputs.renderList(box, list),
    strayOutput: (node, rec) => cells.addOutputNear(node, rec)
  });
  const outputs = createOutputs({
    send,
    onChange: changed,
    focusCell: (cell) => cell.editor.focus(),
    fileUrl,
    widgetView: widgets.renderView,
    disposeWidgets: widgets.disposeUnder
  });
  const help = createHelp({
    els: { pane: $('help-panel'), title: $('help-title'), body: $('help-body'), close: $('help-close') },
    render: (w, data) => outputs.render(w, data)
  });
  cells = createCells({
    store,
    outputs,
    send,
    msg,
    onChange: changed,
    onRunDone: () => {
      sessions.refreshSoon();
      kernels.askInfo();
      ports.refresh();
    },
    onContext: (context, language) => sessions.learnContext(context, language),
    assist: editorAssist,
    fileUrl,
    showHelp: help.show,
    kernelStarting: () => sessions.isStarting()
  });
  kernels = createKernels({
    store,
    request,
    msg,
    context: () => sessions.notebookContext(),
    onLanguage: (previous) => {
      kernels.askInfo();
      cells.setLanguage(previous);
      sessions.renderKernelStatus();
      changed();
    },
    onKernels: () => {
      cells.renderPrompts(); // the languages' names
      sessions.renderKernelStatus();
    }
  });
  notebook = createNotebook({ store, cells, kernels, msg, request });
  files = createFiles({ store, request, msg, openNotebook: (path) => notebook.openFromWorkspace(path) });
  const ports = createPorts({ store, request, busy: () => !!store.session && sessions.notebookState() === 'busy' });
  const terminal = createTerminal({
    store,
    msg,
    els: { panel: $('terminal-panel'), screen: $('terminal-screen'), status: $('terminal-status'), toggle: $('terminal-toggle') }
  });
  conn = createConnection({
    store,
    onSnapshot: (ev) => {
      sessions.setKernelState(ev.state, null);
      tabs.render();
    },
    onEvent: dispatch,
    onOpen: () => {
      sessions.renderKernelStatus();
      sessions.refresh(true);
      files.refreshSoon();
      widgets.connected();
    },
    onClose: (code) => {
      widgets.connectionLost(code);
      assist.dropAll();
      sessions.renderKernelStatus();
    },
    checkAlive: () => sessions.refresh(false)
  });
  sessions = createSessions({
    store,
    request,
    conn,
    msg,
    onOpened: () => {
      kernels.load();
      kernels.askInfo();
      files.reset();
      files.refresh();
      ports.sessionChanged();
      cells.refreshMarkdown();
      terminal.sessionChanged();
      cells.runWaiting();
      sessionList.refresh();
      tabs.sessionOpened();
    },
    onClosed: () => {
      widgets.kernelGone(null);
      terminal.sessionChanged();
      assist.dropAll();
      cells.abandonRuns(null);
      cells.refreshMarkdown();
      files.refresh();
      ports.sessionChanged();
    },
    onKernelDead: (note, context) => cells.abandonRuns(note, sessions.inContext(context))
  });

  const tabs = createTabs({
    store,
    request,
    cells,
    kernels,
    notebook,
    sessions: () => sessions,
    listing: () => sessionList.shown(),
    onLeave: () => find.close(false),
    terminal: () => terminal.toggle(),
    upload: () => $('file-input').click()
  });
  const find = createFind({ store, cells });
  const sessionList = createSessionList({
    store,
    request,
    msg,
    open: (id, language) => tabs.openSession(id, language),
    listed: (list) => tabs.learnStates(list),
    endCurrent: () => endSession()
  });

  // forkSession forks the page's session (variables and files: the
  // gateway captures it and starts a copy) with the notebook saved into
  // its workspace first, and opens the copy in a new tab, where the
  // notebook comes from the copy's workspace.
  function forkSession() {
    const s = store.session;
    if (!s) return;
    const btn = $('fork-btn');
    btn.disabled = true;
    msg('Forking session ' + s.id + '…');
    notebook
      .saveToWorkspace(true)
      .then(() => request('POST', sessionPath(s.id, '/fork'), { json: { count: 1 } }))
      .then((/** @type {{forks: {session?: {id: string, language: string}, error?: {message: string}}[]}} */ r) => {
        const f = r.forks[0];
        if (!f || !f.session) throw new Error(f && f.error ? f.error.message : 'no fork');
        msg('Forked into session ' + f.session.id + ': its variables and files are a copy of this one\'s');
        tabs.openSession(f.session.id, f.session.language);
      })
      .catch((e) => msg('Fork failed: ' + e.message, 'error'))
      .finally(() => {
        btn.disabled = !store.session;
      });
  }

  // endSession ends the page's session, asking first when the notebook has
  // changes not saved into the workspace.
  function endSession() {
    if (notebook.isDirty() && !confirm('The notebook has changes not saved into the workspace. End the session anyway?')) return;
    sessions.end();
  }

  // dispatch routes one WebSocket event (after the snapshot, deduplicated).
  /** @param {ServerEvent} ev */
  function dispatch(ev) {
    switch (ev.type) {
      case 'kernel':
        sessions.setKernelState(ev.state, ev.reason, ev.context);
        tabs.render();
        // A kernel that restarts or dies takes its comms along.
        if (ev.state === 'restarting' || ev.state === 'dead') widgets.kernelGone(typeof ev.context === 'string' && ev.context ? ev.context : 'default');
        if (ev.state === 'busy') cells.onKernelBusy(sessions.inContext(typeof ev.context === 'string' && ev.context ? ev.context : 'default'));
        return;
      case 'context':
        sessions.onContextEvent(ev);
        if (ev.state === 'deleted' && typeof ev.context === 'string') widgets.kernelGone(ev.context);
        return;
      case 'comm':
      case 'comm_sent':
      case 'comm_info_reply':
        widgets.handle(ev);
        return;
      case 'file':
        files.refreshSoon();
        return;
      case 'rejected':
        if (!assist.onRejected(ev) && !widgets.onRejected(ev)) cells.onRejected(ev);
        return;
      case 'complete_reply':
      case 'inspect_reply':
        assist.onReply(ev);
        return;
      case 'update_display':
        outputs.updateDisplay(ev);
        return;
      case 'gap':
        // Resumed from further back than the session's backlog keeps (a
        // tab away for long, a long disconnect).
        msg('Some output of this session was lost while the page was away (it is older than what the session keeps)', 'error');
        return;
      default:
        // An Output widget may take an execution's output (with out: ...).
        if (widgets.captureEvent(ev)) return;
        cells.onExecEvent(ev);
    }
  }

  function bindUI() {
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      sessions.saveToken();
      kernels.load(true);
      readyOnOpen();
    });
    $('account-btn').addEventListener('click', () => sessions.toggleAccountMenu());
    $('account-change').addEventListener('click', () => sessions.changeKey());
    $('account-forget').addEventListener('click', () => sessions.forgetKey());
    $('token-offer-keep').addEventListener('click', () => sessions.answerOffer(false));
    $('token-offer-use').addEventListener('click', () => {
      sessions.answerOffer(true);
      kernels.load(true);
      readyOnOpen();
    });
    $('language-select').addEventListener('change', () => kernels.chosen());
    $('token-offer').addEventListener('keydown', (/** @type {KeyboardEvent} */ e) => {
      if (e.key === 'Escape') sessions.answerOffer(false);
    });
    $('new-session').addEventListener('click', () => sessions.create());
    $('reopen-form').addEventListener('submit', (e) => {
      e.preventDefault();
      sessions.reopen($('reopen-id').value);
    });
    $('reopen-last').addEventListener('click', () => {
      sessions.reopen($('reopen-last').dataset.sessionId || lsGet(LS_LAST_SESSION));
    });
    $('end-session').addEventListener('click', endSession);
    $('sessions-toggle').addEventListener('click', () => sessionList.toggle());
    $('interrupt-btn').addEventListener('click', () => sessions.interrupt());
    $('restart-btn').addEventListener('click', () => sessions.restart());
    $('fork-btn').addEventListener('click', forkSession);
    const addAtEnd = () => cells.insert(store.cells.length).editor.focus();
    $('add-cell').addEventListener('click', addAtEnd);
    $('add-cell-bottom').addEventListener('click', addAtEnd);
    $('run-all').addEventListener('click', () => cells.runAll());
    $('restart-run-all').addEventListener('click', () => {
      if (!store.session) {
        cells.runAll(); // says what is missing, or waits for the starting kernel
        return;
      }
      sessions.restart().then((r) => {
        if (r !== 'failed') cells.runAll();
      });
    });
    $('clear-outputs').addEventListener('click', () => cells.clearAllOutputs());
    $('scroll-running').addEventListener('click', () => {
      if (!cells.scrollToRunning()) msg('No cell is running');
    });
    $('save-ipynb').addEventListener('click', () => notebook.saveIpynb());
    const openInput = $('open-ipynb');
    openInput.addEventListener('change', () => {
      notebook.openIpynb(openInput.files && openInput.files[0]);
      openInput.value = '';
    });
    $('terminal-toggle').addEventListener('click', () => terminal.toggle());
    $('terminal-hide').addEventListener('click', () => terminal.toggle());
    $('terminal-restart').addEventListener('click', () => terminal.restart());
    files.bind();
    find.bind();
    bindCommandMode($('cells'), { store, cells });
    window.addEventListener('beforeunload', () => notebook.saveNow());
    // Ctrl+S (Cmd+S) saves the notebook into the workspace, not the page.
    document.addEventListener(
      'keydown',
      (/** @type {KeyboardEvent} */ e) => {
        if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && (e.key === 's' || e.key === 'S')) {
          e.preventDefault();
          notebook.saveToWorkspace();
        }
      },
      true
    );
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') notebook.saveNow();
      else if (store.session) sessions.refresh(false);
    });
  }

  sessions.initToken();
  bindUI();
  tabs.bind();
  tabs.init(); // the live tab's notebook is the one restored below
  if (!notebook.restore()) cells.insert(0);
  kernels.render();
  kernels.load();
  sessions.render();
  files.refresh();
  setInterval(() => sessions.renderCountdown(), 1000);
  const last = lsGet(LS_LAST_SESSION);
  if (last) $('reopen-id').value = last;
  // Ready on open: with a key, a kernel starts (or the last session comes
  // back) without a click, and the first cell takes the keyboard.
  readyOnOpen();
  if (store.cells[0] && !document.querySelector('#token-offer:not([hidden])')) cells.edit(store.cells[0]);
  window.glassroomReady = true;

  function readyOnOpen() {
    sessions.autoOpen({ last: tabs.activeSession() }).then(() => {
      if (!store.session) cells.abandonWaiting();
    });
  }
}

// Module scripts run after the document is parsed.
start();
