// The cell editor: CodeMirror 6 with Python mode, bracket matching, undo
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
  keymap,
  python,
  rectangularSelection,
  search,
  searchKeymap,
  showTooltip,
  startCompletion,
  syntaxHighlighting
} from '../vendor/vendor.js';
import { el } from './dom.js';
import { renderAnsi } from './ansi.js';
import { Superseded, cpIndex, utf16Index } from './assist.js';
import { joinText } from './text.js';

const WAIT_TIP_MS = 150; // show "waiting" only for answers that take a while

// ---- dark theme: follows the system setting, live

const darkQuery = globalThis.matchMedia ? matchMedia('(prefers-color-scheme: dark)') : null;
const views = new Map(); // live editor -> its theme compartment
const themeOf = () => (darkQuery && darkQuery.matches ? EditorView.theme({}, { dark: true }) : []);
if (darkQuery) {
  darkQuery.addEventListener('change', () => {
    for (const [v, theme] of views) v.dispatch({ effects: theme.reconfigure(themeOf()) });
  });
}

// ---- the popup under the cursor: "waiting for the kernel" or help text

const setTip = StateEffect.define();
const tipField = StateField.define({
  create: () => null,
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

function showTip(view, kind, dom, pos) {
  view.dispatch({ effects: setTip.of({ kind, dom, pos: pos == null ? view.state.selection.main.head : pos }) });
}

function hideTip(view, kind) {
  const tip = view.state.field(tipField, false);
  if (tip && (!kind || tip.kind === kind)) view.dispatch({ effects: setTip.of(null) });
}

function waitingDom(what, busy) {
  const d = el('div', 'assist-tip assist-waiting');
  d.textContent = (what === 'complete' ? 'Completing' : 'Looking up help') + ': waiting for the kernel' + (busy ? ' (a cell is running)' : '') + '\u2026';
  return d;
}

// waitFor shows the waiting popup if promise takes a while, and hides it
// when it settles.
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
      if (!(e instanceof Superseded) && view) assist.failed(e);
      return null;
    }
    const matches = Array.isArray(reply.matches) ? reply.matches.filter((m) => typeof m === 'string') : [];
    if (!matches.length) return null;
    const info = new Map();
    for (const t of Array.isArray(reply.types) ? reply.types : []) if (t && typeof t.text === 'string') info.set(t.text, t);
    const from = utf16Index(code, reply.cursor_start);
    const to = Math.max(from, utf16Index(code, reply.cursor_end));
    return {
      from,
      to: to >= context.pos ? to : context.pos,
      options: matches.map((m) => {
        const t = info.get(m);
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
function afterText(state) {
  const sel = state.selection.main;
  if (!sel.empty) return false;
  const line = state.doc.lineAt(sel.head);
  return /\S/.test(line.text.slice(0, sel.head - line.from));
}

function multiLine(state) {
  return state.selection.ranges.some((r) => state.doc.lineAt(r.from).number !== state.doc.lineAt(r.to).number);
}

function insertIndent(view) {
  view.dispatch(view.state.replaceSelection('    '), { scrollIntoView: true, userEvent: 'input' });
  return true;
}

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

// createEditor returns the editor of one cell. opts:
//   source          the initial text
//   python          Python mode (code cells); plain text otherwise
//   label           accessible name
//   onChange(text)  after every edit
//   onFocus()       when it gets the focus
//   run(advance)    Shift+Enter (advance) and Ctrl+Enter
//   escape()        Esc with nothing to close
//   assist          {complete, inspect, cancel, busy(), failed(err)} or null
// It returns {dom, value(), setPython(on), focus(), hasFocus(), destroy()}:
// dom goes into the page, destroy() when the cell goes.
export function createEditor({ source, python: isPython, label, onChange, onFocus, run, escape, assist }) {
  const language = new Compartment();
  const theme = new Compartment();
  let code = !!isPython;
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
        language.of(code ? python() : []),
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
    // setPython switches between Python mode (code cells) and plain text.
    setPython(on) {
      code = !!on;
      view.dispatch({ effects: language.reconfigure(code ? python() : []) });
    },
    focus() {
      view.focus();
    },
    hasFocus: () => view.hasFocus,
    destroy() {
      views.delete(view);
      view.destroy();
    }
  };
}
