// A real Jupyter client, JupyterLab's @jupyterlab/services, run by
// gateway/jupyter/clients_test.go against glassroom's kernels API:
//   node client.mjs <base url> <token>
// It uses a kernel as JupyterLab does and prints what it saw as one JSON
// object on stdout; the Go test asserts on it.
import services from '@jupyterlab/services';
import WebSocket from 'ws';

const { KernelManager, ServerConnection, KernelAPI } = services;
// The library logs to the console; stdout carries only the result.
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.join(' ') + '\n');
}
const [baseUrl, token] = process.argv.slice(2);
const serverSettings = ServerConnection.makeSettings({
  baseUrl,
  wsUrl: baseUrl.replace(/^http/, 'ws'),
  token,
  appendToken: true,
  WebSocket
});

// run executes code on kernel k and collects its iopub messages and reply.
async function run(k, code, opts = {}) {
  const iopub = [];
  const future = k.requestExecute({ code, ...opts });
  future.onIOPub = msg => {
    iopub.push({ type: msg.header.msg_type, content: msg.content });
  };
  if (opts.onStdin) {
    future.onStdin = msg => opts.onStdin(k, msg);
  }
  const reply = await future.done;
  return { reply: reply.content, iopub };
}

const text = r => {
  const m = r.iopub.find(m => m.type === 'execute_result');
  return m ? m.content.data['text/plain'] : null;
};

function withTimeout(p, ms, what) {
  return Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))]);
}

const out = {};
const t0 = Date.now();
const step = name => process.stderr.write(`step ${name} ${Date.now() - t0} ms\n`);
const manager = new KernelManager({ serverSettings });
try {
  await manager.ready;
  step('ready');
  const kernel = await manager.startNew({ name: 'python3' });
  out.id = kernel.id;
  step('startNew');
  const info = await withTimeout(kernel.info, 30000, 'kernel info');
  out.language = info.language_info.name;
  out.protocol = kernel._selectedProtocol;
  step('started');

  await run(kernel, 'x = 41');
  const r = await run(kernel, 'x + 1');
  out.answer = text(r);
  out.types = r.iopub.map(m => m.type);
  out.inputCount = r.iopub.find(m => m.type === 'execute_input')?.content.execution_count;
  out.replyCount = r.reply.execution_count;
  step('executed');

  const plot = await run(kernel, 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()');
  const png = plot.iopub.find(m => m.type === 'display_data')?.content.data['image/png'] ?? '';
  out.png = { length: png.length, prefix: png.slice(0, 12) };
  const raw = Buffer.from(png, 'base64');
  out.png.signature = raw.subarray(0, 8).toString('hex');
  step('plot');

  const err = await run(kernel, '1/0');
  out.error = { status: err.reply.status, ename: err.reply.ename, iopub: err.iopub.find(m => m.type === 'error')?.content.ename };

  const asked = await run(kernel, "print('hi', input('who? '))", {
    allow_stdin: true,
    onStdin: (k, msg) => {
      out.prompt = msg.content.prompt;
      k.sendInputReply({ status: 'ok', value: 'ada' }, msg.header);
    }
  });
  out.inputEcho = asked.iopub.filter(m => m.type === 'stream').map(m => m.content.text).join('');
  step('input');

  const completion = await kernel.requestComplete({ code: 'impo', cursor_pos: 4 });
  out.completes = completion.content.matches.includes('import');
  step('complete');
  const inspection = await kernel.requestInspect({ code: 'len', cursor_pos: 3, detail_level: 0 });
  out.inspects = inspection.content.found === true;
  const isComplete = await kernel.requestIsComplete({ code: 'for i in x:' });
  out.isComplete = isComplete.content.status;
  step('introspected');

  // A second connection to the same kernel sees the first one's output.
  const second = manager.connectTo({ model: kernel.model });
  await withTimeout(second.info, 30000, 'second kernel info');
  const seen = [];
  second.iopubMessage.connect((_, msg) => {
    seen.push({ type: msg.header.msg_type, parent: msg.parent_header.msg_id, content: msg.content });
  });
  const shared = kernel.requestExecute({ code: 'x * 2' });
  await shared.done;
  await new Promise(res => setTimeout(res, 300));
  out.secondSaw = seen.filter(m => m.parent === shared.msg.header.msg_id).map(m => m.type);
  out.secondResult = seen.find(m => m.type === 'execute_result' && m.parent === shared.msg.header.msg_id)?.content.data['text/plain'];
  second.dispose();
  step('second');

  // Interrupt a busy loop.
  const loop = kernel.requestExecute({ code: 'while True: pass' });
  await new Promise(res => {
    loop.onIOPub = msg => {
      if (msg.header.msg_type === 'execute_input') res();
    };
  });
  await kernel.interrupt();
  const stopped = await withTimeout(loop.done, 30000, 'interrupted loop').catch(e => ({ content: { status: String(e) } }));
  out.interrupted = { status: stopped.content.status, ename: stopped.content.ename };
  step('interrupted');

  // Restart: variables are gone.
  await kernel.restart();
  step('restart call');
  await withTimeout(kernel.info, 30000, 'kernel info after restart');
  const after = await run(kernel, 'x');
  out.afterRestart = after.reply.ename;
  step('restarted');

  const running = await KernelAPI.listRunning(serverSettings);
  out.listed = running.some(m => m.id === kernel.id);

  await kernel.shutdown();
  out.afterShutdown = (await KernelAPI.getKernelModel(kernel.id, serverSettings)) === undefined;
  step('shut down');
} catch (e) {
  out.thrown = String(e && e.stack ? e.stack : e);
} finally {
  manager.dispose();
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
