// @ts-check
// ANSI escape rendering: SGR colours and styles become classes (or inline
// colours for 256-colour and true-colour codes); every other escape sequence
// and control character is dropped, never shown raw.

import { el } from './dom.js';

// CSI sequences, OSC strings, other ESC sequences, and stray ESC bytes.
const ANSI_RE = /\x1b\[([0-?]*)[ -\/]*([@-~])|\x1b\[[0-?]*[ -\/]*$|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -\/]*[0-~]?|\x9b[0-?]*[ -\/]*[@-~]/g;

// Control characters other than tab/newline (and ESC, handled above).
const CONTROL_RE = /[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]/g;

/**
 * The SGR state: fg and bg are a palette index (a class), an rgb() string,
 * or null (the default).
 * @typedef {{fg: number | string | null, bg: number | string | null, bold: boolean, dim: boolean, italic: boolean, underline: boolean}} Style
 */

/**
 * A styled run of text.
 * @typedef {{text: string, classes: string[], color?: string, background?: string}} Segment
 */

/** @returns {Style} */
function plainStyle() {
  return { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false };
}

// ansiSegments splits text into styled runs: {text, classes: [...], color?,
// background?}. color and background are CSS rgb() strings for colours that
// have no class. Pure: no DOM.
/**
 * @param {unknown} input
 * @returns {Segment[]}
 */
export function ansiSegments(input) {
  const text = String(input);
  /** @type {Segment[]} */
  const out = [];
  const st = plainStyle();
  /** @param {string} s */
  const push = (s) => {
    s = s.replace(CONTROL_RE, '');
    if (s) out.push(segment(s, st));
  };
  if (text.indexOf('\x1b') < 0 && text.indexOf('\x9b') < 0) {
    push(text);
    return out;
  }
  const re = new RegExp(ANSI_RE.source, 'g');
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) push(text.slice(last, m.index));
    if (m[2] === 'm') applySgr(st, m[1] || '');
    last = m.index + m[0].length;
    if (m[0] === '') re.lastIndex++;
  }
  if (last < text.length) push(text.slice(last));
  return out;
}

/**
 * @param {string} text
 * @param {Style} st
 * @returns {Segment}
 */
function segment(text, st) {
  /** @type {Segment} */
  const seg = { text, classes: [] };
  if (typeof st.fg === 'number') seg.classes.push('ansi-fg-' + st.fg);
  else if (typeof st.fg === 'string') seg.color = st.fg;
  if (typeof st.bg === 'number') seg.classes.push('ansi-bg-' + st.bg);
  else if (typeof st.bg === 'string') seg.background = st.bg;
  if (st.bold) seg.classes.push('ansi-bold');
  if (st.dim) seg.classes.push('ansi-dim');
  if (st.italic) seg.classes.push('ansi-italic');
  if (st.underline) seg.classes.push('ansi-underline');
  return seg;
}

// renderAnsi appends text to parent as text nodes and styled spans.
/**
 * @param {Node} parent
 * @param {unknown} text
 */
export function renderAnsi(parent, text) {
  for (const seg of ansiSegments(text)) {
    if (!seg.classes.length && !seg.color && !seg.background) {
      parent.appendChild(document.createTextNode(seg.text));
      continue;
    }
    const span = el('span', null, seg.text);
    // CSSOM properties, not a style attribute: allowed by style-src 'self'.
    if (seg.color) span.style.color = seg.color;
    if (seg.background) span.style.backgroundColor = seg.background;
    span.className = seg.classes.join(' ');
    parent.appendChild(span);
  }
}

// xterm256 maps a 256-colour index to a palette index (< 16) or an rgb().
/**
 * @param {number} n
 * @returns {number | string}
 */
export function xterm256(n) {
  if (n < 16) return n;
  if (n >= 232) {
    const g = 8 + (n - 232) * 10;
    return 'rgb(' + g + ',' + g + ',' + g + ')';
  }
  const levels = [0, 95, 135, 175, 215, 255];
  const i = n - 16;
  return 'rgb(' + levels[Math.floor(i / 36)] + ',' + levels[Math.floor(i / 6) % 6] + ',' + levels[i % 6] + ')';
}

/**
 * @param {Style} st
 * @param {string} params
 */
function applySgr(st, params) {
  const p =
    params === ''
      ? [0]
      : params.split(/[;:]/).map((x) => {
          const n = parseInt(x, 10);
          return isNaN(n) ? 0 : n;
        });
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === 0) Object.assign(st, plainStyle());
    else if (c === 1) st.bold = true;
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
      let color = null;
      if (p[i + 1] === 5 && i + 2 < p.length) {
        const n = p[i + 2];
        if (n >= 0 && n < 256) color = xterm256(n);
        i += 2;
      } else if (p[i + 1] === 2 && i + 4 < p.length) {
        const rgb = [p[i + 2], p[i + 3], p[i + 4]].map((x) => Math.max(0, Math.min(255, x)));
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
