// Cell outputs: streams, rich MIME bundles, errors, input() prompts and
// notices, and display updates by display_id.
//
// Kernel output never becomes markup in this page: text goes through
// textContent, images through data: URLs in <img> (SVG too, never inline),
// HTML only into <iframe sandbox=""> via srcdoc (no scripts, opaque
// origin), and Markdown through markdown.js's sanitiser, so nothing the
// kernel prints can run script here.

import { clear, el } from './dom.js';
import { renderAnsi } from './ansi.js';
import { renderMarkdown } from './markdown.js';
import { normData } from './nbformat.js';
import { applyCR, joinText, utf8ToBase64 } from './text.js';

const MIME_ORDER = ['image/png', 'image/jpeg', 'image/svg+xml', 'text/html', 'text/markdown', 'text/plain'];

// pickMime chooses which representation of a MIME bundle to show.
export function pickMime(data) {
  for (const m of MIME_ORDER) {
    const v = data[m];
    if (v !== undefined && v !== null) return m;
  }
  const keys = Object.keys(data);
  for (const k of keys) if (/json$/.test(k)) return k;
  return keys.length ? keys[0] : null;
}

// estimateHtmlHeight guesses a frame height for HTML output (the sandboxed
// frame cannot report its own).
export function estimateHtmlHeight(html) {
  const blocks = (html.match(/<(tr|br|p|div|li|h[1-6]|pre|table)\b/gi) || []).length;
  const lines = (html.match(/\n/g) || []).length;
  const rows = Math.max(blocks, Math.ceil(html.replace(/<[^>]*>/g, '').length / 120), Math.min(lines, 40), 1);
  return Math.min(480, Math.max(40, rows * 24 + 16));
}

// createOutputs renders the outputs of cells (cell.outputs, cell.el.outputs).
// deps: send(frame) for input replies, onChange() after any change worth
// saving, focusCell(cell) once an input() is answered, fileUrl(path) for
// images in Markdown output (see markdown.js).
export function createOutputs({ send, onChange, focusCell, fileUrl }) {
  const displays = new Map(); // display_id -> Set of output records
  const renderQueued = new Set();
  let renderFrame = 0;

  function clearOutputs(cell) {
    cell.clearPending = false;
    dropDisplays(cell);
    cell.outputs = [];
    clear(cell.el.outputs);
    cell.el.root.classList.remove('has-output');
  }

  // dropDisplays forgets the cell's outputs as targets of display updates.
  function dropDisplays(cell) {
    for (const rec of cell.outputs) {
      if (!rec.display_id) continue;
      const set = displays.get(rec.display_id);
      if (set) {
        set.delete(rec);
        if (!set.size) displays.delete(rec.display_id);
      }
    }
  }

  // add appends an output record to cell (quiet: without scrolling to it).
  function add(cell, rec, quiet) {
    cell.outputs.push(rec);
    rec.cell = cell;
    rec.el = el('div', 'output');
    fill(rec);
    cell.el.outputs.appendChild(rec.el);
    cell.el.root.classList.add('has-output');
    if (rec.display_id) {
      let set = displays.get(rec.display_id);
      if (!set) {
        set = new Set();
        displays.set(rec.display_id, set);
      }
      set.add(rec);
    }
    if (!quiet) {
      const o = cell.el.outputs;
      o.scrollTop = o.scrollHeight;
    }
    return rec;
  }

  function appendStream(cell, name, text) {
    if (!text) return;
    const last = cell.outputs[cell.outputs.length - 1];
    if (last && last.output_type === 'stream' && last.name === name) {
      last.text += text;
      queueStreamRender(last);
    } else {
      add(cell, { output_type: 'stream', name, text });
    }
  }

  // Stream chunks can arrive very fast; re-render at most once per frame.
  function queueStreamRender(rec) {
    renderQueued.add(rec);
    if (renderFrame) return;
    renderFrame = requestAnimationFrame(() => {
      renderFrame = 0;
      const recs = Array.from(renderQueued);
      renderQueued.clear();
      for (const r of recs) if (r.el) renderStreamText(r);
    });
  }

  function renderStreamText(rec) {
    const pre = rec.el.firstChild;
    if (!pre) return;
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    clear(pre);
    renderAnsi(pre, applyCR(rec.text));
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  }

  function fill(rec) {
    const w = rec.el;
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
      case 'error': {
        w.className = 'output output-error';
        const head = el('div', 'error-header');
        head.appendChild(el('span', 'error-name', rec.ename));
        if (rec.evalue) head.appendChild(el('span', 'error-value', ': ' + rec.evalue));
        w.appendChild(head);
        if (rec.traceback && rec.traceback.length) {
          const tb = el('pre', 'traceback');
          renderAnsi(tb, rec.traceback.join('\n'));
          w.appendChild(tb);
        }
        break;
      }
      case 'input':
        fillInput(rec);
        break;
      default:
        w.className = 'output ' + (rec.cls || 'output-notice');
        w.textContent = rec.text || '';
    }
  }

  function renderBundle(w, data, metadata) {
    data = data || {};
    metadata = metadata || {};
    const mime = pickMime(data);
    if (mime) w.dataset.mime = mime;
    switch (mime) {
      case 'image/png':
      case 'image/jpeg': {
        w.classList.add('output-image');
        const b64 = joinText(data[mime]).replace(/[^A-Za-z0-9+/=]/g, '');
        w.appendChild(makeImg('data:' + mime + ';base64,' + b64, metadata[mime], data['text/plain']));
        break;
      }
      case 'image/svg+xml':
        w.classList.add('output-image');
        w.appendChild(makeImg('data:image/svg+xml;base64,' + utf8ToBase64(joinText(data[mime])), metadata[mime], data['text/plain']));
        break;
      case 'text/html':
        w.classList.add('output-html');
        w.appendChild(makeHtmlFrame(joinText(data[mime])));
        break;
      case 'text/markdown': {
        w.classList.add('output-markdown');
        const box = el('div', 'md-view');
        box.appendChild(renderMarkdown(joinText(data[mime]), fileUrl));
        w.appendChild(box);
        break;
      }
      case 'text/plain': {
        w.classList.add('output-plain');
        const pre = el('pre', 'output-text');
        renderAnsi(pre, joinText(data[mime]));
        w.appendChild(pre);
        break;
      }
      case null:
        break;
      default:
        w.classList.add('output-plain');
        if (/json$/.test(mime)) w.appendChild(el('pre', 'output-text', joinText(data[mime])));
        else w.appendChild(el('pre', 'output-text output-unsupported', '[' + mime + ' output is not shown]'));
    }
  }

  function makeImg(src, meta, alt) {
    const img = document.createElement('img');
    img.alt = alt ? joinText(alt).slice(0, 200) : 'image output';
    img.decoding = 'async';
    img.src = src;
    if (meta && typeof meta === 'object') {
      if (typeof meta.width === 'number' && meta.width > 0) img.width = Math.round(meta.width);
      if (typeof meta.height === 'number' && meta.height > 0) img.height = Math.round(meta.height);
    }
    return img;
  }

  // HTML output lives in a sandboxed frame with no scripts and an opaque
  // origin; it can neither run code nor reach this page.
  function makeHtmlFrame(html) {
    const box = el('div', 'html-frame-box');
    const f = document.createElement('iframe');
    f.setAttribute('sandbox', '');
    f.setAttribute('referrerpolicy', 'no-referrer');
    f.title = 'HTML output';
    f.className = 'html-frame';
    f.height = String(estimateHtmlHeight(html));
    f.srcdoc = html;
    box.appendChild(f);
    return box;
  }

  // updateDisplay applies an update_display event to every output that
  // shows its display_id.
  function updateDisplay(ev) {
    const did = ev.display_id || (ev.transient && ev.transient.display_id);
    if (!did) return;
    const set = displays.get(String(did));
    if (!set) return;
    for (const rec of set) {
      rec.data = normData(ev.data);
      rec.metadata = ev.metadata || {};
      fill(rec);
    }
    onChange();
  }

  // showInputRequest puts an input() prompt with a text (or password) box
  // into the cell and focuses it.
  function showInputRequest(cell, ev) {
    const rec = add(cell, {
      output_type: 'input',
      prompt: ev.prompt != null ? String(ev.prompt) : '',
      password: !!ev.password,
      value: null,
      cancelled: false,
      execId: String(ev.id)
    });
    const input = rec.el.querySelector('input');
    if (input) input.focus();
  }

  function fillInput(rec) {
    const w = rec.el;
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
    const input = document.createElement('input');
    input.type = rec.password ? 'password' : 'text';
    input.className = 'input-field';
    input.spellcheck = false;
    input.setAttribute('autocomplete', rec.password ? 'new-password' : 'off');
    input.setAttribute('aria-label', rec.prompt || 'input');
    input.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || e.isComposing) return;
      e.preventDefault();
      rec.value = input.value;
      send({ type: 'input_reply', id: rec.execId, value: rec.value });
      clear(w);
      fillInput(rec);
      if (rec.cell && rec.cell.el) focusCell(rec.cell);
      onChange();
    });
    w.appendChild(input);
  }

  // cancelPendingInputs closes the cell's unanswered input() boxes (its run
  // ended without them).
  function cancelPendingInputs(cell) {
    for (const rec of cell.outputs) {
      if (rec.output_type === 'input' && rec.value === null && !rec.cancelled) {
        rec.cancelled = true;
        fill(rec);
      }
    }
  }

  return { add, clear: clearOutputs, dropDisplays, appendStream, updateDisplay, showInputRequest, cancelPendingInputs };
}
