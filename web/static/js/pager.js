// @ts-check
// The help pane: what the kernel pages (the pager of obj? and obj??,
// %pdoc, %pinfo: the execution's page events) shown beside the notebook,
// rendered as outputs are (text/plain with ANSI colours, text/html in a
// sandboxed frame, Markdown through the sanitiser). It closes with its
// button, or Escape when the focus is in it or on a cell (command mode).
//
// Also the pure helpers of the other payload events: set_next_input
// (%load's text for the next cell) and ask_exit.
/** @import { SetNextInputEvent } from '../../types/wire' */

import { clear } from './dom.js';
import { joinText } from './text.js';

/**
 * @import { MimeBundle } from './nbformat.js'
 */

// The MIME types the pane shows, in the order it prefers them.
const HELP_MIMES = ['text/html', 'text/markdown', 'text/plain'];

// helpBundle returns what the pane shows of a page event's MIME bundle:
// its text representations (text/html, text/markdown, text/plain) that are
// text, joined from line lists, or null when it has none (the pane stays
// as it is). The data is hostile input: anything else is dropped.
/**
 * @param {unknown} data
 * @returns {MimeBundle | null}
 */
export function helpBundle(data) {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return null;
  const bundle = /** @type {{[mime: string]: unknown}} */ (data);
  /** @type {MimeBundle} */
  const out = {};
  let any = false;
  for (const m of HELP_MIMES) {
    const v = bundle[m];
    if (typeof v !== 'string' && !(Array.isArray(v) && v.every((s) => typeof s === 'string'))) continue;
    const text = joinText(v);
    if (!text.trim()) continue;
    out[m] = text;
    any = true;
  }
  return any ? out : null;
}

// helpSubject names what a cell asked help for, for the pane's title: obj
// in "obj?", "obj??", "?obj", "??obj", "%pinfo obj", "%pinfo2 obj", "%pdoc
// obj" (the last such line of code), or '' when it cannot tell.
/**
 * @param {string} code
 * @returns {string}
 */
export function helpSubject(code) {
  const name = String.raw`[A-Za-z_\u00c0-\uffff][\w.\u00c0-\uffff]*(?:\(\))?(?:\[[^\]\n]*\])?`;
  const forms = [
    new RegExp(String.raw`^\s*(${name})\s*\?{1,2}\s*$`),
    new RegExp(String.raw`^\s*\?{1,2}\s*(${name})\s*$`),
    new RegExp(String.raw`^\s*%(?:pinfo2?|pdoc|pdef|psource|pfile)\s+(${name})\s*$`)
  ];
  const lines = String(code).split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    for (const re of forms) {
      const m = re.exec(lines[i]);
      if (m) return m[1];
    }
  }
  return '';
}

// nextInput reads a set_next_input event: the text for the next cell and
// whether it replaces the text of the cell that ran (%load does), or null
// when the event carries no text.
/**
 * @param {SetNextInputEvent} ev
 * @returns {{text: string, replace: boolean} | null}
 */
export function nextInput(ev) {
  if (typeof ev.text !== 'string') return null;
  return { text: ev.text, replace: ev.replace === true };
}

/**
 * @typedef {object} Help
 * @property {(data: unknown, subject: string, back: (() => void) | null) => boolean} show shows a page event's bundle (false when it has nothing to show); back returns the focus where it belongs when the pane closes
 * @property {() => void} close hides the pane
 * @property {() => boolean} isOpen
 */

// createHelp runs the help pane. els: the pane, its title, its body and
// its close button; render(el, bundle) draws a MIME bundle into el as the
// outputs do (outputs.js).
/**
 * @param {object} deps
 * @param {{pane: HTMLElement, title: HTMLElement, body: HTMLElement, close: HTMLButtonElement}} deps.els
 * @param {(el: HTMLElement, data: MimeBundle) => void} deps.render
 * @returns {Help}
 */
export function createHelp({ els, render }) {
  /** @type {(() => void) | null} */
  let backTo = null;

  /**
   * @param {unknown} data
   * @param {string} subject
   * @param {(() => void) | null} back
   */
  function show(data, subject, back) {
    const bundle = helpBundle(data);
    if (!bundle) return false;
    clear(els.body);
    const box = document.createElement('div');
    box.className = 'help-content output';
    render(box, bundle);
    els.body.appendChild(box);
    els.title.textContent = subject ? 'Help: ' + subject : 'Help';
    els.pane.hidden = false;
    els.body.scrollTop = 0;
    backTo = back;
    return true;
  }

  function close() {
    if (els.pane.hidden) return;
    const hadFocus = els.pane.contains(document.activeElement);
    els.pane.hidden = true;
    clear(els.body);
    const back = backTo;
    backTo = null;
    if (hadFocus && back) back();
  }

  els.close.addEventListener('click', close);
  // Escape closes the pane from inside it, or from command mode (the
  // focus on a cell, not in its editor: there Escape means command mode).
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || els.pane.hidden || e.defaultPrevented || e.isComposing) return;
    const t = e.target instanceof Element ? e.target : null;
    const inPane = !!t && els.pane.contains(t);
    const commandMode = !!t && t.classList.contains('cell');
    if (!inPane && !commandMode && t !== document.body) return;
    e.preventDefault();
    close();
  });

  return { show, close, isOpen: () => !els.pane.hidden };
}
