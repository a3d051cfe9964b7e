import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  displayIdOf,
  displayUpdate,
  fromNotebook,
  mergeStream,
  normData,
  outputFromEvent,
  outputFromNb,
  outputToNb,
  toNotebook
} from '../static/js/nbformat.js';

const cells = [
  {
    id: 'c1',
    type: 'code',
    source: 'print("hi")\nx = 1',
    executionCount: 3,
    outputs: [
      { output_type: 'stream', name: 'stdout', text: 'a\n' },
      { output_type: 'stream', name: 'stdout', text: 'b\n' },
      { output_type: 'stream', name: 'stderr', text: 'warn\n' },
      { output_type: 'input', prompt: 'who? ', password: false, value: 'ada' },
      { output_type: 'input', prompt: 'pw: ', password: true, value: 'secret' },
      { output_type: 'input', prompt: 'never ', password: false, value: null },
      { output_type: 'execute_result', data: { 'text/plain': '42', 'text/html': '<b>42</b>\n<i>x</i>' }, metadata: {}, execution_count: 3 },
      { output_type: 'display_data', data: { 'image/png': 'iVBOR' }, metadata: { 'image/png': { width: 10 } }, display_id: 'd' },
      { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: ['\x1b[31mline\x1b[0m'] },
      { output_type: 'notice', cls: 'output-notice', text: 'not saved' }
    ]
  },
  { id: 'm1', type: 'markdown', source: '# Title\n\n- item', executionCount: null, outputs: [] },
  { id: 'r1', type: 'raw', source: 'raw text', executionCount: null, outputs: [] }
];

test('toNotebook writes nbformat 4.5', () => {
  const nb = toNotebook(cells, true);
  assert.equal(nb.nbformat, 4);
  assert.equal(nb.nbformat_minor, 5);
  assert.equal(nb.metadata.kernelspec.name, 'python3');
  const [code, md, raw] = nb.cells;
  assert.deepEqual(code.source, ['print("hi")\n', 'x = 1']);
  assert.equal(code.execution_count, 3);
  assert.deepEqual(
    code.outputs.map((o) => o.output_type),
    ['stream', 'stream', 'stream', 'execute_result', 'display_data', 'error']
  );
  assert.deepEqual(code.outputs[0], { output_type: 'stream', name: 'stdout', text: ['a\n', 'b\n'] });
  assert.deepEqual(code.outputs[2].text, ['who? ada\n', 'pw: \u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\n']);
  assert.ok(!JSON.stringify(nb).includes('secret'), 'a password answer is never saved');
  assert.deepEqual(code.outputs[3].data['text/html'], ['<b>42</b>\n', '<i>x</i>']);
  assert.equal(code.outputs[4].data['image/png'], 'iVBOR');
  assert.deepEqual(md, { cell_type: 'markdown', id: 'm1', metadata: {}, source: ['# Title\n', '\n', '- item'] });
  assert.equal(raw.cell_type, 'raw');
  assert.equal('outputs' in md, false);
  assert.deepEqual(toNotebook(cells, false).cells[0].outputs, []);
});

test('fromNotebook reads back what toNotebook wrote', () => {
  const back = fromNotebook(JSON.parse(JSON.stringify(toNotebook(cells, true))));
  assert.deepEqual(
    back.map((c) => [c.id, c.type, c.source, c.executionCount]),
    cells.map((c) => [c.id, c.type, c.source, c.executionCount])
  );
  assert.equal(back[0].outputs[0].text, 'a\nb\n');
  assert.equal(back[0].outputs[3].data['text/html'], '<b>42</b>\n<i>x</i>');
  assert.deepEqual(back[0].outputs[5], { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: ['\x1b[31mline\x1b[0m'] });
  assert.deepEqual(back[1].outputs, []);
});

test('fromNotebook refuses what is not a notebook', () => {
  for (const bad of [null, 1, 'x', {}, { cells: 'x' }, { nbformat: 3, cells: [] }]) {
    assert.throws(() => fromNotebook(bad), /notebook|nbformat/);
  }
});

test('fromNotebook survives hostile cells', () => {
  const got = fromNotebook({
    nbformat: 4,
    cells: [
      null,
      7,
      { cell_type: 'evil', source: 5, outputs: 'x' },
      { cell_type: 'code', id: 'dup', source: ['a'], outputs: [null, { output_type: 'nope' }, { output_type: 'pyerr' }, { output_type: 'stream', name: 'x', text: ['q'] }] },
      { cell_type: 'markdown', id: 'dup', source: 'm', outputs: [{ output_type: 'stream', text: 'ignored' }], execution_count: 9 },
      { cell_type: 'code', id: { toString: 1 }, execution_count: '4' }
    ]
  });
  assert.equal(got.length, 4);
  assert.deepEqual(got[0], { id: null, type: 'code', source: '5', executionCount: null, outputs: [], language: null });
  assert.equal(got[1].id, 'dup');
  assert.deepEqual(got[1].outputs, [
    { output_type: 'error', ename: 'Error', evalue: '', traceback: [] },
    { output_type: 'stream', name: 'stdout', text: 'q' }
  ]);
  assert.deepEqual(got[2], { id: null, type: 'markdown', source: 'm', executionCount: null, outputs: [], language: null });
  assert.equal(got[3].id, null);
  assert.equal(got[3].executionCount, null);
});

test('MIME data and single outputs', () => {
  assert.deepEqual(normData({ 'text/plain': ['a\n', 'b'], 'application/json': [1, 2], 'image/png': 'x' }), {
    'text/plain': 'a\nb',
    'application/json': [1, 2],
    'image/png': 'x'
  });
  assert.deepEqual(normData(null), {});
  assert.equal(outputToNb({ output_type: 'notice', text: 'x' }), null);
  assert.equal(outputFromNb('x'), null);
  assert.equal(outputFromNb({ output_type: 'pyout', data: {}, execution_count: 'x' }).execution_count, null);
});

// outputsOf applies execution events to a cell's outputs the way cells.js
// does: each output event becomes a record, stream chunks merge.
function outputsOf(events) {
  const outs = [];
  for (const ev of events) {
    const rec = outputFromEvent(ev);
    if (!rec) continue;
    if (rec.output_type === 'stream' && (!rec.text || mergeStream(outs, rec))) continue;
    outs.push(rec);
  }
  return outs;
}

test('stream events merge per name, as Jupyter shows them', () => {
  const outs = outputsOf([
    { type: 'stream', id: 'x', name: 'stdout', text: 'a\n' },
    { type: 'stream', id: 'x', name: 'stdout', text: ['b\n', 'c'] },
    { type: 'stream', id: 'x', name: 'stdout', text: '' },
    { type: 'stream', id: 'x', name: 'stderr', text: 'warn\n' },
    { type: 'stream', id: 'x', name: 'stdout', text: 'd\n' },
    { type: 'stream', id: 'x', name: 'evil', text: 'e\n' },
    { type: 'stream', id: 'x', text: 5 }
  ]);
  assert.deepEqual(outs, [
    { output_type: 'stream', name: 'stdout', text: 'a\nb\nc' },
    { output_type: 'stream', name: 'stderr', text: 'warn\n' },
    { output_type: 'stream', name: 'stdout', text: 'd\ne\n5' }
  ]);

  const list = [{ output_type: 'stream', name: 'stdout', text: 'x' }];
  const chunk = { output_type: 'stream', name: 'stdout', text: 'y' };
  assert.equal(mergeStream(list, chunk), list[0], 'returns the record it extended');
  assert.equal(list[0].text, 'xy');
  assert.equal(mergeStream(list, { output_type: 'stream', name: 'stderr', text: 'z' }), null);
  assert.equal(mergeStream([{ output_type: 'error', ename: 'E', evalue: '', traceback: [] }], chunk), null);
  assert.equal(mergeStream([], chunk), null);
  assert.equal(list.length, 1);
});

test('result events become execute_result outputs', () => {
  assert.deepEqual(
    outputFromEvent({
      type: 'result',
      id: 'x',
      execution_count: 7,
      data: { 'text/plain': ['4', '2'], 'application/json': { a: [1] } },
      metadata: { isolated: true }
    }),
    {
      output_type: 'execute_result',
      data: { 'text/plain': '4\n2', 'application/json': { a: [1] } },
      metadata: { isolated: true },
      execution_count: 7
    }
  );
  assert.deepEqual(outputFromEvent({ type: 'result', execution_count: '7', data: 'x', metadata: 'y' }), {
    output_type: 'execute_result',
    data: {},
    metadata: {},
    execution_count: null
  });
});

test('display events become display_data outputs with their display_id', () => {
  const ev = { type: 'display', id: 'x', data: { 'image/png': 'iVBOR', 'text/plain': ['<Figure>'] }, metadata: { 'image/png': { width: 10 } }, transient: { display_id: 'd1' } };
  assert.deepEqual(outputFromEvent(ev), {
    output_type: 'display_data',
    data: { 'image/png': 'iVBOR', 'text/plain': '<Figure>' },
    metadata: { 'image/png': { width: 10 } },
    display_id: 'd1'
  });
  assert.equal(outputFromEvent({ type: 'display', data: {}, display_id: 'top' }).display_id, 'top');
  assert.equal(outputFromEvent({ type: 'display', data: {} }).display_id, null);
  assert.equal(displayIdOf({ transient: 'd' }), null);
  assert.equal(displayIdOf({ display_id: 12 }), '12');

  assert.deepEqual(displayUpdate({ type: 'update_display', transient: { display_id: 'd1' }, data: { 'text/plain': ['x'] } }), {
    display_id: 'd1',
    data: { 'text/plain': 'x' },
    metadata: {}
  });
  assert.equal(displayUpdate({ type: 'update_display', data: {} }), null);
});

test('error events become error outputs', () => {
  assert.deepEqual(outputFromEvent({ type: 'error', id: 'x', name: 'ZeroDivisionError', value: 'division by zero', traceback: ['\x1b[31mTraceback\x1b[0m', 3] }), {
    output_type: 'error',
    ename: 'ZeroDivisionError',
    evalue: 'division by zero',
    traceback: ['\x1b[31mTraceback\x1b[0m', '3']
  });
  assert.deepEqual(outputFromEvent({ type: 'error', traceback: 'x' }), { output_type: 'error', ename: 'Error', evalue: '', traceback: [] });
});

test('events that are not outputs map to nothing', () => {
  for (const type of ['queued', 'done', 'clear_output', 'input_request', 'update_display', 'kernel', 'rejected', 'complete_reply', undefined, 7]) {
    assert.equal(outputFromEvent({ type, id: 'x', name: 'stdout', text: 'a', data: {} }), null, String(type));
  }
});

test('the outputs of events survive a save and an open', () => {
  const outs = outputsOf([
    { type: 'stream', name: 'stdout', text: 'line 1\n' },
    { type: 'stream', name: 'stdout', text: 'line 2\nno newline' },
    { type: 'stream', name: 'stderr', text: 'warn\n' },
    { type: 'display', data: { 'text/html': '<b>x</b>\n<i>y</i>', 'text/plain': 'x' }, metadata: {}, transient: { display_id: 'd' } },
    { type: 'result', execution_count: 3, data: { 'text/plain': '42', 'application/json': [1, 2] }, metadata: {} },
    { type: 'error', name: 'ValueError', value: 'bad', traceback: ['a', 'b'] }
  ]);
  const cells = [{ id: 'c1', type: 'code', source: 'print(1)\n42', executionCount: 3, outputs: outs }];
  const nb = JSON.parse(JSON.stringify(toNotebook(cells, true)));
  assert.deepEqual(nb.cells[0].outputs, [
    { output_type: 'stream', name: 'stdout', text: ['line 1\n', 'line 2\n', 'no newline'] },
    { output_type: 'stream', name: 'stderr', text: ['warn\n'] },
    { output_type: 'display_data', data: { 'text/html': ['<b>x</b>\n', '<i>y</i>'], 'text/plain': ['x'] }, metadata: {} },
    { output_type: 'execute_result', data: { 'text/plain': ['42'], 'application/json': [1, 2] }, metadata: {}, execution_count: 3 },
    { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: ['a', 'b'] }
  ]);
  const back = fromNotebook(nb);
  assert.equal(back.length, 1);
  // A display_id names a live display: it is not saved.
  assert.deepEqual(
    back[0].outputs,
    outs.map((o) => (o.output_type === 'display_data' ? { ...o, display_id: null } : o))
  );
  assert.deepEqual(toNotebook(back, true), nb, 'saving what was opened gives the same document');
});

test('a code cell run in another language than the notebook says so in its metadata', () => {
  const mixed = [
    { id: 'p', type: 'code', source: 'x = 1', executionCount: 1, outputs: [], language: null },
    { id: 'r', type: 'code', source: 'plot(1:10)', executionCount: 1, outputs: [], language: 'r' },
    { id: 'm', type: 'markdown', source: '# r', executionCount: null, outputs: [], language: 'r' }
  ];
  const nb = JSON.parse(JSON.stringify(toNotebook(mixed, true)));
  assert.deepEqual(nb.cells[0].metadata, {});
  assert.deepEqual(nb.cells[1].metadata, { glassroom: { language: 'r' } });
  assert.deepEqual(nb.cells[2].metadata, {}, 'only code cells run');
  const back = fromNotebook(nb);
  assert.deepEqual(back.map((c) => c.language), [null, 'r', null]);
  // Hostile metadata is ignored.
  for (const bad of [5, '', 'a b', '<img>', 'x'.repeat(65), ['r'], { language: 'r' }]) {
    const c = fromNotebook({ cells: [{ cell_type: 'code', source: '', metadata: { glassroom: { language: bad } } }] })[0];
    assert.equal(c.language, null, JSON.stringify(bad));
  }
  assert.equal(fromNotebook({ cells: [{ cell_type: 'code', source: '', metadata: { glassroom: 'r' } }] })[0].language, null);
});
