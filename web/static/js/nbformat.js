// @ts-check
// nbformat 4 import and export, and the mapping of the WebSocket API's
// execution events to output records. Pure: plain objects in, plain
// objects out; nothing here touches the DOM.
//
// A cell here is {id, type: 'code'|'markdown'|'raw', source, executionCount,
// outputs} (CellData); an output record (OutputRecord) is what the outputs
// module renders:
//   {output_type: 'stream', name, text}
//   {output_type: 'display_data', data, metadata, display_id}
//   {output_type: 'execute_result', data, metadata, execution_count}
//   {output_type: 'error', ename, evalue, traceback}
//   {output_type: 'input', prompt, password, value, ...}   (input() and its answer)
//   {output_type: 'notice', cls, text}                      (UI notes, not saved)
// The outputs module adds el and cell to the records it shows.
/** @import { UpdateDisplayEvent } from '../../types/wire' */

import { DEFAULT_KERNEL, notebookMetadata } from './languages.js';
import { joinText, splitLines } from './text.js';

/**
 * @import { Cell } from './cells.js'
 * @import { ServerEvent } from './ws.js'
 */

/**
 * A parsed JSON object from the network or a file: nothing about its
 * fields is checked, so code reads them defensively.
 * @typedef {{[key: string]: any}} JsonObject
 */

/**
 * A MIME bundle: MIME type -> representation (a string, or a JSON value for
 * the *json types).
 * @typedef {{[mime: string]: any}} MimeBundle
 */

/**
 * Fields the outputs module adds to a record it shows.
 * @typedef {object} Shown
 * @property {HTMLElement} [el] the record's element
 * @property {Cell} [cell] the cell that shows it
 */

/** @typedef {Shown & {output_type: 'stream', name: 'stdout' | 'stderr', text: string}} StreamOutput */
/** @typedef {Shown & {output_type: 'display_data', data: MimeBundle, metadata: JsonObject, display_id: string | null}} DisplayOutput */
/** @typedef {Shown & {output_type: 'execute_result', data: MimeBundle, metadata: JsonObject, execution_count: number | null}} ResultOutput */
/** @typedef {Shown & {output_type: 'error', ename: string, evalue: string, traceback: string[]}} ErrorOutput */
/**
 * An input() prompt: value is the answer (null while unanswered), execId
 * the execution that asked.
 * @typedef {Shown & {output_type: 'input', prompt: string, password: boolean, value: string | null, cancelled: boolean, execId: string}} InputOutput
 */
/** @typedef {Shown & {output_type: 'notice', cls: string, text: string}} NoticeOutput */
/** @typedef {StreamOutput | DisplayOutput | ResultOutput | ErrorOutput | InputOutput | NoticeOutput} OutputRecord */

/**
 * A cell as plain data: what toNotebook writes and fromNotebook reads (id
 * null when the file had none, or a repeated one).
 * @typedef {object} CellData
 * @property {string | null} id
 * @property {'code' | 'markdown' | 'raw'} type
 * @property {string} source
 * @property {number | null} executionCount
 * @property {OutputRecord[]} outputs
 * @property {string | null} [language] the kernel a code cell's outputs
 *   came from when it is not the notebook's (saved in the cell's
 *   metadata.glassroom.language), else null
 */

// A cell's language as saved: a kernel name.
const LANGUAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/;

/**
 * An nbformat 4 output, as written to .ipynb (text as line lists).
 * @typedef {{output_type: 'stream', name: string, text: string[]}
 *   | {output_type: 'display_data', data: MimeBundle, metadata: JsonObject}
 *   | {output_type: 'execute_result', data: MimeBundle, metadata: JsonObject, execution_count: number | null}
 *   | {output_type: 'error', ename: string, evalue: string, traceback: string[]}} NbOutput
 */

/**
 * An nbformat 4 cell, as written to .ipynb.
 * @typedef {{cell_type: 'markdown' | 'raw', id: string | null, metadata: JsonObject, source: string[]}
 *   | {cell_type: 'code', id: string | null, metadata: JsonObject, source: string[], execution_count: number | null, outputs: NbOutput[]}} NbCell
 */

/**
 * An nbformat 4.5 document.
 * @typedef {{nbformat: 4, nbformat_minor: 5, metadata: JsonObject, cells: NbCell[]}} Notebook
 */

/**
 * isObject reports whether v is a non-null object that is not an array.
 * @param {unknown} v
 * @returns {v is JsonObject}
 */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// normData turns a MIME bundle's line lists into strings (JSON types keep
// their structure).
/**
 * @param {unknown} d
 * @returns {MimeBundle}
 */
export function normData(d) {
  /** @type {MimeBundle} */
  const out = {};
  if (!d || typeof d !== 'object') return out;
  const bundle = /** @type {MimeBundle} */ (d);
  for (const k of Object.keys(bundle)) {
    let v = bundle[k];
    if (Array.isArray(v) && (k.indexOf('json') < 0 || k === 'text/plain')) v = joinText(v);
    out[k] = v;
  }
  return out;
}

/**
 * @param {MimeBundle} data
 * @returns {MimeBundle}
 */
function dataToNb(data) {
  /** @type {MimeBundle} */
  const out = {};
  for (const k of Object.keys(data || {})) {
    const v = data[k];
    if (typeof v === 'string' && (k.indexOf('text/') === 0 || k === 'image/svg+xml')) out[k] = splitLines(v);
    else out[k] = v;
  }
  return out;
}

// ---- execution events -> output records

// displayIdOf returns the display_id an event names (at the top level or
// in transient, as Jupyter sends it), or null.
/**
 * @param {{display_id?: unknown, transient?: unknown}} ev
 * @returns {string | null}
 */
export function displayIdOf(ev) {
  const id = ev.display_id || (isObject(ev.transient) && ev.transient.display_id);
  return id ? String(id) : null;
}

// outputFromEvent maps an execution event of the WebSocket API to the
// output record it adds to its cell: stream -> stream (one record per
// chunk: mergeStream joins them), display -> display_data, result ->
// execute_result, error -> error. Every other event (queued, done,
// clear_output, input_request...) gives null. Events are hostile input:
// fields of the wrong type get defaults.
/**
 * @param {ServerEvent} ev
 * @returns {StreamOutput | DisplayOutput | ResultOutput | ErrorOutput | null}
 */
export function outputFromEvent(ev) {
  switch (ev.type) {
    case 'stream':
      return { output_type: 'stream', name: ev.name === 'stderr' ? 'stderr' : 'stdout', text: joinText(ev.text) };
    case 'display':
      return {
        output_type: 'display_data',
        data: normData(ev.data),
        metadata: isObject(ev.metadata) ? ev.metadata : {},
        display_id: displayIdOf(ev)
      };
    case 'result':
      return {
        output_type: 'execute_result',
        data: normData(ev.data),
        metadata: isObject(ev.metadata) ? ev.metadata : {},
        execution_count: typeof ev.execution_count === 'number' ? ev.execution_count : null
      };
    case 'error':
      return {
        output_type: 'error',
        ename: ev.name != null ? String(ev.name) : 'Error',
        evalue: ev.value != null ? String(ev.value) : '',
        traceback: Array.isArray(ev.traceback) ? ev.traceback.map(String) : []
      };
    default:
      return null;
  }
}

// mergeStream appends a stream chunk to the last of outputs when that is a
// stream of the same name, as Jupyter shows consecutive prints, and returns
// that record; it returns null when the chunk starts a new output (the
// caller adds it). outputs is not otherwise changed.
/**
 * @template {OutputRecord} T
 * @param {T[]} outputs
 * @param {StreamOutput} chunk
 * @returns {T | null}
 */
export function mergeStream(outputs, chunk) {
  const last = outputs[outputs.length - 1];
  if (!last || last.output_type !== 'stream' || last.name !== chunk.name) return null;
  last.text += chunk.text;
  return last;
}

// displayUpdate returns what an update_display event puts into the outputs
// showing its display_id, or null when it names none.
/**
 * @param {UpdateDisplayEvent} ev
 * @returns {{display_id: string, data: MimeBundle, metadata: JsonObject} | null}
 */
export function displayUpdate(ev) {
  const id = displayIdOf(ev);
  if (!id) return null;
  return { display_id: id, data: normData(ev.data), metadata: isObject(ev.metadata) ? ev.metadata : {} };
}

// ---- output records <-> nbformat

// outputToNb converts an output record to an nbformat output, or null for
// records that are not saved.
/**
 * @param {OutputRecord} rec
 * @returns {NbOutput | null}
 */
export function outputToNb(rec) {
  switch (rec.output_type) {
    case 'stream':
      return { output_type: 'stream', name: rec.name, text: splitLines(rec.text) };
    case 'display_data':
      return { output_type: 'display_data', data: dataToNb(rec.data), metadata: rec.metadata || {} };
    case 'execute_result':
      return {
        output_type: 'execute_result',
        data: dataToNb(rec.data),
        metadata: rec.metadata || {},
        execution_count: typeof rec.execution_count === 'number' ? rec.execution_count : null
      };
    case 'error':
      return { output_type: 'error', ename: rec.ename, evalue: rec.evalue, traceback: rec.traceback || [] };
    case 'input':
      if (rec.value === null) return null;
      return {
        output_type: 'stream',
        name: 'stdout',
        text: splitLines(rec.prompt + (rec.password ? '\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7' : rec.value) + '\n')
      };
    default:
      return null;
  }
}

// outputFromNb converts an nbformat (or v3-named) output to an output
// record, or null for anything it does not know.
/**
 * @param {unknown} o
 * @returns {StreamOutput | DisplayOutput | ResultOutput | ErrorOutput | null}
 */
export function outputFromNb(o) {
  if (!isObject(o)) return null;
  switch (o.output_type) {
    case 'stream':
      return { output_type: 'stream', name: o.name === 'stderr' ? 'stderr' : 'stdout', text: joinText(o.text) };
    case 'display_data':
      return { output_type: 'display_data', data: normData(o.data), metadata: o.metadata || {}, display_id: null };
    case 'execute_result':
    case 'pyout':
      return {
        output_type: 'execute_result',
        data: normData(o.data),
        metadata: o.metadata || {},
        execution_count: typeof o.execution_count === 'number' ? o.execution_count : null
      };
    case 'error':
    case 'pyerr':
      return {
        output_type: 'error',
        ename: String(o.ename || 'Error'),
        evalue: String(o.evalue || ''),
        traceback: Array.isArray(o.traceback) ? o.traceback.map(String) : []
      };
    default:
      return null;
  }
}

// toNotebook builds an nbformat 4.5 document from cells; outputs are left
// out unless withOutputs. Consecutive stream outputs of one name merge.
// metadata (kernelspec and language_info: languages.js) defaults to a
// Python notebook's.
/**
 * @param {CellData[]} cells
 * @param {boolean} withOutputs
 * @param {JsonObject} [metadata]
 * @returns {Notebook}
 */
export function toNotebook(cells, withOutputs, metadata) {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: metadata || notebookMetadata(DEFAULT_KERNEL, null),
    cells: cells.map((c) => {
      const src = splitLines(c.source);
      if (c.type !== 'code') {
        return { cell_type: c.type, id: c.id, metadata: {}, source: src };
      }
      /** @type {NbOutput[]} */
      const outs = [];
      if (withOutputs) {
        for (const rec of c.outputs) {
          const o = outputToNb(rec);
          if (!o) continue;
          const prev = outs[outs.length - 1];
          if (o.output_type === 'stream' && prev && prev.output_type === 'stream' && prev.name === o.name) {
            prev.text = splitLines(prev.text.join('') + o.text.join(''));
          } else {
            outs.push(o);
          }
        }
      }
      return {
        cell_type: 'code',
        id: c.id,
        metadata: c.language ? { glassroom: { language: c.language } } : {},
        source: src,
        execution_count: c.executionCount != null ? c.executionCount : null,
        outputs: outs
      };
    })
  };
}

// fromNotebook reads the cells of an nbformat 4 document (a parsed JSON
// value, possibly hostile). It throws for anything that is not one. Ids
// that repeat are dropped (the caller makes new ones).
/**
 * @param {unknown} nb
 * @returns {CellData[]}
 */
export function fromNotebook(nb) {
  if (!isObject(nb) || !Array.isArray(nb.cells)) throw new Error('not a notebook (no cells)');
  if (nb.nbformat !== undefined && nb.nbformat < 4) throw new Error('nbformat ' + nb.nbformat + ' is not supported (need 4)');
  const seen = new Set();
  /** @type {CellData[]} */
  const cells = [];
  for (const c of nb.cells) {
    if (!c || typeof c !== 'object') continue;
    const type = c.cell_type === 'markdown' || c.cell_type === 'raw' ? c.cell_type : 'code';
    const id = typeof c.id === 'string' && !seen.has(c.id) ? c.id : null;
    if (id) seen.add(id);
    /** @type {OutputRecord[]} */
    const outputs = [];
    if (type === 'code' && Array.isArray(c.outputs)) {
      for (const o of c.outputs) {
        const rec = outputFromNb(o);
        if (rec) outputs.push(rec);
      }
    }
    const g = isObject(c.metadata) && isObject(c.metadata.glassroom) ? c.metadata.glassroom : {};
    cells.push({
      id,
      type,
      source: joinText(c.source),
      executionCount: type === 'code' && typeof c.execution_count === 'number' ? c.execution_count : null,
      outputs,
      language: type === 'code' && typeof g.language === 'string' && LANGUAGE_NAME.test(g.language) ? g.language : null
    });
  }
  return cells;
}
