// JupyterLab's own session and kernel managers (@jupyterlab/services)
// pointed straight at glassroom, with no jupyter_server in between, run by
// gateway/jupyter/clients_test.go (TestJupyterLabSessions):
//   node sessions.mjs <base url> <token> <other kernel>
// It opens a notebook's session as JupyterLab does, runs a cell, sees an
// ipywidgets slider's comm_open and updates the slider's value, renames
// the session, changes its kernel to <other kernel>, lists, and shuts it
// down, and prints what it saw as one JSON object on stdout; the Go test
// asserts on it.
import services from '@jupyterlab/services';
import WebSocket from 'ws';

const { KernelManager, SessionManager, ServerConnection, KernelAPI, SessionAPI, KernelSpecAPI } = services;
// The library logs to the console; stdout carries only the result.
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.join(' ') + '\n');
}
const [baseUrl, token, otherKernel] = process.argv.slice(2);
const serverSettings = ServerConnection.makeSettings({
  baseUrl,
  wsUrl: baseUrl.replace(/^http/, 'ws'),
  token,
  appendToken: true,
  WebSocket
});

function withTimeout(p, ms, what) {
  return Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))]);
}

// run executes code on kernel k and collects its stream text, result and
// reply status.
async function run(k, code) {
  let stream = '';
  let result = null;
  const future = k.requestExecute({ code });
  future.onIOPub = msg => {
    if (msg.header.msg_type === 'stream') stream += msg.content.text;
    if (msg.header.msg_type === 'execute_result') result = msg.content.data['text/plain'];
  };
  const reply = await withTimeout(future.done, 60000, `execute ${code}`);
  return { status: reply.content.status, stream, result };
}

const out = {};
const t0 = Date.now();
const step = name => process.stderr.write(`step ${name} ${Date.now() - t0} ms\n`);
const kernelManager = new KernelManager({ serverSettings });
const sessionManager = new SessionManager({ kernelManager, serverSettings });
try {
  await sessionManager.ready;
  await kernelManager.ready;
  step('ready');

  // The kernel specs name their logos, which load with the token.
  const specs = await KernelSpecAPI.getSpecs(serverSettings);
  const logo = specs.kernelspecs.python3.resources['logo-64x64'];
  out.logo = logo;
  const resp = await ServerConnection.makeRequest(new URL(logo, baseUrl).href, {}, serverSettings);
  out.logoType = resp.headers.get('content-type');
  out.logoSignature = Buffer.from(await resp.arrayBuffer()).subarray(0, 8).toString('hex');

  // A notebook's session, as JupyterLab opens one.
  const session = await sessionManager.startNew({
    path: 'work/demo.ipynb',
    type: 'notebook',
    name: 'demo.ipynb',
    kernel: { name: 'python3' }
  });
  out.session = { id: session.id, path: session.path, name: session.name, type: session.type, kernel: session.kernel.name };
  const firstKernel = session.kernel.id;
  const info = await withTimeout(session.kernel.info, 30000, 'kernel info');
  out.language = info.language_info.name;
  step('started');

  // A cell and its output.
  await run(session.kernel, 'x = 41');
  out.cell = await run(session.kernel, "print('hello from glassroom')\nx + 1");
  step('cell');
  // A widget's comms, as a widget manager sees them: the kernel opens an
  // IntSlider's comm (its comm_open comes before the display_data that
  // shows it), and an update the client sends on that comm changes the
  // slider's value in the kernel. The client registers the widgets' comm
  // target, as a widget manager does: the library closes the comm of a
  // target nobody registered.
  const opened = [];
  session.kernel.registerCommTarget('jupyter.widget', (comm, msg) => {
    opened.push({ comm, msg });
  });
  const seen = [];
  let cellMsgId = null;
  const onIopub = (_, msg) => {
    if (msg.parent_header.msg_id !== cellMsgId) return;
    const type = msg.header.msg_type;
    if (type === 'comm_open') seen.push(`comm_open:${msg.content.data.state._model_name}:${msg.content.comm_id}`);
    if (type === 'display_data') {
      const view = msg.content.data['application/vnd.jupyter.widget-view+json'];
      seen.push(`display_data:${view ? view.model_id : ''}`);
    }
  };
  session.kernel.iopubMessage.connect(onIopub);
  const widgetFuture = session.kernel.requestExecute({ code: 'import ipywidgets as w\ns = w.IntSlider(value=3)\ndisplay(s)' });
  cellMsgId = widgetFuture.msg.header.msg_id;
  const widgetReply = await withTimeout(widgetFuture.done, 60000, 'the widget cell');
  session.kernel.iopubMessage.disconnect(onIopub);
  const slider = opened.find(o => o.msg.content.data.state._model_name === 'IntSliderModel');
  out.widget = {
    status: widgetReply.content.status,
    seen,
    opened: opened.map(o => o.msg.content.data.state._model_name),
    commId: slider ? slider.comm.commId : '',
    value: slider ? slider.msg.content.data.state.value : null
  };
  if (slider) {
    // No reply: the future is done at the kernel's idle for the update.
    const update = slider.comm.send({ method: 'update', state: { value: 9 }, buffer_paths: [] });
    await withTimeout(update.done, 30000, 'the slider update');
    out.widget.after = (await run(session.kernel, 'print(s.value)')).stream;
  }
  step('widget');

  // Rename, as JupyterLab does when the notebook is renamed.
  await session.setPath('work/renamed.ipynb');
  out.renamed = (await SessionAPI.getSessionModel(session.id, serverSettings)).path;

  // Another connection finds the session by its path, as a second
  // JupyterLab tab does.
  const found = await sessionManager.findByPath('work/renamed.ipynb');
  out.foundByPath = found ? found.id : null;

  // Change the kernel: a new kernel of another language; the old one is
  // shut down.
  const changed = await withTimeout(session.changeKernel({ name: otherKernel }), 60000, 'change kernel');
  await withTimeout(changed.info, 60000, 'new kernel info');
  out.changed = { id: changed.id, name: changed.name, sessionKernel: session.kernel.id, language: (await changed.info).language_info.name };
  out.oldKernelGone = (await KernelAPI.getKernelModel(firstKernel, serverSettings)) === undefined;
  out.otherCell = await run(session.kernel, otherKernel === 'bash' ? 'echo $((6 * 7))' : '6 * 7');
  step('changed');

  // List, through the managers.
  await sessionManager.refreshRunning();
  await kernelManager.refreshRunning();
  out.listed = Array.from(sessionManager.running()).map(m => ({ id: m.id, path: m.path, kernel: m.kernel.id }));
  out.kernels = Array.from(kernelManager.running()).map(m => m.id);

  // Shut down: the session and its kernel are gone.
  await session.shutdown();
  await sessionManager.refreshRunning();
  await kernelManager.refreshRunning();
  out.afterShutdown = { sessions: Array.from(sessionManager.running()).length, kernels: Array.from(kernelManager.running()).length };
  step('shut down');
} catch (e) {
  out.thrown = String(e && e.stack ? e.stack : e);
} finally {
  sessionManager.dispose();
  kernelManager.dispose();
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
