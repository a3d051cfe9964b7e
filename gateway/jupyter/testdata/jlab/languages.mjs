// JupyterLab's @jupyterlab/services against glassroom's kernels API, one
// kernel per language, as JupyterLab's launcher offers them:
//   node languages.mjs <base url> <token> '<JSON [{"name": ..., "code": ...}]>'
// It lists the kernel specs (KernelSpecManager), starts a kernel of each
// name given (KernelManager.startNew), runs its code, shuts it down, and
// tries a kernel name the gateway does not run. It prints what it saw as
// one JSON object on stdout; gateway/jupyter/clients_test.go asserts on it.
import services from '@jupyterlab/services';
import WebSocket from 'ws';

const { KernelManager, KernelSpecManager, ServerConnection } = services;
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.join(' ') + '\n');
}
const [baseUrl, token, wanted] = process.argv.slice(2);
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

const out = { specs: {}, runs: [] };
const specs = new KernelSpecManager({ serverSettings });
const manager = new KernelManager({ serverSettings });
try {
  await specs.ready;
  await specs.refreshSpecs();
  out.default = specs.specs.default;
  for (const [name, spec] of Object.entries(specs.specs.kernelspecs)) {
    out.specs[name] = { name: spec.name, language: spec.language, displayName: spec.display_name };
  }
  await manager.ready;
  for (const { name, code } of JSON.parse(wanted)) {
    const run = { name };
    out.runs.push(run);
    try { // one language's failure is reported on its run; the others go on
      const kernel = await manager.startNew({ name });
      run.modelName = kernel.model.name;
      const info = await withTimeout(kernel.info, 60000, `${name} kernel info`);
      run.language = info.language_info.name;
      const stdout = [];
      const future = kernel.requestExecute({ code });
      future.onIOPub = msg => {
        if (msg.header.msg_type === 'stream' && msg.content.name === 'stdout') {
          stdout.push(msg.content.text);
        }
      };
      const reply = await withTimeout(future.done, 60000, `${name} execution`);
      run.status = reply.content.status;
      run.stdout = stdout.join('');
      await kernel.shutdown();
    } catch (e) {
      run.thrown = String(e && e.stack ? e.stack : e);
    }
  }
  try {
    await manager.startNew({ name: 'cobol' });
    out.refused = { status: 0 };
  } catch (e) {
    out.refused = { status: e.response ? e.response.status : -1, message: String(e.message) };
  }
} catch (e) {
  out.thrown = String(e && e.stack ? e.stack : e);
} finally {
  manager.dispose();
  specs.dispose();
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
