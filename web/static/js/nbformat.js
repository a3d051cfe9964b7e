// nbformat 4 import and export. Pure: plain objects in, plain objects out.
//
// A cell here is {id, type: 'code'|'markdown'|'raw', source, executionCount,
// outputs}; an output record is what the outputs module renders:
//   {output_type: 'stream', name, text}
//   {output_type: 'display_data', data, metadata, display_id}
//   {output_type: 'execute_result', data, metadata, execution_count}
//   {output_type: 'error', ename, evalue, traceback}
//   {output_type: 'input', prompt, password, value, ...}   (input() and its answer)
//   {output_type: 'notice', cls, text}                      (UI notes, not saved)

import { joinText, splitLines } from './text.js';

// normData turns a MIME bundle's line lists into strings (JSON types keep
// their structure).
export function normData(d) {
  const out = {};
  if (!d || typeof d !== 'object') return out;
  for (const k of Object.keys(d)) {
    let v = d[k];
    if (Array.isArray(v) && (k.indexOf('json') < 0 || k === 'text/plain')) v = joinText(v);
    out[k] = v;
  }
  return out;
}

function dataToNb(data) {
  const out = {};
  for (const k of Object.keys(data || {})) {
    const v = data[k];
    if (typeof v === 'string' && (k.indexOf('text/') === 0 || k === 'image/svg+xml')) out[k] = splitLines(v);
    else out[k] = v;
  }
  return out;
}

// outputToNb converts an output record to an nbformat output, or null for
// records that are not saved.
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
export function outputFromNb(o) {
  if (!o || typeof o !== 'object') return null;
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
export function toNotebook(cells, withOutputs) {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
      language_info: { name: 'python' }
    },
    cells: cells.map((c) => {
      const src = splitLines(c.source);
      if (c.type !== 'code') {
        return { cell_type: c.type, id: c.id, metadata: {}, source: src };
      }
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
        metadata: {},
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
export function fromNotebook(nb) {
  if (!nb || typeof nb !== 'object' || !Array.isArray(nb.cells)) throw new Error('not a notebook (no cells)');
  if (nb.nbformat !== undefined && nb.nbformat < 4) throw new Error('nbformat ' + nb.nbformat + ' is not supported (need 4)');
  const seen = new Set();
  const cells = [];
  for (const c of nb.cells) {
    if (!c || typeof c !== 'object') continue;
    const type = c.cell_type === 'markdown' || c.cell_type === 'raw' ? c.cell_type : 'code';
    const id = typeof c.id === 'string' && !seen.has(c.id) ? c.id : null;
    if (id) seen.add(id);
    cells.push({
      id,
      type,
      source: joinText(c.source),
      executionCount: type === 'code' && typeof c.execution_count === 'number' ? c.execution_count : null,
      outputs: type === 'code' && Array.isArray(c.outputs) ? c.outputs.map(outputFromNb).filter(Boolean) : []
    });
  }
  return cells;
}
