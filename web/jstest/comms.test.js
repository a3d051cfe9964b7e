import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COMM_BYTES, base64ToView, bufferToBase64, createComms, parseMessage, sinkItemOfEvent } from '../static/js/comms.js';

// A fake socket: the frames the page sent, and events as the gateway sends them.
function setup({ onTarget = () => true } = {}) {
  const sent = [];
  const asked = [];
  let n = 0;
  const comms = createComms({
    send: (f) => sent.push(JSON.parse(JSON.stringify(f))),
    onTarget: (t) => {
      asked.push(t);
      return onTarget(t);
    },
    newId: () => 'm' + ++n
  });
  return { comms, sent, asked };
}

let seq = 0;
function commEvent(msgType, content, { parent = '', buffers, context } = {}) {
  const ev = {
    type: 'comm',
    seq: ++seq,
    msg: {
      header: { msg_id: 'k' + seq, msg_type: msgType },
      parent_header: parent ? { msg_id: parent } : {},
      content,
      metadata: { version: '2.1.0' }
    }
  };
  if (buffers) ev.msg.buffers = buffers;
  if (context) ev.context = context;
  return ev;
}

const sliderOpen = (id, extra = {}) =>
  commEvent('comm_open', {
    comm_id: id,
    target_name: 'jupyter.widget',
    data: { state: { _model_name: 'IntSliderModel', _model_module: '@jupyter-widgets/controls', value: 5 }, buffer_paths: [] }
  }, extra);
const outputOpen = (id, extra = {}) =>
  commEvent('comm_open', {
    comm_id: id,
    target_name: 'jupyter.widget',
    data: { state: { _model_name: 'OutputModel', _model_module: '@jupyter-widgets/output', msg_id: '', outputs: [] }, buffer_paths: [] }
  }, extra);
const update = (id, state, parent) => commEvent('comm_msg', { comm_id: id, data: { method: 'update', state, buffer_paths: [] } }, { parent });

// A handler as the widget manager's: the model (and its comm handlers)
// exists only once a promise resolves.
function modelHandler(log) {
  return (comm, msg) =>
    Promise.resolve().then(() => {
      log.push(['open', comm.comm_id, msg.content.data.state._model_name]);
      comm.on_msg((m) => log.push(['msg', comm.comm_id, m.content.data.state ? m.content.data.state.value : m.content.data]));
      comm.on_close(() => log.push(['close', comm.comm_id]));
    });
}

test('buffers: base64 to DataView and back', () => {
  const bytes = new Uint8Array([0, 1, 2, 250, 255]);
  const b64 = bufferToBase64(bytes);
  assert.equal(b64, 'AAEC+v8=');
  const view = base64ToView(b64);
  assert.ok(view instanceof DataView);
  assert.deepEqual([...new Uint8Array(view.buffer)], [...bytes]);
  assert.equal(bufferToBase64(bytes.buffer), b64);
  assert.equal(bufferToBase64(new DataView(bytes.buffer, 1, 2)), bufferToBase64(new Uint8Array([1, 2])));
  const big = new Uint8Array(100000).map((_, i) => i & 255);
  assert.deepEqual(new Uint8Array(base64ToView(bufferToBase64(big)).buffer), big);
});

test('parseMessage checks hostile messages', () => {
  const good = parseMessage({ header: { msg_id: 'a', msg_type: 'comm_msg' }, parent_header: { msg_id: 'p' }, content: { comm_id: 'c', data: {} }, buffers: ['AAE='] });
  assert.equal(good.channel, 'shell');
  assert.equal(good.parent_header.msg_id, 'p');
  assert.deepEqual([...new Uint8Array(good.buffers[0].buffer)], [0, 1]);
  assert.equal(parseMessage({ header: { msg_type: 'stream' }, content: { name: 'stdout', text: 'x' } }).channel, 'iopub');
  for (const bad of [
    null,
    'x',
    [],
    { header: 'comm_msg' },
    { header: { msg_type: 7 } },
    { header: { msg_type: 'comm_msg' }, content: { comm_id: 3 } },
    { header: { msg_type: 'comm_open' }, content: {} },
    { header: { msg_type: 'comm_msg' }, content: { comm_id: 'c' }, buffers: 'AAE=' },
    { header: { msg_type: 'comm_msg' }, content: { comm_id: 'c' }, buffers: [1] },
    { header: { msg_type: 'comm_msg' }, content: { comm_id: 'c' }, buffers: ['***'] }
  ]) {
    assert.equal(parseMessage(bad), null, JSON.stringify(bad));
  }
});

test('a comm_open waits for its target to load, with what follows it, in order', async () => {
  const { comms, asked } = setup();
  const log = [];
  comms.handle(sliderOpen('s1'));
  comms.handle(update('s1', { value: 6 }));
  comms.handle(update('s1', { value: 7 }));
  assert.deepEqual(asked, ['jupyter.widget']);
  await comms.settled();
  assert.deepEqual(log, []);
  comms.registerCommTarget('jupyter.widget', modelHandler(log));
  // Later messages wait for the model too.
  comms.handle(update('s1', { value: 8 }));
  comms.handle(commEvent('comm_close', { comm_id: 's1', data: {} }));
  await comms.settled();
  assert.deepEqual(log, [
    ['open', 's1', 'IntSliderModel'],
    ['msg', 's1', 6],
    ['msg', 's1', 7],
    ['msg', 's1', 8],
    ['close', 's1']
  ]);
  assert.equal(comms.size(), 0);
});

test('with the target registered, each message waits for the handler before it', async () => {
  const { comms, asked } = setup();
  const log = [];
  comms.registerCommTarget('jupyter.widget', modelHandler(log));
  comms.handle(sliderOpen('s2'));
  comms.handle(update('s2', { value: 1 }));
  await comms.settled();
  assert.deepEqual(log, [
    ['open', 's2', 'IntSliderModel'],
    ['msg', 's2', 1]
  ]);
  assert.deepEqual(asked, []);
  assert.equal(comms.size(), 1);
});

test('a target nobody loads is dropped, and so is what comes for its comm', async () => {
  const { comms, asked } = setup({ onTarget: () => false });
  const log = [];
  comms.handle(commEvent('comm_open', { comm_id: 'x1', target_name: 'some.other', data: {} }));
  comms.handle(commEvent('comm_msg', { comm_id: 'x1', data: { a: 1 } }));
  comms.registerCommTarget('some.other', modelHandler(log));
  comms.handle(commEvent('comm_msg', { comm_id: 'x1', data: { a: 2 } }));
  await comms.settled();
  assert.deepEqual(asked, ['some.other']);
  assert.deepEqual(log, []);
  assert.equal(comms.size(), 0);
});

test('dropTarget forgets what waited for a target that failed to load', async () => {
  const { comms } = setup();
  const log = [];
  comms.handle(sliderOpen('s3'));
  comms.dropTarget('jupyter.widget');
  comms.registerCommTarget('jupyter.widget', modelHandler(log));
  await comms.settled();
  assert.deepEqual(log, []);
});

test('the page sends comm frames with base64 buffers; status and output reach the callbacks', async () => {
  const { comms, sent } = setup();
  const comm = comms.newComm('jupyter.widget', 'w1');
  const openId = comm.open({ state: { _model_name: 'IntSliderModel' } }, undefined, { version: '2.1.0' }, [new Uint8Array([1, 2, 3])]);
  assert.deepEqual(sent.pop(), {
    type: 'comm',
    id: openId,
    msg_type: 'comm_open',
    content: { comm_id: 'w1', target_name: 'jupyter.widget', data: { state: { _model_name: 'IntSliderModel' } } },
    metadata: { version: '2.1.0' },
    buffers: ['AQID']
  });
  const calls = [];
  const id = comm.send({ method: 'update', state: { value: 7 } }, {
    iopub: { status: (m) => calls.push('status ' + m.content.execution_state), output: (m) => calls.push('output ' + m.content.text) }
  });
  assert.deepEqual(sent.pop(), {
    type: 'comm',
    id,
    msg_type: 'comm_msg',
    content: { comm_id: 'w1', data: { method: 'update', state: { value: 7 } } },
    metadata: {},
    buffers: []
  });
  comms.handle(commEvent('status', { execution_state: 'busy' }, { parent: id }));
  comms.handle(commEvent('stream', { name: 'stdout', text: 'changed' }, { parent: id }));
  comms.handle(commEvent('status', { execution_state: 'idle' }, { parent: id }));
  comms.handle(commEvent('status', { execution_state: 'idle' }, { parent: id })); // once only
  comms.handle(commEvent('status', { execution_state: 'idle' }, { parent: 'not-ours' }));
  await comms.settled();
  assert.deepEqual(calls, ['status busy', 'output changed', 'status idle']);

  const closeId = comm.close();
  assert.deepEqual(sent.pop(), { type: 'comm', id: closeId, msg_type: 'comm_close', content: { comm_id: 'w1', data: {} }, metadata: {}, buffers: [] });
  assert.equal(comms.size(), 0);
});

test('comm_sent with another msg_id: what comes for it is named by the frame id from then on', async () => {
  const { comms } = setup();
  const comm = comms.newComm('jupyter.widget', 'w2');
  const calls = [];
  comm.on_msg((m) => calls.push('msg ' + m.parent_header.msg_id));
  const id = comm.send({ method: 'update', state: { value: 1 } }, { iopub: { status: (m) => calls.push('status ' + m.content.execution_state + ' ' + m.parent_header.msg_id) } });
  // The gateway kept the frame id as the msg_id: nothing to map.
  comms.handle({ type: 'comm_sent', id, msg_id: id });
  comms.handle(commEvent('status', { execution_state: 'busy' }, { parent: id }));
  comms.handle(commEvent('status', { execution_state: 'idle' }, { parent: id }));
  // Another msg_id: the echo and the idle name it, the page sees the frame's.
  const id2 = comm.send({ method: 'update', state: { value: 2 } }, { iopub: { status: (m) => calls.push('status ' + m.content.execution_state + ' ' + m.parent_header.msg_id) } });
  comms.handle({ type: 'comm_sent', id: id2, msg_id: 'gateway-made' });
  comms.handle(commEvent('comm_msg', { comm_id: 'w2', data: { method: 'echo_update', state: { value: 2 } } }, { parent: 'gateway-made' }));
  comms.handle(commEvent('status', { execution_state: 'idle' }, { parent: 'gateway-made' }));
  // A comm_sent of a frame the page did not send maps nothing.
  comms.handle({ type: 'comm_sent', id: 'not-sent', msg_id: 'other' });
  comms.handle(commEvent('comm_msg', { comm_id: 'w2', data: { method: 'echo_update', state: { value: 3 } } }, { parent: 'other' }));
  await comms.settled();
  assert.deepEqual(calls, ['status busy ' + id, 'status idle ' + id, 'msg ' + id2, 'status idle ' + id2, 'msg other']);
});

test('a rejected comm frame gets the idle a kernel would send, so the widget goes on', async () => {
  const { comms } = setup();
  const comm = comms.newComm('jupyter.widget', 'w3');
  const calls = [];
  const id = comm.send({ method: 'update', state: { value: 1 } }, { iopub: { status: (m) => calls.push(m.content.execution_state + ' ' + m.parent_header.msg_id) } });
  const warn = console.warn;
  console.warn = () => calls.push('warned');
  try {
    assert.equal(comms.onRejected({ type: 'rejected', id, code: 'rate_limited', message: 'too fast' }), true);
    assert.equal(comms.onRejected({ type: 'rejected', id, code: 'rate_limited', message: 'too fast' }), false); // once
  } finally {
    console.warn = warn;
  }
  await comms.settled();
  assert.deepEqual(calls, ['warned', 'idle ' + id]);
});

test('a message above MAX_COMM_BYTES is not sent: the user is told, the widget gets its idle', async () => {
  const told = [];
  const sent = [];
  const comms = createComms({ send: (f) => sent.push(f), onTarget: () => true, newId: () => 'big', refused: (t) => told.push(t) });
  const comm = comms.newComm('jupyter.widget', 'up1');
  sent.length = 0; // the comm_open
  const calls = [];
  const warn = console.warn;
  console.warn = () => {};
  try {
    const file = new Uint8Array(MAX_COMM_BYTES + (1 << 20));
    const id = comm.send({ method: 'update', state: {}, buffer_paths: [['value', 0, 'content']] }, { iopub: { status: (m) => calls.push(m.content.execution_state + ' ' + m.parent_header.msg_id) } }, {}, [file]);
    assert.equal(id, 'big');
    assert.equal(sent.length, 0);
    await comms.settled();
    assert.deepEqual(calls, ['idle big']);
    assert.equal(told.length, 1);
    assert.match(told[0], /is 9 MiB, more than the 8 MiB a comm message may carry; it was not sent/);
    // At the limit it goes, buffers in base64.
    const fits = new Uint8Array(MAX_COMM_BYTES - 200);
    comm.send({ method: 'update', state: {}, buffer_paths: [] }, undefined, {}, [fits]);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].buffers[0].length, Math.ceil(fits.length / 3) * 4);
  } finally {
    console.warn = warn;
  }
});

test('a lost connection gives the messages in flight their idle, once', async () => {
  const { comms } = setup();
  const comm = comms.newComm('jupyter.widget', 'w9');
  const calls = [];
  const status = { iopub: { status: (m) => calls.push(m.content.execution_state + ' ' + m.parent_header.msg_id) } };
  const a = comm.send({ method: 'update', state: { value: 1 } }, status);
  const b = comm.send({ method: 'update', state: { value: 2 } }, status);
  comms.connectionLost();
  comms.connectionLost(); // nothing is pending any more
  await comms.settled();
  assert.deepEqual(calls, ['idle ' + a, 'idle ' + b]);
  assert.equal(comms.onRejected({ type: 'rejected', id: a, code: 'x', message: 'late' }), false);
});

test('kernel buffers arrive as DataViews', async () => {
  const { comms } = setup();
  let got = null;
  comms.registerCommTarget('jupyter.widget', (comm, msg) => {
    got = msg.buffers;
  });
  comms.handle(commEvent('comm_open', { comm_id: 'b1', target_name: 'jupyter.widget', data: { state: {}, buffer_paths: [['value']] } }, { buffers: ['AAECAw=='] }));
  await comms.settled();
  assert.equal(got.length, 1);
  assert.deepEqual([...new Uint8Array(got[0].buffer)], [0, 1, 2, 3]);
});

test('commInfo asks the kernel and answers its comms of the target', async () => {
  const { comms, sent } = setup();
  const p = comms.commInfo('jupyter.widget');
  const f = sent.pop();
  assert.deepEqual(f, { type: 'comm_info', id: f.id, target_name: 'jupyter.widget' });
  comms.handle({ type: 'comm_info_reply', id: 'other', comms: { z: { target_name: 'jupyter.widget' } } });
  comms.handle({
    type: 'comm_info_reply',
    id: f.id,
    comms: { a: { target_name: 'jupyter.widget' }, b: { target_name: 'else' }, c: 'junk', d: { target_name: 5 } }
  });
  assert.deepEqual(await p, { a: { target_name: 'jupyter.widget' } });

  const q = comms.commInfo('jupyter.widget');
  const g = sent.pop();
  assert.equal(comms.onRejected({ type: 'rejected', id: g.id, code: 'unknown_type', message: 'no comms here' }), true);
  await assert.rejects(q, /no comms here/);
  assert.equal(comms.onRejected({ type: 'rejected', id: 'an-execution' }), false);
});

test('an Output widget takes the outputs of the execution that holds it (with out:), in order', async () => {
  const { comms } = setup();
  comms.registerCommTarget('jupyter.widget', () => {});
  comms.handle(outputOpen('o1', { parent: 'exec-1' }));
  // The kernel names its own request id; the gateway names the execution.
  comms.handle(update('o1', { msg_id: 'kernel-req-9' }, 'exec-1'));
  const stream = { type: 'stream', id: 'exec-1', name: 'stdout', text: 'in out\n' };
  assert.equal(comms.captureEvent(stream), true);
  assert.equal(comms.captureEvent({ type: 'display', id: 'exec-1', data: { 'image/png': 'iVBOR' }, metadata: {} }), true);
  assert.equal(comms.captureEvent({ type: 'clear_output', id: 'exec-1', wait: true }), true);
  assert.equal(comms.captureEvent({ type: 'error', id: 'exec-1', name: 'E', value: 'v', traceback: ['t'] }), true);
  assert.equal(comms.captureEvent({ type: 'done', id: 'exec-1', status: 'ok' }), false);
  assert.equal(comms.captureEvent({ type: 'stream', id: 'exec-2', name: 'stdout', text: 'elsewhere' }), false);
  // The model sets its sink later: nothing is lost, the order is kept.
  const got = [];
  comms.setOutputSink('o1', (item) => got.push(item));
  assert.deepEqual(got, [
    { output: { output_type: 'stream', name: 'stdout', text: 'in out\n' } },
    { output: { output_type: 'display_data', data: { 'image/png': 'iVBOR' }, metadata: {} } },
    { clear: true, wait: true },
    { output: { output_type: 'error', ename: 'E', evalue: 'v', traceback: ['t'] } }
  ]);
  // Leaving `with out:` stops it.
  comms.handle(update('o1', { msg_id: '' }, 'exec-1'));
  assert.equal(comms.captureEvent(stream), false);
});

test('an Output widget takes the outputs of a widget callback (interact)', async () => {
  const { comms } = setup();
  comms.registerCommTarget('jupyter.widget', () => {});
  comms.handle(outputOpen('o2'));
  const slider = comms.newComm('jupyter.widget', 's9');
  const outputs = [];
  const id = slider.send({ method: 'update', state: { value: 3 } }, { iopub: { output: (m) => outputs.push(m.content) } });
  comms.handle(update('o2', { msg_id: 'kernel-own-id' }, id));
  comms.handle(commEvent('display_data', { data: { 'text/plain': 'plot 3' }, metadata: {} }, { parent: id }));
  comms.handle(update('o2', { msg_id: '' }, id));
  comms.handle(commEvent('stream', { name: 'stdout', text: 'after' }, { parent: id }));
  const got = [];
  comms.setOutputSink('o2', (item) => got.push(item));
  await comms.settled();
  assert.deepEqual(got, [{ output: { output_type: 'display_data', data: { 'text/plain': 'plot 3' }, metadata: {} } }]);
  assert.deepEqual(outputs, [{ name: 'stdout', text: 'after' }]); // the callback's, not the widget's
  // A gateway that passes the kernel's ids through: msg_id is the parent.
  comms.handle(update('o2', { msg_id: 'same' }, 'same'));
  comms.handle(commEvent('stream', { name: 'stdout', text: 'direct' }, { parent: 'same' }));
  assert.deepEqual(got.at(-1), { output: { output_type: 'stream', name: 'stdout', text: 'direct' } });
});

test('the Output widget set last captures first; other widgets never capture', async () => {
  const { comms } = setup();
  comms.registerCommTarget('jupyter.widget', () => {});
  comms.handle(outputOpen('outer'));
  comms.handle(outputOpen('inner'));
  comms.handle(sliderOpen('notout'));
  comms.handle(update('notout', { msg_id: 'exec-5' }, 'exec-5'));
  assert.equal(comms.captureEvent({ type: 'stream', id: 'exec-5', name: 'stdout', text: 'x' }), false);
  comms.handle(update('outer', { msg_id: 'exec-5' }, 'exec-5'));
  comms.handle(update('inner', { msg_id: 'exec-5' }, 'exec-5'));
  const got = { outer: [], inner: [] };
  comms.setOutputSink('outer', (i) => got.outer.push(i));
  comms.setOutputSink('inner', (i) => got.inner.push(i));
  comms.captureEvent({ type: 'stream', id: 'exec-5', name: 'stdout', text: 'nested' });
  comms.handle(update('inner', { msg_id: '' }, 'exec-5'));
  comms.captureEvent({ type: 'stream', id: 'exec-5', name: 'stdout', text: 'outer again' });
  assert.deepEqual(got.inner.map((i) => i.output.text), ['nested']);
  assert.deepEqual(got.outer.map((i) => i.output.text), ['outer again']);
});

test('restored comms (newComm with the kernel id) learn their model from request_state', async () => {
  const { comms } = setup();
  const c = comms.newComm('jupyter.widget', 'o3');
  c.send({ method: 'request_state' });
  comms.handle(update('o3', { _model_name: 'OutputModel', msg_id: 'exec-7', outputs: [] }, 'x'));
  const got = [];
  comms.setOutputSink('o3', (i) => got.push(i));
  assert.equal(comms.captureEvent({ type: 'stream', id: 'exec-7', name: 'stdout', text: 'y' }), true);
  assert.equal(got.length, 1);
});

test('closeAll closes the comms of a context as if the kernel did', async () => {
  const { comms } = setup();
  const log = [];
  comms.registerCommTarget('jupyter.widget', modelHandler(log));
  comms.handle(sliderOpen('p1'));
  comms.handle(sliderOpen('r1', { context: 'ctx-r' }));
  await comms.settled();
  comms.closeAll('ctx-r');
  await comms.settled();
  assert.deepEqual(log.filter((l) => l[0] === 'close'), [['close', 'r1']]);
  assert.equal(comms.size(), 1);
  const info = comms.commInfo('jupyter.widget');
  comms.closeAll(null);
  await comms.settled();
  assert.deepEqual(log.filter((l) => l[0] === 'close'), [['close', 'r1'], ['close', 'p1']]);
  assert.equal(comms.size(), 0);
  await assert.rejects(info, /session changed/);
});

test('malformed and unknown events are ignored; floods are bounded', async () => {
  const { comms } = setup({ onTarget: (t) => t === 'jupyter.widget' });
  for (const bad of [
    { type: 'comm' },
    { type: 'comm', msg: 'x' },
    { type: 'comm', msg: { header: { msg_type: 'comm_msg' }, content: { comm_id: 1 } } },
    { type: 'comm', msg: { header: { msg_type: 'comm_msg' }, content: { comm_id: 'nobody', data: {} } } },
    { type: 'comm', msg: { header: { msg_type: 'stream' }, content: 'x' } },
    { type: 'comm_info_reply', id: 'unknown', comms: 5 }
  ]) {
    assert.doesNotThrow(() => comms.handle(bad));
  }
  // 100,000 comm_opens of a target nobody loads keep nothing.
  for (let i = 0; i < 100000; i++) comms.handle(commEvent('comm_open', { comm_id: 'f' + i, target_name: 'nobody', data: {} }));
  assert.equal(comms.size(), 0);
  // A comm whose target loads keeps at most 1,000 of its messages meanwhile.
  comms.handle(sliderOpen('flood'));
  for (let i = 0; i < 5000; i++) comms.handle(update('flood', { value: i }));
  let seen = 0;
  comms.registerCommTarget('jupyter.widget', (c) => c.on_msg(() => seen++));
  await comms.settled();
  assert.equal(seen, 999);
});

test('sinkItemOfEvent maps execution events', () => {
  assert.deepEqual(sinkItemOfEvent({ type: 'result', data: { 'text/plain': '1' }, metadata: {}, execution_count: 3 }), {
    output: { output_type: 'execute_result', data: { 'text/plain': '1' }, metadata: {}, execution_count: 3 }
  });
  assert.deepEqual(sinkItemOfEvent({ type: 'stream', name: 'bogus', text: 5 }), { output: { output_type: 'stream', name: 'stdout', text: '' } });
  assert.equal(sinkItemOfEvent({ type: 'queued' }), null);
  assert.equal(sinkItemOfEvent({ type: 'update_display' }), null);
});
