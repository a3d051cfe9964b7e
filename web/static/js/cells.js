// @ts-check
// Cells: the notebook's list (store.cells), each cell's DOM, running cells
// and following their executions' events.
//
// A cell is {id, type: 'code'|'markdown'|'raw', source, executionCount,
// outputs (see nbformat.js), status: 'idle'|'queued'|'running', execId (the
// execute id it waits for, or null), queuePos, startedAt, gotEvents,
// clearPending, lastDuration, lastStatus, runLanguage and runContext (where
// its last run went), rendered (a Markdown cell shows its rendering, not its
// source), editor (editor.js), el: {root, lang, count, elapsed, typeSelect,
// runBtn, view, outputs}}.
//
// Code cells run in the notebook's language (store.language): each execute
// names the language, so it runs in that language's default context of the
// session (the gateway starts it on first use). A cell's prompt shows the
// language it ran in ("R [3]"), or will run in.
//
// Focus tells the mode, as in Jupyter: in the editor is edit mode; on the
// cell itself (its root element) is command mode (see commands.js).
/** @import { DoneEvent, LogEvent, RejectedFrame, SetNextInputEvent } from '../../types/wire' */

import { $, clear, el, toolButton } from './dom.js';
import { createEditor } from './editor.js';
import { editorMode, kernelOf, label } from './languages.js';
import { renderMarkdown } from './markdown.js';
import { outputFromEvent } from './nbformat.js';
import { helpSubject, nextInput } from './pager.js';
import { fmtElapsed, randomId } from './text.js';

/**
 * @import { Msg } from './dom.js'
 * @import { Editor, EditorAssist } from './editor.js'
 * @import { CellData, OutputRecord } from './nbformat.js'
 * @import { Outputs } from './outputs.js'
 * @import { Store } from './store.js'
 * @import { Frame } from './ws.js'
 */

/** @typedef {'code' | 'markdown' | 'raw'} CellType */

/**
 * Cells taken off the page with their runs (detach, attach).
 * @typedef {{cells: Cell[], waiting: Cell[]}} Detached
 */

/**
 * The elements of a cell.
 * @typedef {object} CellElements
 * @property {HTMLElement} root the cell (focused in command mode)
 * @property {HTMLElement} lang the prompt's language
 * @property {HTMLElement} count the execution count
 * @property {HTMLElement} elapsed the run time, or the queue position
 * @property {HTMLSelectElement} typeSelect
 * @property {HTMLButtonElement} runBtn
 * @property {HTMLElement} view a Markdown cell's rendering
 * @property {HTMLElement} outputs
 */

/**
 * A cell of the notebook (see the top of this file).
 * @typedef {object} Cell
 * @property {string} id
 * @property {CellType} type
 * @property {string} source
 * @property {number | null} executionCount
 * @property {OutputRecord[]} outputs
 * @property {string | null} execId the execute id it waits for
 * @property {'idle' | 'queued' | 'running'} status
 * @property {number} startedAt performance.now() when it was submitted
 * @property {number | null} queuePos
 * @property {boolean} gotEvents
 * @property {boolean} clearPending a clear_output with wait is pending
 * @property {number | null} lastDuration ms of the last run
 * @property {string | null} lastStatus of the last run ('ok', 'error', 'timeout'...)
 * @property {string | null} runLanguage the kernel its last run (in this page) went to
 * @property {string | null} runContext the context that ran it (from its events; 'default' is the first), null until known
 * @property {boolean} rendered a Markdown cell shows its rendering
 * @property {Editor} editor
 * @property {CellElements} el
 */

/**
 * What a new cell starts with: CellData, all fields optional, and whether
 * a Markdown cell shows its rendering (default true).
 * @typedef {Partial<CellData> & {rendered?: boolean}} CellSpec
 */

/** @typedef {ReturnType<typeof createCells>} Cells */

/** @type {readonly CellType[]} */
const CELL_TYPES = ['code', 'markdown', 'raw'];

/**
 * isCellType reports whether v names a cell type.
 * @param {unknown} v
 * @returns {v is CellType}
 */
function isCellType(v) {
  return CELL_TYPES.includes(/** @type {CellType} */ (v));
}

// Events that put output into a cell (and so apply a pending clear_output).
/** @type {{[type: string]: boolean}} */
const OUTPUT_EVENTS = { stream: true, display: true, result: true, error: true, input_request: true };

// What a cell that called exit() or quit() shows (ask_exit): the page
// never ends the session for it. IPython's exit() stops the kernel (the
// gateway starts it again, without the variables) unless it is
// exit(keep_kernel=True); the event's keep_kernel says which.
const ASK_EXIT_NOTE =
  'The code asked to exit: the kernel stops and starts again without its variables, unless it was exit(keep_kernel=True). The session stays open (End deletes it).';
const ASK_EXIT_KEPT = 'The code asked to exit, keeping the kernel: it goes on, and the session stays open (End deletes it).';

/** @type {{[status: string]: string}} */
const STATUS_NOTES = {
  timeout: 'Execution timed out',
  interrupted: 'Execution interrupted',
  died: 'The kernel died during execution'
};

// createCells manages store.cells. deps: store, outputs (outputs.js),
// send(frame) on the WebSocket, msg (status messages), onChange() after
// any change worth saving, onRunDone() after an execution ended,
// onContext(context, language) when an execution's events name the
// context its language's runs go to, assist (the editor's kernel help, see
// editor.js), fileUrl(path) for Markdown images and links (null without a
// session), showHelp(data, subject, back) for an execution's page event
// (pager.js; back selects the cell again).
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Outputs} deps.outputs
 * @param {(frame: Frame) => void} deps.send
 * @param {Msg} deps.msg
 * @param {() => void} deps.onChange
 * @param {() => void} deps.onRunDone
 * @param {(context: string, language: string) => void} deps.onContext
 * @param {EditorAssist | null} deps.assist
 * @param {(path: string) => string | null} deps.fileUrl
 * @param {(data: unknown, subject: string, back: () => void) => void} deps.showHelp
 * @param {() => boolean} [deps.kernelStarting] whether a kernel is on its way (a code cell run without a session waits for it)
 */
export function createCells({ store, outputs, send, msg, onChange, onRunDone, onContext, assist, fileUrl, showHelp, kernelStarting = () => false }) {
  /** @type {Map<string, Cell>} execute id -> cell */
  const execs = new Map();
  // Code cells run while the kernel was starting, in order: they run once
  // a session is open (runWaiting).
  /** @type {Cell[]} */
  let waiting = [];
  /** @type {Cell | null} */
  let activeCell = null;
  let execCounter = 0;
  let ticker = 0;

  // ---- building

  /**
   * @param {CellSpec} [opts]
   * @returns {Cell}
   */
  function newCell(opts) {
    opts = opts || {};
    // editor and el are set by build, before anything can see the cell.
    const cell = /** @type {Cell} */ (/** @type {unknown} */ ({
      id: opts.id && /^[A-Za-z0-9_-]{1,64}$/.test(opts.id) ? opts.id : randomId(),
      type: isCellType(opts.type) ? opts.type : 'code',
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
      runLanguage: typeof opts.language === 'string' ? opts.language : null,
      runContext: null,
      rendered: opts.rendered !== undefined ? !!opts.rendered : true,
      editor: null,
      el: null
    }));
    build(cell);
    for (const o of opts.outputs || []) outputs.add(cell, o, true);
    renderStatus(cell); // the prompt of a cell with outputs names their language
    return cell;
  }

  /** @param {Cell} cell */
  function build(cell) {
    const root = el('div', 'cell');
    root.dataset.cellId = cell.id;
    root.tabIndex = -1; // focusable: command mode

    const gutter = el('div', 'cell-gutter');
    const prompt = el('div', 'exec-prompt');
    const lang = el('span', 'exec-lang');
    const count = el('span', 'exec-count');
    const elapsed = el('span', 'elapsed');
    prompt.appendChild(lang);
    prompt.appendChild(count);
    gutter.appendChild(prompt);
    gutter.appendChild(elapsed);

    const main = el('div', 'cell-main');
    const bar = el('div', 'cell-toolbar');
    const typeSelect = el('select', 'cell-type-select');
    typeSelect.title = 'Cell type (command mode: y code, m Markdown, r raw)';
    typeSelect.setAttribute('aria-label', 'Cell type');
    for (const t of CELL_TYPES) {
      const o = el('option', null, t === 'markdown' ? 'Markdown' : t);
      o.value = t;
      typeSelect.appendChild(o);
    }
    const runBtn = toolButton('run-cell', '\u25B6 Run', 'Run (Ctrl+Enter)');
    const upBtn = toolButton('move-up', '\u2191', 'Move up');
    const downBtn = toolButton('move-down', '\u2193', 'Move down');
    const addBtn = toolButton('add-below', '+', 'Add a cell below');
    const clearBtn = toolButton('clear-output', 'Clear', 'Clear output');
    const delBtn = toolButton('delete-cell', '\u2715', 'Delete cell');
    for (const b of [typeSelect, runBtn, upBtn, downBtn, addBtn, clearBtn, delBtn]) bar.appendChild(b);

    cell.editor = createEditor({
      source: cell.source,
      mode: cell.type === 'code' ? editorMode(store.language, store.kernels) : null,
      label: 'Cell editor',
      onChange: (text) => {
        cell.source = text;
        onChange();
      },
      onFocus: () => setActive(cell),
      run: (advance) => (advance ? runAndAdvance(cell) : run(cell)),
      escape: () => select(cell),
      assist
    });

    const view = el('div', 'md-view');
    view.title = 'Double-click (or Enter) to edit';
    const outs = el('div', 'outputs');
    main.appendChild(bar);
    main.appendChild(cell.editor.dom);
    main.appendChild(view);
    main.appendChild(outs);
    root.appendChild(gutter);
    root.appendChild(main);
    cell.el = { root, lang, count, elapsed, typeSelect, runBtn, view, outputs: outs };

    typeSelect.addEventListener('change', () => {
      if (isCellType(typeSelect.value)) setType(cell, typeSelect.value);
    });
    runBtn.addEventListener('click', () => run(cell));
    upBtn.addEventListener('click', () => move(cell, -1));
    downBtn.addEventListener('click', () => move(cell, 1));
    addBtn.addEventListener('click', () => insert(indexOf(cell) + 1).editor.focus());
    clearBtn.addEventListener('click', () => {
      outputs.clear(cell);
      onChange();
    });
    delBtn.addEventListener('click', () => remove(cell));
    view.addEventListener('dblclick', () => edit(cell));
    // A click on the cell outside its editor and controls selects it
    // (command mode).
    root.addEventListener('mousedown', (e) => {
      if (e.target instanceof Element && e.target.closest('.editor, button, select, input, a, iframe')) return;
      setActive(cell);
      setTimeout(() => {
        if (!root.contains(document.activeElement) || document.activeElement === root) root.focus({ preventScroll: true });
      }, 0);
    });
    renderType(cell);
  }

  // renderType shows what depends on the cell's type.
  /** @param {Cell} cell */
  function renderType(cell) {
    const root = cell.el.root;
    for (const t of CELL_TYPES) root.classList.toggle('cell-' + t, cell.type === t);
    cell.el.typeSelect.value = cell.type;
    cell.el.runBtn.disabled = cell.type === 'raw';
    cell.el.runBtn.title = cell.type === 'markdown' ? 'Render (Ctrl+Enter)' : 'Run (Ctrl+Enter)';
    renderMarkdownView(cell);
    renderStatus(cell);
  }

  /** @param {Cell} cell */
  function renderMarkdownView(cell) {
    const show = cell.type === 'markdown' && cell.rendered;
    cell.el.root.classList.toggle('rendered', show);
    const view = cell.el.view;
    clear(view);
    if (!show) return;
    const src = cell.editor.value();
    if (!src.trim()) {
      view.appendChild(el('p', 'md-empty', 'Empty Markdown cell: double-click or press Enter to edit.'));
      return;
    }
    view.appendChild(renderMarkdown(src, fileUrl));
  }

  // setType changes the cell's type (outputs go when it stops being code).
  /**
   * @param {Cell} cell
   * @param {CellType} type
   */
  function setType(cell, type) {
    if (!CELL_TYPES.includes(type) || type === cell.type) return;
    if (cell.execId) {
      msg('The cell is running: wait for it, or interrupt it, before changing its type', 'error');
      cell.el.typeSelect.value = cell.type;
      return;
    }
    const wasCode = cell.type === 'code';
    cell.type = type;
    if (wasCode) {
      outputs.clear(cell);
      cell.executionCount = null;
      cell.lastDuration = null;
    }
    cell.rendered = false;
    cell.editor.setMode(type === 'code' ? editorMode(store.language, store.kernels) : null);
    renderType(cell);
    onChange();
  }

  // ---- the list

  /** @param {Cell} cell */
  function indexOf(cell) {
    return store.cells.indexOf(cell);
  }

  function renderOrder() {
    const container = $('cells');
    store.cells.forEach((c, i) => {
      c.el.root.dataset.index = String(i);
      if (container.children[i] !== c.el.root) container.insertBefore(c.el.root, container.children[i] || null);
    });
    while (container.lastChild && container.children.length > store.cells.length) container.removeChild(container.lastChild);
  }

  // insert adds a new cell at index (the end if out of range) and returns it.
  /**
   * @param {number} index
   * @param {CellSpec} [opts]
   * @returns {Cell}
   */
  function insert(index, opts) {
    const cell = newCell(opts);
    if (index < 0 || index > store.cells.length) index = store.cells.length;
    store.cells.splice(index, 0, cell);
    renderOrder();
    onChange();
    return cell;
  }

  /** @param {Cell} cell */
  function remove(cell) {
    const i = indexOf(cell);
    if (i < 0) return;
    if (cell.execId) execs.delete(cell.execId);
    cell.execId = null;
    outputs.dropDisplays(cell);
    const wasSelected = document.activeElement === cell.el.root;
    store.cells.splice(i, 1);
    cell.el.root.remove();
    cell.editor.destroy();
    if (activeCell === cell) activeCell = null;
    renderOrder();
    const next = store.cells[i] || store.cells[i - 1];
    if (next && wasSelected) select(next);
    else if (next) next.editor.focus();
    onChange();
  }

  /**
   * @param {Cell} cell
   * @param {number} delta
   */
  function move(cell, delta) {
    const i = indexOf(cell);
    const j = i + delta;
    if (i < 0 || j < 0 || j >= store.cells.length) return;
    const hadFocus = cell.editor.hasFocus();
    const wasSelected = document.activeElement === cell.el.root;
    store.cells.splice(i, 1);
    store.cells.splice(j, 0, cell);
    renderOrder();
    if (hadFocus) cell.editor.focus();
    else if (wasSelected) select(cell);
    onChange();
  }

  // replaceAll replaces every cell with new ones made from specs
  // ({id, type, source, executionCount, outputs}, as nbformat.js reads them).
  /** @param {CellSpec[]} specs */
  function replaceAll(specs) {
    for (const c of store.cells) {
      if (c.execId) execs.delete(c.execId);
      outputs.dropDisplays(c);
      c.editor.destroy();
    }
    store.cells = [];
    activeCell = null;
    $('cells').replaceChildren();
    for (const s of specs) store.cells.push(newCell(s));
    renderOrder();
  }

  // detach takes the cells off the page without ending their runs: a tab
  // left while its cells run keeps them (and their editors) aside, and
  // attach brings them back; the events of their runs are replayed then
  // (see ws.js position). A detached cell's runs are not followed: its
  // execute ids are dropped from the map until attach.
  /** @returns {Detached} */
  function detach() {
    const kept = { cells: store.cells, waiting };
    for (const c of kept.cells) if (c.execId) execs.delete(c.execId);
    store.cells = [];
    waiting = [];
    activeCell = null;
    $('cells').replaceChildren();
    return kept;
  }

  // attach replaces the page's cells by detached ones and follows their
  // runs again.
  /** @param {Detached} kept */
  function attach(kept) {
    replaceAll([]);
    store.cells = kept.cells;
    waiting = kept.waiting;
    for (const c of store.cells) {
      if (c.execId) execs.set(c.execId, c);
      renderStatus(c);
    }
    renderOrder();
    if (store.cells.some((c) => c.status !== 'idle')) startTicker();
  }

  // discard ends detached cells for good (their tab was closed).
  /** @param {Detached} kept */
  function discard(kept) {
    for (const c of kept.cells) {
      outputs.dropDisplays(c);
      c.editor.destroy();
    }
    kept.cells = [];
    kept.waiting = [];
  }

  // snapshot returns the cells as plain data for nbformat.toNotebook: a
  // code cell whose outputs came from another language than the
  // notebook's says which.
  /** @returns {CellData[]} */
  function snapshot() {
    return store.cells.map((c) => {
      const lang = c.type === 'code' ? languageOf(c) : store.language;
      return {
        id: c.id,
        type: c.type,
        source: c.editor.value(),
        executionCount: c.executionCount,
        outputs: c.outputs,
        language: lang !== store.language ? lang : null
      };
    });
  }

  /** @param {Cell} cell */
  function setActive(cell) {
    if (activeCell && activeCell !== cell && activeCell.el) activeCell.el.root.classList.remove('active');
    activeCell = cell;
    cell.el.root.classList.add('active');
  }

  // select puts the cell in command mode: it has the focus, its editor not.
  /** @param {Cell} cell */
  function select(cell) {
    setActive(cell);
    cell.el.root.focus({ preventScroll: true });
    cell.el.root.scrollIntoView({ block: 'nearest' });
  }

  // edit puts the cell in edit mode (a rendered Markdown cell shows its
  // source again).
  /** @param {Cell} cell */
  function edit(cell) {
    if (cell.type === 'markdown' && cell.rendered) {
      cell.rendered = false;
      renderMarkdownView(cell);
    }
    cell.editor.focus();
  }

  // selected is the cell in command mode, or null.
  /** @returns {Cell | null} */
  function selected() {
    const c = activeCell;
    return c && document.activeElement === c.el.root ? c : null;
  }

  // ---- status

  // showsRun reports whether a code cell shows a run: running, or its
  // count or outputs.
  /** @param {Cell} cell */
  function showsRun(cell) {
    return cell.execId !== null || cell.executionCount != null || cell.outputs.length > 0;
  }

  // languageOf is the language a code cell's prompt shows: the one its run
  // went to while it shows that run, else the notebook's.
  /** @param {Cell} cell */
  function languageOf(cell) {
    return showsRun(cell) && cell.runLanguage ? cell.runLanguage : store.language;
  }

  /** @param {Cell} cell */
  function renderStatus(cell) {
    const busy = cell.status === 'queued' || cell.status === 'running';
    cell.el.count.textContent =
      cell.type !== 'code' ? '' : busy ? '[*]' : '[' + (cell.executionCount != null ? cell.executionCount : ' ') + ']';
    const lang = cell.type === 'code' ? languageOf(cell) : '';
    cell.el.lang.textContent = lang ? label(lang, store.kernels) : '';
    cell.el.lang.title = lang ? (showsRun(cell) ? 'Ran in ' : 'Runs in ') + kernelOf(lang, store.kernels).display_name : '';
    cell.el.root.dataset.language = lang;
    cell.el.root.classList.toggle('running', cell.status === 'running');
    cell.el.root.classList.toggle('queued', cell.status === 'queued');
    cell.el.root.dataset.status = cell.status;
    const e = cell.el.elapsed;
    e.className = 'elapsed';
    if (busy) {
      const t = fmtElapsed(performance.now() - cell.startedAt);
      if (cell.status === 'queued') e.textContent = 'queued' + (cell.queuePos != null ? ' #' + cell.queuePos : '') + ' ' + t;
      else e.textContent = t;
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

  // The ticker redraws the elapsed time of busy cells until none is left.
  function startTicker() {
    if (ticker) return;
    ticker = setInterval(() => {
      let any = false;
      for (const c of store.cells) {
        if (c.status === 'queued' || c.status === 'running') {
          any = true;
          renderStatus(c);
        }
      }
      if (!any) {
        clearInterval(ticker);
        ticker = 0;
      }
    }, 100);
  }

  // ---- running

  // run submits a code cell, or renders a Markdown one; it returns false
  // when there is no session for code.
  /**
   * @param {Cell} cell
   * @returns {boolean}
   */
  function run(cell) {
    if (cell.type === 'markdown') {
      cell.source = cell.editor.value();
      cell.rendered = true;
      renderMarkdownView(cell);
      onChange();
      return true;
    }
    if (cell.type !== 'code') return true;
    if (!store.session) {
      if (!kernelStarting()) {
        msg('Create or reopen a session first', 'error');
        return false;
      }
      cell.source = cell.editor.value();
      outputs.clear(cell);
      if (!waiting.includes(cell)) waiting.push(cell);
      cell.status = 'queued';
      cell.queuePos = null;
      cell.startedAt = performance.now();
      renderStatus(cell);
      startTicker();
      msg('The kernel is starting: the cell runs as soon as it is ready');
      return true;
    }
    cell.source = cell.editor.value();
    if (cell.execId) execs.delete(cell.execId);
    outputs.clear(cell);
    const id = cell.id + '-' + Date.now().toString(36) + '-' + ++execCounter;
    cell.execId = id;
    execs.set(id, cell);
    cell.status = 'queued';
    cell.queuePos = null;
    cell.gotEvents = false;
    cell.startedAt = performance.now();
    cell.lastDuration = null;
    cell.lastStatus = null;
    cell.runLanguage = store.language;
    cell.runContext = null;
    renderStatus(cell);
    startTicker();
    send({ type: 'execute', id, code: cell.source, language: store.language });
    onChange();
    return true;
  }

  // runAndAdvance runs the cell and moves on to the next one, in edit
  // mode, or in command mode when asked from there (a new cell at the end
  // is always edited).
  /**
   * @param {Cell} cell
   * @param {boolean} [commandMode]
   */
  function runAndAdvance(cell, commandMode) {
    if (!run(cell)) return;
    const i = indexOf(cell);
    let next = store.cells[i + 1];
    if (!next) {
      next = insert(i + 1);
      commandMode = false;
    }
    if (commandMode) select(next);
    else edit(next);
    next.el.root.scrollIntoView({ block: 'nearest' });
  }

  // clearAllOutputs empties every cell's outputs, counts and times (the
  // kernel keeps its state).
  function clearAllOutputs() {
    for (const c of store.cells) {
      if (c.type !== 'code' || c.status === 'running' || c.status === 'queued') continue;
      outputs.clear(c);
      c.executionCount = null;
      c.lastDuration = null;
      c.lastStatus = null;
      renderStatus(c);
    }
    onChange();
  }

  // scrollToRunning brings the running cell (else the first queued one)
  // into view and selects it; false when no cell is busy.
  function scrollToRunning() {
    const c = store.cells.find((x) => x.status === 'running') || store.cells.find((x) => x.status === 'queued');
    if (!c) return false;
    c.el.root.scrollIntoView({ block: 'center' });
    select(c);
    return true;
  }

  // runWaiting runs the cells that waited for the kernel (a session is
  // open now).
  function runWaiting() {
    const list = waiting;
    waiting = [];
    for (const c of list) {
      if (!store.cells.includes(c) || c.status !== 'queued' || c.execId) continue;
      c.status = 'idle';
      run(c);
    }
  }

  // abandonWaiting gives up on the cells that waited for a kernel that
  // did not come.
  function abandonWaiting() {
    const list = waiting;
    waiting = [];
    for (const c of list) {
      if (c.execId) continue;
      c.status = 'idle';
      renderStatus(c);
    }
  }

  function runAll() {
    for (const c of store.cells) if (c.type === 'markdown') run(c);
    if (!store.session && !kernelStarting()) {
      msg('Create or reopen a session first', 'error');
      return;
    }
    for (const c of store.cells) if (c.type === 'code') run(c);
  }

  /**
   * @param {Cell} cell
   * @param {DoneEvent} ev the done event
   */
  function finish(cell, ev) {
    execs.delete(String(ev.id));
    cell.execId = null;
    cell.status = 'idle';
    cell.queuePos = null;
    cell.clearPending = false;
    if (typeof ev.execution_count === 'number') cell.executionCount = ev.execution_count;
    cell.lastDuration = typeof ev.duration_ms === 'number' ? ev.duration_ms : performance.now() - cell.startedAt;
    const status = ev.status ? String(ev.status) : 'ok';
    cell.lastStatus = status;
    outputs.cancelPendingInputs(cell);
    if (STATUS_NOTES[status]) {
      outputs.add(cell, { output_type: 'notice', cls: 'output-notice status-' + status, text: STATUS_NOTES[status] });
    }
    if (ev.truncated) {
      outputs.add(cell, { output_type: 'notice', cls: 'truncated-marker', text: 'Output truncated: the kernel produced more output than the gateway keeps.' });
    }
    renderStatus(cell);
    onRunDone();
  }

  // finishLocally ends a run without a server "done" (session closed,
  // kernel died), with an optional note.
  /**
   * @param {Cell} cell
   * @param {string | null} note
   */
  function finishLocally(cell, note) {
    if (cell.execId) execs.delete(cell.execId);
    cell.execId = null;
    cell.status = 'idle';
    cell.queuePos = null;
    cell.clearPending = false;
    outputs.cancelPendingInputs(cell);
    if (note) outputs.add(cell, { output_type: 'notice', cls: 'output-notice status-died', text: note });
    renderStatus(cell);
  }

  // abandonRuns ends every run in flight locally, or those of the cells
  // only selects (a context's kernel died, the others' runs go on).
  /**
   * @param {string | null} note
   * @param {(cell: Cell) => boolean} [only]
   */
  function abandonRuns(note, only) {
    for (const c of store.cells) if (c.execId && (!only || only(c))) finishLocally(c, note);
    if (!only) execs.clear();
  }

  // setLanguage shows a change of the notebook's language (store.language)
  // from previous: the prompts of the cells it will run, and the editors'
  // syntax mode. Cells that show outputs keep the language those came from.
  /** @param {string} previous */
  function setLanguage(previous) {
    const mode = editorMode(store.language, store.kernels);
    for (const c of store.cells) {
      if (c.type === 'code') {
        if (!c.runLanguage && showsRun(c)) c.runLanguage = previous;
        c.editor.setMode(mode);
      }
      renderStatus(c);
    }
  }

  // renderPrompts shows the prompts again (the languages' names changed).
  function renderPrompts() {
    for (const c of store.cells) renderStatus(c);
  }

  // ---- execution events

  // The kernel goes busy once per execution it starts, in the order they
  // were queued; a cell that prints nothing (a long loop) would otherwise
  // look queued until it ends. The first of our waiting cells that has no
  // execution ahead of it is the one that started; the others move up one
  // place. Each context (kernel) has its own queue: inContext selects the
  // cells that run in the context that went busy.
  /** @param {(cell: Cell) => boolean} inContext */
  function onKernelBusy(inContext) {
    let started = false;
    execs.forEach((cell, id) => {
      if (cell.execId !== id || cell.status !== 'queued' || !inContext(cell)) return;
      if (cell.queuePos != null && cell.queuePos > 1) {
        cell.queuePos--;
      } else if (!started) {
        started = true;
        cell.status = 'running';
        cell.queuePos = null;
      } else {
        return;
      }
      renderStatus(cell);
    });
  }

  // cellOf returns the cell waiting for execute id, or null (not ours, or
  // superseded by a newer run).
  /**
   * @param {unknown} id
   * @returns {Cell | null}
   */
  function cellOf(id) {
    if (id === undefined || id === null) return null;
    const key = String(id);
    const cell = execs.get(key);
    return cell && cell.execId === key ? cell : null;
  }

  // onExecEvent applies an event that carries an execute id.
  /** @param {LogEvent} ev */
  function onExecEvent(ev) {
    const cell = cellOf(ev.id);
    if (!cell) return;
    if (cell.runContext === null && cell.runLanguage) {
      // The gateway ran it in its language's default context.
      cell.runContext = typeof ev.context === 'string' && ev.context ? ev.context : 'default';
      onContext(cell.runContext, cell.runLanguage);
    }
    if (ev.type === 'queued' && cell.status === 'running') return; // raced with its start
    if (cell.clearPending && OUTPUT_EVENTS[String(ev.type)]) outputs.clear(cell);
    if (ev.type !== 'queued') {
      cell.gotEvents = true;
      if (cell.status === 'queued') {
        cell.status = 'running';
        renderStatus(cell);
      }
    }
    // stream, display, result and error events become outputs (nbformat.js
    // maps them); the others change the cell's state.
    const rec = outputFromEvent(ev);
    if (rec) {
      if (rec.output_type === 'execute_result' && rec.execution_count !== null) cell.executionCount = rec.execution_count;
      if (rec.output_type === 'stream') outputs.appendStream(cell, rec);
      else outputs.add(cell, rec);
    }
    switch (ev.type) {
      case 'queued':
        cell.queuePos = typeof ev.position === 'number' ? ev.position : null;
        cell.status = 'queued';
        renderStatus(cell);
        break;
      case 'input_request':
        outputs.showInputRequest(cell, ev);
        break;
      case 'clear_output':
        // wait: clear when the next output arrives (no flicker).
        if (ev.wait) cell.clearPending = true;
        else outputs.clear(cell);
        break;
      case 'page':
        showHelp(ev.data, helpSubject(cell.source), () => select(cell));
        break;
      case 'set_next_input':
        setNextInput(cell, ev);
        break;
      case 'ask_exit':
        outputs.add(cell, { output_type: 'notice', cls: 'output-notice ask-exit', text: ev.keep_kernel === true ? ASK_EXIT_KEPT : ASK_EXIT_NOTE });
        msg(ev.keep_kernel === true ? ASK_EXIT_KEPT : ASK_EXIT_NOTE);
        break;
      case 'done':
        finish(cell, ev);
        break;
    }
    onChange();
  }

  // setNextInput applies a set_next_input event of cell's run: with
  // replace (%load) the text replaces the cell's; else it goes into the
  // next cell when that is an empty code cell (Shift+Enter made it), or a
  // new code cell below.
  /**
   * @param {Cell} cell
   * @param {SetNextInputEvent} ev
   */
  function setNextInput(cell, ev) {
    const next = nextInput(ev);
    if (!next) return;
    if (next.replace) {
      cell.editor.setValue(next.text);
      cell.source = next.text;
      return;
    }
    const i = indexOf(cell);
    if (i < 0) return;
    const below = store.cells[i + 1];
    if (below && below.type === 'code' && !below.execId && !below.outputs.length && below.editor.value() === '') {
      below.editor.setValue(next.text);
      below.source = next.text;
      return;
    }
    insert(i + 1, { source: next.text });
  }

  // onRejected shows a rejected frame in the cell it was about, or as a
  // message.
  /** @param {RejectedFrame} ev */
  function onRejected(ev) {
    const text = 'Rejected' + (ev.code ? ' (' + ev.code + ')' : '') + ': ' + (ev.message || 'bad request');
    const cell = cellOf(ev.id);
    if (!cell) {
      msg(text, 'error');
      return;
    }
    outputs.add(cell, { output_type: 'notice', cls: 'output-notice output-rejected', text });
    if (!cell.gotEvents) finishLocally(cell, null);
  }

  // addOutputNear adds an output to the cell that holds node (a widget's
  // view: what its callback printed); false when no cell holds it.
  /**
   * @param {Node} node
   * @param {OutputRecord} rec
   */
  function addOutputNear(node, rec) {
    const cell = store.cells.find((c) => c.el.root.contains(node));
    if (!cell) return false;
    if (rec.output_type === 'stream') outputs.appendStream(cell, rec);
    else outputs.add(cell, rec);
    onChange();
    return true;
  }

  // refreshMarkdown renders the Markdown cells again (workspace images
  // resolve only with a session).
  function refreshMarkdown() {
    for (const c of store.cells) if (c.type === 'markdown' && c.rendered) renderMarkdownView(c);
  }

  return {
    insert,
    remove,
    refreshMarkdown,
    move,
    replaceAll,
    detach,
    attach,
    discard,
    snapshot,
    select,
    selected,
    edit,
    setType,
    indexOf,
    run,
    runAndAdvance,
    runAll,
    runWaiting,
    abandonWaiting,
    clearAllOutputs,
    scrollToRunning,
    abandonRuns,
    setLanguage,
    renderPrompts,
    onKernelBusy,
    onExecEvent,
    onRejected,
    addOutputNear
  };
}
