// JupyterLab's own managers (@jupyterlab/services) against two gateway
// replicas that share sessions, run by cmd/glassroom/replicas_test.go
// (TestReplicasOnARealCluster):
//   node replicas.mjs <replica A url> <replica B url> <token>
// It opens a notebook's session on A, then does everything else through
// B, which does not serve that kernel: lists the kernels and sessions,
// connects to the kernel and runs a cell (the channels WebSocket), renames
// the session and reads it back, and shuts it down. It
// prints what it saw as one JSON object on stdout; the Go test asserts.
import services from '@jupyterlab/services';
import WebSocket from 'ws';

const { KernelManager, SessionManager, ServerConnection, KernelAPI, SessionAPI } = services;
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.join(' ') + '\n');
}
const [baseA, baseB, token] = process.argv.slice(2);
const settings = baseUrl => ServerConnection.makeSettings({
  baseUrl,
  wsUrl: baseUrl.replace(/^http/, 'ws'),
  token,
  appendToken: true,
  WebSocket
});
const onA = settings(baseA);
const onB = settings(baseB);

function withTimeout(p, ms, what) {
  return Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))]);
}

const out = {};
try {
  const managerA = new SessionManager({ kernelManager: new KernelManager({ serverSettings: onA }), serverSettings: onA });
  await managerA.ready;
  const session = await managerA.startNew({ path: 'replicas.ipynb', type: 'notebook', name: 'replicas.ipynb', kernel: { name: 'python3' } });
  const kernelId = session.kernel.id;
  out.sessionId = session.id;
  out.kernelId = kernelId;
  await withTimeout(session.kernel.info, 60000, 'kernel info on A');
  session.dispose();

  // B lists A's kernel and session.
  out.kernelsOnB = (await KernelAPI.listRunning(onB)).map(k => k.id);
  out.sessionsOnB = (await SessionAPI.listRunning(onB)).map(s => s.id);
  // B gives the kernel's model and connects to it.
  const model = await KernelAPI.getKernelModel(kernelId, onB);
  out.modelOnB = model ? model.id : null;
  const kernelManagerB = new KernelManager({ serverSettings: onB });
  await kernelManagerB.ready;
  const k = kernelManagerB.connectTo({ model });
  await withTimeout(k.info, 60000, 'kernel info through B');
  let result = null;
  const future = k.requestExecute({ code: 'x = 6 * 7\nx' });
  future.onIOPub = msg => {
    if (msg.header.msg_type === 'execute_result') result = msg.content.data['text/plain'];
  };
  const reply = await withTimeout(future.done, 60000, 'execute through B');
  out.status = reply.content.status;
  out.result = result;
  // B renames the session A holds, and reads it back.
  const renamed = await SessionAPI.updateSession({ id: session.id, path: 'renamed.ipynb' }, onB);
  out.renamed = renamed.path;
  out.readBack = (await SessionAPI.getSessionModel(session.id, onB)).path;
  k.dispose();
  // B shuts the session (and its kernel) down.
  await SessionAPI.shutdownSession(session.id, onB);
  out.afterShutdown = (await KernelAPI.listRunning(onA)).map(m => m.id).includes(kernelId);
} catch (e) {
  out.thrown = String(e && e.stack || e);
}
process.stdout.write(JSON.stringify(out));
process.exit(0);
