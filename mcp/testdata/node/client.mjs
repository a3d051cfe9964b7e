// A scripted session of a real MCP client (the official TypeScript SDK)
// against glassroom's MCP server. Usage:
//   node client.mjs http  <url of /mcp> <api key>
//   node client.mjs stdio <command> [args...]
// Prints one JSON object describing what the server answered; the Go test
// asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "http") {
  const [url, key] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
} else if (mode === "stdio") {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
} else {
  console.error("usage: client.mjs http URL KEY | stdio COMMAND [ARGS...]");
  process.exit(2);
}

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const images = (r) => r.content.filter((c) => c.type === "image").map((c) => ({ mimeType: c.mimeType, prefix: c.data.slice(0, 8), length: c.data.length }));

const client = new Client({ name: "glassroom-node-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: {} };
for (const t of (await client.listTools()).tools) {
  out.tools[t.name] = { required: t.inputSchema.required ?? [], hasOutputSchema: !!t.outputSchema, description: t.description.length };
}
const call = (name, args) => client.callTool({ name, arguments: args });

const first = await call("execute_python", { code: "x = 41\nprint('hello from node')" });
out.first = { text: text(first), structured: first.structuredContent, isError: !!first.isError };
const sid = first.structuredContent.session_id;
const second = await call("execute_python", { code: "x + 1", session_id: sid });
out.second = { text: text(second), structured: second.structuredContent };
const plot = await call("execute_python", { session_id: sid, code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()" });
out.plot = { text: text(plot), images: images(plot) };
const err = await call("execute_python", { session_id: sid, code: "1/0" });
out.error = { text: text(err), isError: !!err.isError };
const up = await call("upload_file", { session_id: sid, path: "in/data.csv", content: "a,b\n1,2\n" });
out.upload = { text: text(up), isError: !!up.isError };
const png = await call("upload_file", { session_id: sid, path: "tiny.png", encoding: "base64",
  content: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==" });
out.uploadPNG = { text: text(png), isError: !!png.isError };
const read = await call("read_file", { session_id: sid, path: "in/data.csv" });
out.read = { text: text(read) };
const readPNG = await call("read_file", { session_id: sid, path: "tiny.png" });
out.readPNG = { text: text(readPNG), images: images(readPNG) };
const editCreate = await call("edit_file", { session_id: sid, command: "create", path: "src/calc.py", file_text: "def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 1\n" });
out.editCreate = { text: text(editCreate), isError: !!editCreate.isError };
const editDup = await call("edit_file", { session_id: sid, command: "str_replace", path: "src/calc.py", old_str: "return x + 1", new_str: "return x * 2" });
out.editDup = { text: text(editDup), isError: !!editDup.isError };
const editOK = await call("edit_file", { session_id: sid, command: "str_replace", path: "src/calc.py", old_str: "def f(x):\n    return x + 1", new_str: "def f(x):\n    return x * 2" });
out.editOK = { text: text(editOK), isError: !!editOK.isError };
const editInsert = await call("edit_file", { session_id: sid, command: "insert", path: "src/calc.py", insert_line: 0, new_str: "import math" });
out.editInsert = { text: text(editInsert), isError: !!editInsert.isError };
const editView = await call("edit_file", { session_id: sid, command: "view", path: "src/calc.py", view_range: [2, -1] });
out.editView = { text: text(editView), isError: !!editView.isError };
const editRun = await call("execute_python", { session_id: sid, code: "import sys; sys.path.insert(0, 'src'); import calc; calc.f(20) + calc.g(1)" });
out.editRun = { text: text(editRun), isError: !!editRun.isError };
const list = await call("list_files", { session_id: sid });
out.list = { text: text(list) };
const code = await call("execute_code", { session_id: sid, language: "py", code: "x * 2" });
out.code = { text: text(code), structured: code.structuredContent, isError: !!code.isError };
const languages = await call("list_languages", {});
out.languages = { text: text(languages), isError: !!languages.isError };

// Live output: progress notifications (and stderr as log messages) arrive
// while the call runs. The code waits for a file this script uploads only
// after it has seen the first output in a progress notification, so the
// call cannot have finished before.
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  logs.push({ level: n.params.level, logger: n.params.logger ?? "", data: String(n.params.data) });
});
await client.setLoggingLevel("info");
const progress = [];
let released;
let resultArrived = false;
const liveCall = client.callTool({ name: "execute_python", arguments: { session_id: sid, timeout_s: 300,
  code: "import os, sys, time\nprint('node-ready', flush=True)\nprint('node-warn', file=sys.stderr, flush=True)\n" +
    "while not os.path.exists('node-release'):\n    time.sleep(0.02)\nprint('node-done')" } }, undefined, {
  timeout: 240000,
  onprogress: (p) => {
    progress.push({ progress: p.progress, message: p.message ?? "", beforeResult: !resultArrived });
    if (!released && (p.message ?? "").includes("node-ready")) {
      released = call("upload_file", { session_id: sid, path: "node-release", content: "go" });
    }
  },
});
const live = await liveCall;
resultArrived = true;
const release = released ? await released : null;
out.live = { text: text(live), isError: !!live.isError, progress, logs: [...logs], released: !!release && !release.isError };

// Cancel: aborting the request sends notifications/cancelled, which
// interrupts the kernel; the session keeps x.
const ac = new AbortController();
let spinThrown = "";
try {
  await client.callTool({ name: "execute_python", arguments: { session_id: sid, timeout_s: 300,
    code: "import time\nprint('node-spin', flush=True)\nwhile True:\n    time.sleep(0.02)" } }, undefined, {
    timeout: 240000, signal: ac.signal,
    onprogress: (p) => { if ((p.message ?? "").includes("node-spin")) ac.abort("the test cancels"); },
  });
} catch (e) {
  spinThrown = String(e);
}
const afterCancel = await call("execute_python", { session_id: sid, code: "x + 100" });
out.cancel = { thrown: spinThrown, text: text(afterCancel), isError: !!afterCancel.isError };

// Resources: the workspace files of the caller's sessions.
const resources = await client.listResources();
const csv = resources.resources.find((r) => r.uri === `glassroom://sessions/${sid}/files/in/data.csv`);
const readRes = await client.readResource({ uri: `glassroom://sessions/${sid}/files/in/data.csv` });
out.resources = {
  uris: resources.resources.map((r) => r.uri),
  csvMimeType: csv?.mimeType ?? "",
  readText: readRes.contents.map((c) => c.text ?? "").join(""),
  readURI: readRes.contents[0]?.uri ?? "",
};
let missingRes = "";
try {
  await client.readResource({ uri: `glassroom://sessions/${sid}/files/no/such.txt` });
} catch (e) {
  missingRes = String(e);
}
out.resources.missing = missingRes;

const restart = await call("restart_session", { session_id: sid });
out.restart = { text: text(restart) };
const gone = await call("execute_python", { session_id: sid, code: "x" });
out.afterRestart = { text: text(gone), isError: !!gone.isError };
const closed = await call("close_session", { session_id: sid });
out.close = { text: text(closed), isError: !!closed.isError };
const missing = await call("read_file", { session_id: sid, path: "in/data.csv" });
out.afterClose = { text: text(missing), isError: !!missing.isError };
let invalid;
try {
  invalid = await call("execute_python", { session_id: sid });
  out.invalid = { text: text(invalid), isError: !!invalid.isError };
} catch (e) {
  out.invalid = { thrown: String(e) };
}
await client.close();
console.log(JSON.stringify(out));
