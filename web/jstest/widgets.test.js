import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWidgets, widgetModelId } from '../static/js/widgets.js';

test('widgetModelId reads a widget-view output of protocol 2', () => {
  assert.equal(widgetModelId({ model_id: 'abc123', version_major: 2, version_minor: 0 }), 'abc123');
  assert.equal(widgetModelId('{"model_id": "f0e1-d2", "version_major": 2}'), 'f0e1-d2');
  assert.equal(widgetModelId({ model_id: 'noversion' }), 'noversion');
  for (const bad of [null, 'junk', '[]', [], {}, { model_id: 5 }, { model_id: '' }, { model_id: 'a b' }, { model_id: '<x>' }, { model_id: 'old', version_major: 1 }, { model_id: 'x'.repeat(200) }]) {
    assert.equal(widgetModelId(bad), null, JSON.stringify(bad));
  }
});

// The page's document, as much of it as widgets.js touches before a view
// is drawn (the stylesheet link).
function fakeDocument() {
  const head = [];
  globalThis.document = {
    head: { appendChild: (e) => head.push(e) },
    querySelector: (sel) => (sel === 'link[data-widgets]' ? head.find((e) => e.dataset.widgets) || null : null),
    createElement: (tag) => ({ tag, dataset: {} })
  };
  return head;
}

// A fake bundle: a manager that records what the page asks of it.
function fakeBundle() {
  const calls = [];
  let imports = 0;
  const manager = {
    handle_comm_open: async (comm, msg) => {
      calls.push(['open', comm.comm_id, msg.content.data.state._model_name]);
      comm.on_close(() => calls.push(['closed', comm.comm_id]));
    },
    _loadFromKernel: async () => {
      calls.push(['restore']);
    },
    renderView: async () => null,
    disposeUnder: (root) => calls.push(['dispose', root]),
    dispose() {}
  };
  return {
    calls,
    imports: () => imports,
    importBundle: async () => {
      imports++;
      return {
        PROTOCOL_VERSION: '2.1.0',
        createWidgetManager: (kernel, hooks) => {
          calls.push(['created', typeof kernel.newComm, typeof hooks.renderOutputs]);
          return manager;
        },
        sanitizedFragment: () => null
      };
    }
  };
}

function widgetsWith(bundle) {
  const sent = [];
  const msgs = [];
  const w = createWidgets({
    send: (f) => sent.push(f),
    msg: (text, kind) => msgs.push([kind, text]),
    renderOutputs: () => {},
    strayOutput: () => {},
    importBundle: bundle.importBundle
  });
  return { w, sent, msgs };
}

const open = (id) => ({
  type: 'comm',
  msg: {
    header: { msg_id: 'k-' + id, msg_type: 'comm_open' },
    parent_header: { msg_id: 'exec-1' },
    content: { comm_id: id, target_name: 'jupyter.widget', data: { state: { _model_name: 'IntSliderModel' }, buffer_paths: [] } },
    metadata: { version: '2.1.0' }
  }
});

async function until(cond) {
  for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 0));
  assert.ok(cond());
}

test('a widget comm_open loads the bundle once and reaches the manager', async () => {
  const head = fakeDocument();
  const bundle = fakeBundle();
  const { w } = widgetsWith(bundle);
  assert.equal(w.loaded(), false);
  w.handle(open('s1'));
  w.handle(open('s2'));
  await until(() => bundle.calls.filter((c) => c[0] === 'open').length === 2);
  assert.equal(bundle.imports(), 1);
  assert.equal(w.loaded(), true);
  assert.deepEqual(bundle.calls.slice(0, 3), [
    ['created', 'function', 'function'],
    ['open', 's1', 'IntSliderModel'],
    ['open', 's2', 'IntSliderModel']
  ]);
  assert.equal(head.length, 1);
  assert.equal(head[0].href, 'vendor/widgets.css');
  // A restart of the kernel closes its comms.
  w.kernelGone('default');
  await until(() => bundle.calls.filter((c) => c[0] === 'closed').length === 2);
});

test('a connected page restores the kernel widgets, and loads nothing when there are none', async () => {
  fakeDocument();
  const bundle = fakeBundle();
  const { w, sent } = widgetsWith(bundle);
  w.connected();
  let f = sent.pop();
  assert.equal(f.type, 'comm_info');
  assert.equal(f.target_name, 'jupyter.widget');
  w.handle({ type: 'comm_info_reply', id: f.id, comms: {} });
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(bundle.imports(), 0);

  w.connected();
  f = sent.pop();
  w.handle({ type: 'comm_info_reply', id: f.id, comms: { abc: { target_name: 'jupyter.widget' } } });
  await until(() => bundle.calls.some((c) => c[0] === 'restore'));
  assert.equal(bundle.imports(), 1);

  // A gateway without comms rejects the frame: nothing is shown.
  w.connected();
  f = sent.pop();
  assert.equal(w.onRejected({ type: 'rejected', id: f.id, code: 'unknown_type', message: 'unknown frame type' }), true);
});

test('a bundle that fails to load says so, and a later widget tries again', async () => {
  fakeDocument();
  let fail = true;
  const bundle = fakeBundle();
  const importBundle = bundle.importBundle;
  bundle.importBundle = async () => {
    if (fail) throw new Error('offline');
    return importBundle();
  };
  const { w, msgs } = widgetsWith(bundle);
  const warn = console.warn;
  console.warn = () => {};
  try {
    w.handle(open('s1'));
    await until(() => msgs.length === 1);
    assert.match(msgs[0][1], /widgets could not be loaded: offline/);
    fail = false;
    w.handle(open('s2'));
    await until(() => bundle.calls.some((c) => c[0] === 'open'));
    assert.deepEqual(
      bundle.calls.filter((c) => c[0] === 'open').map((c) => c[1]),
      ['s2']
    );
  } finally {
    console.warn = warn;
  }
});
