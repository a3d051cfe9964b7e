// @ts-check
// Find in the notebook: Ctrl+F (Cmd+F) outside the cells' editors (in
// command mode, say), or the toolbar's Find, opens a bar that searches every cell's source and what
// its outputs show, case-insensitively. Enter goes to the next match and
// Shift+Enter to the previous (wrapping); the bar says "3 of 12". A match
// in a source is selected in its editor; a match in outputs scrolls them
// into view. Cells with matches are marked. Replace changes the current
// match of a source, Replace all every one (outputs are never changed).
// Esc closes the bar and gives the keyboard back to the cell.

import { $ } from './dom.js';

/**
 * @import { Cell, Cells } from './cells.js'
 * @import { Store } from './store.js'
 */

/** @typedef {ReturnType<typeof createFind>} Find */

/**
 * A match: in cell's source (from..to), or in its outputs' text.
 * @typedef {{cell: Cell, where: 'source' | 'outputs', from: number, to: number}} Match
 */

const MAX_MATCHES = 10000; // a bound on the work per keystroke

// occurrences returns where needle (lower case) is in text, case-insensitively.
/**
 * @param {string} text
 * @param {string} needle
 * @param {number} room how many more may be found
 * @returns {number[]}
 */
export function occurrences(text, needle, room) {
  /** @type {number[]} */
  const out = [];
  if (!needle) return out;
  const hay = text.toLowerCase();
  // toLowerCase keeps the length of most text; where it does not, offsets
  // would drift: search the text as it is then.
  const exact = hay.length !== text.length;
  const h = exact ? text : hay;
  for (let i = h.indexOf(needle); i >= 0 && out.length < room; i = h.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

// createFind returns the find bar. deps: store, cells.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Cells} deps.cells
 */
export function createFind({ store, cells }) {
  /** @type {Match[]} */
  let matches = [];
  let current = -1;
  /** @type {Cell | null} */
  let from = null; // the cell that had the keyboard when the bar opened

  const bar = () => $('find-bar');
  const input = () => $('find-input');
  const isOpen = () => !bar().hidden;

  function open() {
    const sel = window.getSelection();
    const picked = sel ? sel.toString() : '';
    from = store.cells.find((c) => c.el.root.contains(document.activeElement)) || cells.selected();
    bar().hidden = false;
    if (picked && !picked.includes('\n') && picked.length <= 200) input().value = picked;
    input().focus();
    input().select();
    search(true);
  }

  // close hides the bar; refocus (the default) gives the keyboard back to
  // the cell of the current match, or the one that had it.
  /** @param {boolean} [refocus] */
  function close(refocus) {
    if (!isOpen()) return;
    const c = refocus === false ? null : current >= 0 && matches[current] ? matches[current].cell : from;
    bar().hidden = true;
    mark([]);
    for (const x of store.cells) x.el.root.classList.remove('find-current');
    matches = [];
    current = -1;
    if (c && store.cells.includes(c)) cells.select(c);
  }

  // search finds the matches again (the text or the notebook changed);
  // keep: stay on the match at or after the current one (or after, where
  // the search goes on).
  /**
   * @param {boolean} keep
   * @param {Match} [after]
   */
  function search(keep, after) {
    const needle = input().value.toLowerCase();
    const was = after || (current >= 0 && matches[current] ? matches[current] : null);
    /** @type {Match[]} */
    const found = [];
    if (needle) {
      for (const cell of store.cells) {
        for (const at of occurrences(cell.editor.value(), needle, MAX_MATCHES - found.length))
          found.push({ cell, where: 'source', from: at, to: at + needle.length });
        const shown = cell.el.outputs.textContent || '';
        for (const at of occurrences(shown, needle, MAX_MATCHES - found.length))
          found.push({ cell, where: 'outputs', from: at, to: at + needle.length });
        if (found.length >= MAX_MATCHES) break;
      }
    }
    matches = found;
    current = -1;
    if (found.length) {
      current = 0;
      if (keep && was) {
        const wi = store.cells.indexOf(was.cell);
        const i = found.findIndex((m) => {
          const mi = store.cells.indexOf(m.cell);
          return mi > wi || (mi === wi && (m.where === was.where ? m.from >= was.from : m.where === 'outputs'));
        });
        current = i >= 0 ? i : 0;
      }
    }
    mark(found);
    show();
  }

  /** @param {Match[]} found */
  function mark(found) {
    const hit = new Set(found.map((m) => m.cell));
    for (const c of store.cells) c.el.root.classList.toggle('find-hit', hit.has(c));
  }

  // show says where we are and brings the current match into view.
  function show() {
    const count = $('find-count');
    const none = input().value !== '' && !matches.length;
    count.textContent = !input().value ? '' : none ? 'no match' : current + 1 + ' of ' + matches.length + (matches.length >= MAX_MATCHES ? '+' : '');
    bar().classList.toggle('find-none', none);
    for (const c of store.cells) c.el.root.classList.remove('find-current');
    const m = matches[current];
    if (!m) return;
    m.cell.el.root.classList.add('find-current');
    if (m.where === 'source') {
      m.cell.editor.selectRange(m.from, m.to);
      m.cell.el.root.scrollIntoView({ block: 'nearest' });
    } else {
      m.cell.el.outputs.scrollIntoView({ block: 'nearest' });
    }
  }

  /** @param {number} step +1 or -1 */
  function go(step) {
    if (!isOpen()) open();
    if (!matches.length) return;
    current = (current + step + matches.length) % matches.length;
    show();
  }

  // replaceOne replaces the current match when it is in a source, and
  // goes on to the next one after the replacement. The matches are found
  // again first: the cells may have changed since.
  function replaceOne() {
    search(true);
    const m = matches[current];
    if (!m || m.where !== 'source') return;
    const text = m.cell.editor.value();
    const by = $('find-replace').value;
    m.cell.editor.setValue(text.slice(0, m.from) + by + text.slice(m.to));
    search(true, { cell: m.cell, where: 'source', from: m.from + by.length, to: m.from + by.length });
  }

  // replaceAll replaces every match in the sources (found again first);
  // it returns how many.
  function replaceAll() {
    search(false);
    const by = $('find-replace').value;
    /** @type {Map<Cell, Match[]>} */
    const per = new Map();
    for (const m of matches) {
      if (m.where !== 'source') continue;
      const list = per.get(m.cell) || [];
      list.push(m);
      per.set(m.cell, list);
    }
    let n = 0;
    per.forEach((list, cell) => {
      let text = cell.editor.value();
      for (let i = list.length - 1; i >= 0; i--) text = text.slice(0, list[i].from) + by + text.slice(list[i].to);
      cell.editor.setValue(text);
      n += list.length;
    });
    search(false);
    return n;
  }

  function bind() {
    input().addEventListener('input', () => search(false));
    input().addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        go(e.shiftKey ? -1 : 1);
      }
    });
    bar().addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        close();
      }
    });
    $('find-next').addEventListener('click', () => go(1));
    $('find-prev').addEventListener('click', () => go(-1));
    $('find-close').addEventListener('click', () => close());
    $('find-replace-one').addEventListener('click', replaceOne);
    $('find-replace-all').addEventListener('click', replaceAll);
    $('find-open').addEventListener('click', open);
    // Ctrl+F finds in the notebook (the page's text is the notebook's),
    // but in a cell's editor it searches that cell (the editor's own
    // panel, with regular expressions), and the terminal keeps its keys.
    document.addEventListener(
      'keydown',
      (e) => {
        if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey || (e.key !== 'f' && e.key !== 'F')) return;
        const at = document.activeElement;
        if (at && (at.closest('#terminal-panel') || at.closest('.cm-editor'))) return;
        e.preventDefault();
        e.stopPropagation();
        open();
      },
      true
    );
  }

  return { bind, open, close, search, isOpen };
}
