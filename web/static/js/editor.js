// @ts-check
// The cell editor: CodeMirror 6 with the syntax mode of the notebook's
// language (Python, R, JavaScript, TypeScript, shell), bracket matching, undo
// history, multiple cursors (Ctrl+click, Alt+drag, Ctrl+D) and search
// (Ctrl+F), plus the notebook's keys and the kernel's help:
//   Tab        completion list from the kernel after a name (indent
//              otherwise, or accept the selected completion)
//   Shift+Tab  the kernel's help for the name at the cursor in a popup
//              (again: with more detail); dedent at the start of a line
//   Shift+Enter / Ctrl+Enter  run (and advance)
//   Esc        leave the editor (command mode)
// While the kernel has not answered (it answers only between cells), a
// small popup says so; typing goes on.

import {
  Compartment,
  EditorState,
  EditorView,
  Prec,
  StateEffect,
  StreamLanguage,
  StateField,
  acceptCompletion,
  autocompletion,
  bracketMatching,
  classHighlighter,
  closeCompletion,
  completionStatus,
  crosshairCursor,
  defaultKeymap,
  drawSelection,
  dropCursor,
  highlightSelectionMatches,
  highlightSpecialChars,
  history,
  historyKeymap,
  indentLess,
  indentMore,
  indentOnInput,
  indentUnit,
  javascript,
  keymap,
  python,
  r,
  rectangularSelection,
  search,
  searchKeymap,
  shell,
  showTooltip,
  startCompletion,
  syntaxHighlighting
} from '../vendor/vendor.js';
import { el } from './dom.js';
import { renderAnsi } from './ansi.js';
import { Superseded, cpIndex, utf16Index } from './assist.js';
import { joinText } from './text.js';

/**
 * @import { Completion, CompletionContext, CompletionResult, Extension, StateEffectType } from '../vendor/vendor.js'
 * @import { JsonObject } from './nbformat.js'
 */

/**
 * The kernel's help, as the editor asks for it (see assist.js; cursors in
 * code points). Replies are the server's JSON, unchecked.
 * @typedef {object} EditorAssist
 * @property {(code: string, cursor: number) => Promise<JsonObject>} complete {matches, cursor_start, cursor_end, types?}
 * @property {(code: string, cursor: number, detail: boolean) => Promise<JsonObject>} inspect {found, data, metadata}
 * @property {(kind: 'complete' | 'inspect') => void} cancel drops the pending request of kind
 * @property {() => boolean} busy whether the kernel runs a cell (it answers after it)
 * @property {(err: Error) => void} failed reports a request that failed
 */

/**
 * The editor of one cell.
 * @typedef {object} Editor
 * @property {HTMLElement} dom goes into the page
 * @property {() => string} value the text
 * @property {(text: string) => void} setValue replaces the text (one step of the undo history)
 * @property {(mode: string | null) => void} setMode switches the language: a syntax mode ('python'...; '' none) of code, or null for text (no kernel help)
 * @property {() => void} focus
 * @property {(from: number, to: number) => void} selectRange selects text from..to (offsets in value()) and scrolls it into view, without taking the focus
 * @property {() => boolean} hasFocus
 * @property {() => void} destroy when the cell goes
 */

/**
 * The popup under the cursor: 'waiting' for the kernel, or its 'help'
 * (detail: the more detailed help).
 * @typedef {{kind: 'waiting' | 'help', dom: HTMLElement, pos: number, detail?: boolean}} Tip
 */

const WAIT_TIP_MS = 150; // show "waiting" only for answers that take a while

// ---- dark theme: follows the system setting, live

const darkQuery = typeof globalThis.matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null;
/** @type {Map<EditorView, Compartment>} live editor -> its theme compartment */
const views = new Map();
/** @type {() => Extension} */
const themeOf = () => (darkQuery && darkQuery.matches ? EditorView.theme({}, { dark: true }) : []);
if (darkQuery) {
  darkQuery.addEventListener('change', () => {
    for (const [v, theme] of views) v.dispatch({ effects: theme.reconfigure(themeOf()) });
  });
}

// ---- the popup under the cursor: "waiting for the kernel" or help text

/** @type {StateEffectType<Tip | null>} */
const setTip = StateEffect.define();
const tipField = StateField.define({
  create: () => /** @type {Tip | null} */ (null),
  update(tip, tr) {
    for (const e of tr.effects) if (e.is(setTip)) return e.value;
    if (!tip) return tip;
    if (tip.kind === 'help' && (tr.docChanged || tr.selection)) return null;
    if (tr.docChanged) return Object.assign({}, tip, { pos: tr.changes.mapPos(tip.pos) });
    return tip;
  },
  provide: (f) =>
    showTooltip.from(f, (tip) =>
      tip ? { pos: tip.pos, above: false, arrow: false, create: () => ({ dom: tip.dom }) } : null
    )
});

/**
 * @param {EditorView} view
 * @param {Tip['kind']} kind
 * @param {HTMLElement} dom
 * @param {number} [pos] the main cursor's by default
 */
function showTip(view, kind, dom, pos) {
  view.dispatch({ effects: setTip.of({ kind, dom, pos: pos == null ? view.state.selection.main.head : pos }) });
}

/**
 * @param {EditorView} view
 * @param {Tip['kind']} [kind] only a tip of this kind
 */
function hideTip(view, kind) {
  const tip = view.state.field(tipField, false);
  if (tip && (!kind || tip.kind === kind)) view.dispatch({ effects: setTip.of(null) });
}

/**
 * @param {'complete' | 'inspect'} what
 * @param {boolean} busy
 */
function waitingDom(what, busy) {
  const d = el('div', 'assist-tip assist-waiting');
  d.textContent = (what === 'complete' ? 'Completing' : 'Looking up help') + ': waiting for the kernel' + (busy ? ' (a cell is running)' : '') + '\u2026';
  return d;
}

// waitFor shows the waiting popup if promise takes a while, and hides it
// when it settles.
/**
 * @template T
 * @param {EditorView} view
 * @param {'complete' | 'inspect'} what
 * @param {Promise<T>} promise
 * @param {() => boolean} busy
 * @returns {Promise<T>}
 */
function waitFor(view, what, promise, busy) {
  const timer = setTimeout(() => showTip(view, 'waiting', waitingDom(what, busy())), WAIT_TIP_MS);
  const done = () => {
    clearTimeout(timer);
    hideTip(view, 'waiting');
  };
  promise.then(done, done);
  return promise;
}

// ---- completion

/** @type {{[type: string]: string}} */
const TYPE_ICONS = {
  function: 'function',
  builtin_function_or_method: 'function',
  method: 'method',
  class: 'class',
  type: 'class',
  module: 'namespace',
  keyword: 'keyword',
  instance: 'variable',
  statement: 'variable',
  param: 'variable',
  property: 'property',
  path: 'text',
  magic: 'keyword'
};

/**
 * @param {EditorAssist} assist
 * @returns {(context: CompletionContext) => Promise<CompletionResult | null>}
 */
function kernelCompletions(assist) {
  return async (context) => {
    if (!context.explicit) return null;
    const code = context.state.doc.toString();
    const view = context.view;
    let reply;
    try {
      const p = assist.complete(code, cpIndex(code, context.pos));
      context.addEventListener('abort', () => assist.cancel('complete'));
      reply = await (view ? waitFor(view, 'complete', p, assist.busy) : p);
    } catch (e) {
      if (!(e instanceof Superseded) && view) assist.failed(/** @type {Error} */ (e)); // assist rejects with Errors
      return null;
    }
    /** @type {string[]} */
    const matches = Array.isArray(reply.matches) ? reply.matches.filter((/** @type {unknown} */ m) => typeof m === 'string') : [];
    if (!matches.length) return null;
    /** @type {Map<string, JsonObject>} */
    const info = new Map();
    for (const t of Array.isArray(reply.types) ? reply.types : []) if (t && typeof t.text === 'string') info.set(t.text, t);
    const from = utf16Index(code, reply.cursor_start);
    const to = Math.max(from, utf16Index(code, reply.cursor_end));
    return {
      from,
      to: to >= context.pos ? to : context.pos,
      options: matches.map((m) => {
        const t = info.get(m);
        /** @type {Completion} */
        const o = { label: m };
        if (t && TYPE_ICONS[t.type]) o.type = TYPE_ICONS[t.type];
        if (t && t.type) o.detail = t.signature ? t.signature : t.type;
        return o;
      }),
      validFor: /^[\w$]*$/
    };
  };
}

// ---- inspection

/**
 * @param {JsonObject} reply
 * @param {boolean} detail
 */
function helpDom(reply, detail) {
  const d = el('div', 'assist-tip inspect-tip' + (detail ? ' detail' : ''));
  const data = reply && reply.data && typeof reply.data === 'object' ? reply.data : {};
  const text = joinText(data['text/plain']);
  if (!reply.found || !text) {
    d.classList.add('not-found');
    d.textContent = 'No help found here.';
    return d;
  }
  const pre = el('pre', 'inspect-text');
  renderAnsi(pre, text);
  d.appendChild(pre);
  d.appendChild(el('div', 'inspect-hint', detail ? 'Esc closes' : 'Shift+Tab again: more \u00b7 Esc closes'));
  return d;
}

/**
 * @param {EditorView} view
 * @param {EditorAssist} assist
 */
function inspect(view, assist) {
  const state = view.state;
  const tip = state.field(tipField, false);
  const detail = !!(tip && tip.kind === 'help' && !tip.detail);
  const code = state.doc.toString();
  const pos = state.selection.main.head;
  waitFor(view, 'inspect', assist.inspect(code, cpIndex(code, pos), detail), assist.busy).then(
    (reply) => {
      if (view.state.doc.toString() !== code || view.state.selection.main.head !== pos) return; // moved on
      view.dispatch({ effects: setTip.of({ kind: 'help', detail, dom: helpDom(reply, detail), pos }) });
    },
    (e) => {
      if (!(e instanceof Superseded)) assist.failed(e);
    }
  );
  return true;
}

// ---- keys

// afterText reports whether the main cursor follows something other
// than indentation on its line (Tab then completes instead of indenting).
/** @param {EditorState} state */
function afterText(state) {
  const sel = state.selection.main;
  if (!sel.empty) return false;
  const line = state.doc.lineAt(sel.head);
  return /\S/.test(line.text.slice(0, sel.head - line.from));
}

/** @param {EditorState} state */
function multiLine(state) {
  return state.selection.ranges.some((r) => state.doc.lineAt(r.from).number !== state.doc.lineAt(r.to).number);
}

/** @param {EditorView} view */
function insertIndent(view) {
  view.dispatch(view.state.replaceSelection('    '), { scrollIntoView: true, userEvent: 'input' });
  return true;
}

/**
 * @param {object} opts
 * @param {(advance: boolean) => void} opts.run
 * @param {() => void} opts.escape
 * @param {EditorAssist | null} opts.assist
 * @param {() => boolean} opts.isCode
 */
function notebookKeys({ run, escape, assist, isCode }) {
  return Prec.highest(
    keymap.of([
      { key: 'Shift-Enter', run: () => (run(true), true) },
      { key: 'Mod-Enter', run: () => (run(false), true) },
      {
        key: 'Escape',
        run: (view) => {
          if (completionStatus(view.state)) return false; // the completion list closes first
          if (view.state.field(tipField, false)) {
            hideTip(view);
            assist && assist.cancel('inspect');
            return true;
          }
          escape();
          return true;
        }
      },
      {
        key: 'Tab',
        run: (view) => {
          if (completionStatus(view.state) === 'active') return acceptCompletion(view);
          if (multiLine(view.state)) return indentMore(view);
          if (isCode() && assist && afterText(view.state)) return startCompletion(view);
          return insertIndent(view);
        },
        shift: (view) => {
          if (isCode() && assist && !multiLine(view.state) && afterText(view.state)) {
            closeCompletion(view);
            return inspect(view, assist);
          }
          return indentLess(view);
        }
      }
    ])
  );
}

// ---- syntax modes

/** @type {{[mode: string]: () => Extension}} */
const MODES = {
  python: () => python(),
  javascript: () => javascript(),
  typescript: () => javascript({ typescript: true }),
  r: () => StreamLanguage.define(r),
  shell: () => StreamLanguage.define(shell)
};
/** @type {Map<string, Extension>} made once, shared by the editors */
const modes = new Map();

// modeOf is the editor extension of a syntax mode (languages.js names
// them); plain text for null, '' and modes it does not know.
/**
 * @param {string | null} mode
 * @returns {Extension}
 */
function modeOf(mode) {
  if (!mode || !Object.prototype.hasOwnProperty.call(MODES, mode)) return [];
  let ext = modes.get(mode);
  if (!ext) {
    ext = MODES[mode]();
    modes.set(mode, ext);
  }
  return ext;
}

// createEditor returns the editor of one cell. opts:
//   source          the initial text
//   mode            code in a syntax mode (modeOf: 'python', ...; '' for
//                   code without one), or null for text (Markdown, raw):
//                   no kernel help
//   label           accessible name
//   onChange(text)  after every edit
//   onFocus()       when it gets the focus
//   run(advance)    Shift+Enter (advance) and Ctrl+Enter
//   escape()        Esc with nothing to close
//   assist          {complete, inspect, cancel, busy(), failed(err)} or null
// It returns {dom, value(), setMode(mode), focus(), hasFocus(), destroy()}:
// dom goes into the page, destroy() when the cell goes.
/**
 * @param {object} opts
 * @param {string} opts.source
 * @param {string | null} opts.mode
 * @param {string} opts.label
 * @param {(text: string) => void} opts.onChange
 * @param {() => void} opts.onFocus
 * @param {(advance: boolean) => void} opts.run
 * @param {() => void} opts.escape
 * @param {EditorAssist | null} opts.assist
 * @returns {Editor}
 */
export function createEditor({ source, mode, label, onChange, onFocus, run, escape, assist }) {
  const language = new Compartment();
  const theme = new Compartment();
  let code = mode !== null;
  const view = new EditorView({
    state: EditorState.create({
      doc: source || '',
      extensions: [
        notebookKeys({ run, escape, assist, isCode: () => code }),
        history(),
        drawSelection(),
        dropCursor(),
        highlightSpecialChars(),
        EditorState.allowMultipleSelections.of(true),
        rectangularSelection(),
        crosshairCursor(),
        indentOnInput(),
        indentUnit.of('    '),
        EditorState.tabSize.of(4),
        bracketMatching(),
        syntaxHighlighting(classHighlighter),
        highlightSelectionMatches(),
        search({ top: true }),
        autocompletion({ override: assist ? [kernelCompletions(assist)] : [], activateOnTyping: false, icons: true, closeOnBlur: true }),
        tipField,
        keymap.of([...searchKeymap, ...historyKeymap, ...defaultKeymap]),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'aria-label': label, autocorrect: 'off', autocapitalize: 'off', spellcheck: 'false' }),
        language.of(modeOf(mode)),
        theme.of(themeOf()),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) onChange(u.state.doc.toString());
          if (u.focusChanged && u.view.hasFocus) onFocus();
        })
      ]
    })
  });
  views.set(view, theme);
  const dom = el('div', 'editor');
  dom.appendChild(view.dom);

  return {
    dom,
    value: () => view.state.doc.toString(),
    setValue(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    // setMode switches the language (see createEditor's mode).
    setMode(m) {
      code = m !== null;
      view.dispatch({ effects: language.reconfigure(modeOf(m)) });
    },
    focus() {
      view.focus();
    },
    selectRange(from, to) {
      const n = view.state.doc.length;
      const f = Math.max(0, Math.min(from, n));
      view.dispatch({ selection: { anchor: f, head: Math.max(f, Math.min(to, n)) }, scrollIntoView: true });
    },
    hasFocus: () => view.hasFocus,
    destroy() {
      views.delete(view);
      view.destroy();
    }
  };
}
