import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromNotebook, normData, outputFromNb, outputToNb, toNotebook } from '../static/js/nbformat.js';

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
  assert.deepEqual(got[0], { id: null, type: 'code', source: '5', executionCount: null, outputs: [] });
  assert.equal(got[1].id, 'dup');
  assert.deepEqual(got[1].outputs, [
    { output_type: 'error', ename: 'Error', evalue: '', traceback: [] },
    { output_type: 'stream', name: 'stdout', text: 'q' }
  ]);
  assert.deepEqual(got[2], { id: null, type: 'markdown', source: 'm', executionCount: null, outputs: [] });
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
