// The cell editor: a textarea over a highlighted <pre> of the same text,
// with Tab/Shift+Tab indentation and run keys.

import { clear, el } from './dom.js';
import { highlightPython } from './highlight.js';

// createEditor returns an editor for one cell. opts:
//   source         the initial text
//   python         highlight as Python (otherwise plain text)
//   label          accessible name
//   onChange(text) after every edit
//   onFocus()      when it gets the focus
//   run(advance)   Shift+Enter (advance true) and Ctrl+Enter (false)
// The editor is {dom, value(), focus(opts), hasFocus(), refresh()}.
export function createEditor({ source, python, label, onChange, onFocus, run }) {
  const dom = el('div', 'editor');
  const pre = el('pre', 'highlight');
  pre.setAttribute('aria-hidden', 'true');
  const ta = el('textarea', 'code');
  ta.spellcheck = false;
  ta.rows = 1;
  ta.wrap = 'soft';
  ta.setAttribute('autocomplete', 'off');
  ta.setAttribute('autocorrect', 'off');
  ta.setAttribute('autocapitalize', 'off');
  ta.setAttribute('aria-label', label);
  ta.value = source || '';
  dom.appendChild(pre);
  dom.appendChild(ta);

  function refresh() {
    clear(pre);
    const src = ta.value;
    if (python) pre.appendChild(highlightPython(src));
    else pre.appendChild(document.createTextNode(src));
    // A <pre> ignores one trailing newline; the textarea does not.
    pre.appendChild(document.createTextNode('\n'));
  }

  ta.addEventListener('input', () => {
    refresh();
    onChange(ta.value);
  });
  ta.addEventListener('focus', onFocus);
  ta.addEventListener('keydown', (e) => {
    if (e.isComposing) return;
    if (e.key === 'Enter' && e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      run(true);
      return;
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.altKey) {
      e.preventDefault();
      run(false);
      return;
    }
    if (e.key === 'Tab' && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      if (e.shiftKey) dedent(ta);
      else indent(ta);
    }
  });
  refresh();

  return {
    dom,
    value: () => ta.value,
    focus: (opts) => ta.focus(opts),
    hasFocus: () => document.activeElement === ta,
    // refresh redraws the highlighting (after the text changed without an
    // input event).
    refresh
  };
}

// replaceRange replaces ta.value[a:b] with text, keeping the browser's undo
// stack when execCommand is available.
function replaceRange(ta, a, b, text) {
  if (a === b && text === '') return;
  ta.focus();
  ta.setSelectionRange(a, b);
  const expected = ta.value.slice(0, a) + text + ta.value.slice(b);
  let ok = false;
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

// lineRange returns [start, end) of the whole lines the selection s..e touches.
export function lineRange(v, s, e) {
  const start = v.lastIndexOf('\n', s - 1) + 1;
  let endPos = e;
  if (endPos > s && v.charAt(endPos - 1) === '\n') endPos--;
  const nl = v.indexOf('\n', endPos);
  return [start, nl === -1 ? v.length : nl];
}

function indent(ta) {
  const v = ta.value;
  const s = ta.selectionStart;
  const e = ta.selectionEnd;
  if (s === e || v.slice(s, e).indexOf('\n') === -1) {
    replaceRange(ta, s, e, '    ');
    return;
  }
  const r = lineRange(v, s, e);
  const out = v
    .slice(r[0], r[1])
    .split('\n')
    .map((l) => '    ' + l)
    .join('\n');
  replaceRange(ta, r[0], r[1], out);
  ta.setSelectionRange(r[0], r[0] + out.length);
}

function dedent(ta) {
  const v = ta.value;
  const s = ta.selectionStart;
  const e = ta.selectionEnd;
  const r = lineRange(v, s, e);
  let removedFirst = 0;
  let removedTotal = 0;
  const out = v
    .slice(r[0], r[1])
    .split('\n')
    .map((l, i) => {
      const m = /^( {1,4}|\t)/.exec(l);
      const n = m ? m[0].length : 0;
      if (i === 0) removedFirst = n;
      removedTotal += n;
      return l.slice(n);
    })
    .join('\n');
  if (removedTotal === 0) return;
  replaceRange(ta, r[0], r[1], out);
  if (s === e) {
    const caret = Math.max(r[0], s - removedFirst);
    ta.setSelectionRange(caret, caret);
  } else {
    ta.setSelectionRange(r[0], r[0] + out.length);
  }
}
