// @ts-check
// Cell outputs: streams, rich MIME bundles, errors, input() prompts and
// notices, and display updates by display_id.
//
// Kernel output never becomes markup in this page: text goes through
// textContent, images through data: URLs in <img> (SVG too, never inline),
// HTML only into <iframe sandbox=""> via srcdoc (no scripts, opaque
// origin), and Markdown through markdown.js's sanitiser, so nothing the
// kernel prints can run script here.
/** @import { InputRequestEvent, UpdateDisplayEvent } from '../../types/wire' */

import { clear, el } from './dom.js';
import { renderAnsi } from './ansi.js';
import { CHART_MIME, renderChart } from './chart.js';
import { renderMarkdown } from './markdown.js';
import { displayUpdate, mergeStream, outputFromNb } from './nbformat.js';
import { DATAFRAME_MIME, renderTable } from './table.js';
import { applyCR, joinText, utf8ToBase64 } from './text.js';

/**
 * @import { Cell } from './cells.js'
 * @import { Frame } from './ws.js'
 * @import { InputOutput, JsonObject, MimeBundle, OutputRecord, StreamOutput } from './nbformat.js'
 */

/**
 * @typedef {object} Outputs
 * @property {(cell: Cell, rec: OutputRecord, quiet?: boolean) => OutputRecord} add appends an output record to cell (quiet: without scrolling to it)
 * @property {(cell: Cell) => void} clear removes the cell's outputs
 * @property {(cell: Cell) => void} dropDisplays forgets the cell's outputs as targets of display updates
 * @property {(cell: Cell, chunk: StreamOutput) => void} appendStream adds a stream chunk (to the last output when it is a stream of that name)
 * @property {(ev: UpdateDisplayEvent) => void} updateDisplay applies an update_display event
 * @property {(cell: Cell, ev: InputRequestEvent) => void} showInputRequest puts an input() prompt into the cell
 * @property {(cell: Cell) => void} cancelPendingInputs closes the cell's unanswered input() boxes
 * @property {(w: HTMLElement, data: MimeBundle, metadata?: JsonObject) => void} render draws a MIME bundle into w as an output shows it (the help pane's)
 * @property {(el: HTMLElement, outputs: unknown[]) => void} renderList draws nbformat outputs into el, replacing what it shows (an Output widget's)
 */

// A Jupyter widget's view (widgets.js draws it).
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';

const MIME_ORDER = ['image/png', 'image/jpeg', 'image/svg+xml', 'text/html', 'text/markdown', 'text/plain'];

// pickMime chooses which representation of a MIME bundle to show.
/**
 * @param {MimeBundle} data
 * @returns {string | null}
 */
export function pickMime(data) {
  for (const m of MIME_ORDER) {
    const v = data[m];
    if (v !== undefined && v !== null) return m;
  }
  const keys = Object.keys(data);
  for (const k of keys) if (/json$/.test(k)) return k;
  return keys.length ? keys[0] : null;
}

// richJson returns a bundle's JSON value (an object, or a JSON string as
// some notebook files keep it), or null.
/**
 * @param {unknown} v
 * @returns {unknown}
 */
export function richJson(v) {
  if (typeof v === 'string' || Array.isArray(v)) {
    try {
      return JSON.parse(typeof v === 'string' ? v : v.join(''));
    } catch {
      return null;
    }
  }
  return v === undefined ? null : v;
}

// withoutRich returns the bundle without the structured MIME types, for
// the plain view beside the interactive one.
/**
 * @param {MimeBundle} data
 * @returns {MimeBundle}
 */
export function withoutRich(data) {
  /** @type {MimeBundle} */
  const out = {};
  for (const [k, v] of Object.entries(data)) if (k !== CHART_MIME && k !== DATAFRAME_MIME) out[k] = v;
  return out;
}

// estimateHtmlHeight guesses a frame height for HTML output (the sandboxed
// frame cannot report its own).
/**
 * @param {string} html
 * @returns {number}
 */
export function estimateHtmlHeight(html) {
  const blocks = (html.match(/<(tr|br|p|div|li|h[1-6]|pre|table)\b/gi) || []).length;
  const lines = (html.match(/\n/g) || []).length;
  const rows = Math.max(blocks, Math.ceil(html.replace(/<[^>]*>/g, '').length / 120), Math.min(lines, 40), 1);
  return Math.min(480, Math.max(40, rows * 24 + 16));
}

// createOutputs renders the outputs of cells (cell.outputs, cell.el.outputs).
// deps: send(frame) for input replies, onChange() after any change worth
// saving, focusCell(cell) once an input() is answered, fileUrl(path) for
// images in Markdown output (see markdown.js), widgetView(host, value,
// plain) to draw a widget's view (false: it cannot, the bundle's other
// types are shown) and disposeWidgets(root) when outputs that may show
// views go (widgets.js).
/**
 * @param {object} deps
 * @param {(frame: Frame) => void} deps.send
 * @param {() => void} deps.onChange
 * @param {(cell: Cell) => void} deps.focusCell
 * @param {(path: string) => string | null} deps.fileUrl
 * @param {(host: HTMLElement, value: unknown, plain: unknown) => boolean} [deps.widgetView]
 * @param {(root: Element) => void} [deps.disposeWidgets]
 * @returns {Outputs}
 */
export function createOutputs({ send, onChange, focusCell, fileUrl, widgetView, disposeWidgets }) {
  /** @type {Map<string, Set<OutputRecord>>} display_id -> the records that show it */
  const displays = new Map();
  /** @type {Set<StreamOutput>} */
  const renderQueued = new Set();
  let renderFrame = 0;

  /** @param {Cell} cell */
  function clearOutputs(cell) {
    cell.clearPending = false;
    dropDisplays(cell);
    cell.outputs = [];
    clear(cell.el.outputs);
    cell.el.root.classList.remove('has-output');
  }

  // dropDisplays forgets the cell's outputs as targets of display updates,
  // and the widget views they show.
  /** @param {Cell} cell */
  function dropDisplays(cell) {
    if (disposeWidgets) disposeWidgets(cell.el.outputs);
    for (const rec of cell.outputs) {
      if (rec.output_type !== 'display_data' || !rec.display_id) continue;
      const set = displays.get(rec.display_id);
      if (set) {
        set.delete(rec);
        if (!set.size) displays.delete(rec.display_id);
      }
    }
  }

  // add appends an output record to cell (quiet: without scrolling to it).
  /**
   * @param {Cell} cell
   * @param {OutputRecord} rec
   * @param {boolean} [quiet]
   */
  function add(cell, rec, quiet) {
    cell.outputs.push(rec);
    rec.cell = cell;
    const w = el('div', 'output');
    rec.el = w;
    fill(rec);
    cell.el.outputs.appendChild(w);
    cell.el.root.classList.add('has-output');
    if (rec.output_type === 'display_data' && rec.display_id) {
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

  /**
   * @param {Cell} cell
   * @param {StreamOutput} chunk
   */
  function appendStream(cell, chunk) {
    if (!chunk.text) return;
    const merged = mergeStream(cell.outputs, chunk);
    if (merged && merged.output_type === 'stream') queueStreamRender(merged);
    else if (!merged) add(cell, chunk);
  }

  // Stream chunks can arrive very fast; re-render at most once per frame.
  /** @param {StreamOutput} rec */
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

  /** @param {StreamOutput} rec */
  function renderStreamText(rec) {
    const pre = rec.el && rec.el.firstElementChild;
    if (!pre) return;
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    clear(pre);
    renderAnsi(pre, applyCR(rec.text));
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  }

  /** @param {OutputRecord} rec */
  function fill(rec) {
    const w = rec.el;
    if (!w) return;
    if (disposeWidgets) disposeWidgets(w);
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

  /**
   * @param {HTMLElement} w
   * @param {MimeBundle} data
   * @param {JsonObject} metadata
   */
  function renderBundle(w, data, metadata) {
    data = data || {};
    metadata = metadata || {};
    // A widget: its view, drawn by the widget manager.
    if (data[WIDGET_MIME] !== undefined && widgetView) {
      const host = el('div');
      if (widgetView(host, richJson(data[WIDGET_MIME]), data['text/plain'] !== undefined ? joinText(data['text/plain']) : '')) {
        w.dataset.mime = WIDGET_MIME;
        w.classList.add('output-widget');
        w.appendChild(host);
        return;
      }
    }
    // A chart or a DataFrame the page can draw is shown interactively, with
    // the bundle's usual view (the PNG, the HTML table) a click away.
    /** @type {[string, HTMLElement | null, string, string][]} */
    const rich = [
      [CHART_MIME, data[CHART_MIME] !== undefined ? renderChart(richJson(data[CHART_MIME])) : null, 'Chart', 'Image'],
      [DATAFRAME_MIME, data[DATAFRAME_MIME] !== undefined ? renderTable(richJson(data[DATAFRAME_MIME])) : null, 'Table', 'HTML']
    ];
    for (const [mime, view, label, plainLabel] of rich) {
      if (!view) continue;
      const plain = el('div', 'rich-plain');
      renderPlain(plain, withoutRich(data), metadata);
      w.dataset.mime = mime;
      w.classList.add('output-rich');
      w.appendChild(richSwitch(view, plain, label, plain.firstChild ? plainLabel : ''));
      return;
    }
    renderPlain(w, data, metadata);
  }

  // richSwitch shows view, with buttons to switch to plain (the usual
  // rendering of the same bundle) and back; no button without plainLabel.
  /**
   * @param {HTMLElement} view
   * @param {HTMLElement} plain
   * @param {string} label
   * @param {string} plainLabel
   */
  function richSwitch(view, plain, label, plainLabel) {
    const box = el('div', 'rich');
    view.classList.add('rich-view');
    if (plainLabel) {
      const bar = el('div', 'rich-switch');
      bar.setAttribute('role', 'group');
      bar.setAttribute('aria-label', 'Show as');
      /** @type {[HTMLButtonElement, HTMLElement][]} */
      const tabs = [];
      for (const [text, pane] of /** @type {[string, HTMLElement][]} */ ([[label, view], [plainLabel, plain]])) {
        const b = el('button', 'rich-tab', text);
        b.type = 'button';
        b.dataset.view = pane === view ? 'rich' : 'plain';
        b.addEventListener('click', () => {
          for (const [tb, p] of tabs) {
            tb.setAttribute('aria-pressed', String(tb === b));
            p.hidden = tb !== b;
          }
        });
        tabs.push([b, pane]);
        bar.appendChild(b);
      }
      for (const [tb, p] of tabs) {
        tb.setAttribute('aria-pressed', String(p === view));
        p.hidden = p !== view;
      }
      box.appendChild(bar);
    }
    box.appendChild(view);
    if (plainLabel) box.appendChild(plain);
    return box;
  }

  /**
   * @param {HTMLElement} w
   * @param {MimeBundle} data
   * @param {JsonObject} metadata
   */
  function renderPlain(w, data, metadata) {
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

  /**
   * @param {string} src
   * @param {unknown} meta the image's metadata (width, height)
   * @param {unknown} alt the bundle's text/plain
   */
  function makeImg(src, meta, alt) {
    const img = document.createElement('img');
    img.alt = alt ? joinText(alt).slice(0, 200) : 'image output';
    img.decoding = 'async';
    img.src = src;
    if (meta && typeof meta === 'object') {
      const { width, height } = /** @type {JsonObject} */ (meta);
      if (typeof width === 'number' && width > 0) img.width = Math.round(width);
      if (typeof height === 'number' && height > 0) img.height = Math.round(height);
    }
    return img;
  }

  // HTML output lives in a sandboxed frame with no scripts and an opaque
  // origin; it can neither run code nor reach this page.
  /** @param {string} html */
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
  /** @param {UpdateDisplayEvent} ev */
  function updateDisplay(ev) {
    const u = displayUpdate(ev);
    if (!u) return;
    const set = displays.get(u.display_id);
    if (!set) return;
    for (const rec of set) {
      if (rec.output_type !== 'display_data') continue;
      rec.data = u.data;
      rec.metadata = u.metadata;
      fill(rec);
    }
    onChange();
  }

  // showInputRequest puts an input() prompt with a text (or password) box
  // into the cell and focuses it.
  /**
   * @param {Cell} cell
   * @param {InputRequestEvent} ev
   */
  function showInputRequest(cell, ev) {
    const rec = add(cell, {
      output_type: 'input',
      prompt: ev.prompt != null ? String(ev.prompt) : '',
      password: !!ev.password,
      value: null,
      cancelled: false,
      execId: String(ev.id)
    });
    const input = rec.el && rec.el.querySelector('input');
    if (input) input.focus();
  }

  /** @param {InputOutput} rec */
  function fillInput(rec) {
    const w = rec.el;
    if (!w) return;
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

  // renderList draws nbformat outputs (an Output widget's) into box,
  // replacing what it showed; outputs it does not know are left out.
  /**
   * @param {HTMLElement} box
   * @param {unknown[]} list
   */
  function renderList(box, list) {
    if (disposeWidgets) disposeWidgets(box);
    clear(box);
    for (const o of list) {
      const rec = outputFromNb(o);
      if (!rec) continue;
      const w = el('div', 'output');
      rec.el = w;
      fill(rec);
      box.appendChild(w);
    }
  }

  // cancelPendingInputs closes the cell's unanswered input() boxes (its run
  // ended without them).
  /** @param {Cell} cell */
  function cancelPendingInputs(cell) {
    for (const rec of cell.outputs) {
      if (rec.output_type === 'input' && rec.value === null && !rec.cancelled) {
        rec.cancelled = true;
        fill(rec);
      }
    }
  }

  return {
    add,
    clear: clearOutputs,
    dropDisplays,
    appendStream,
    updateDisplay,
    showInputRequest,
    cancelPendingInputs,
    render: (w, data, metadata) => renderBundle(w, data, metadata || {}),
    renderList
  };
}
