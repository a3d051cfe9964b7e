// Package web holds glassroom's browser notebook UI: a static page
// (index.html, style.css) and its code as native ES modules under
// static/js, loaded with <script type="module"> from js/main.js, with no
// build step. It talks to the gateway's REST and WebSocket API from the
// same origin.
//
// The modules, one concern each: store (the little state they share: the
// API key, the session, the cells), api (REST), ws (the WebSocket, resume
// and reconnect), session (key, session, kernel state), cells, outputs,
// editor, highlight, ansi, nbformat, notebook (local save, .ipynb), files
// (the files panel), text and dom (helpers), and main, which builds them
// and hands each its dependencies. The pure ones are unit-tested with
// Node's test runner (jstest/, run by TestJSUnits).
//
// The files are embedded into the binary; Assets returns them as an fs.FS
// rooted at the static directory, ready for http.FileServerFS.
//
// The page is written to run under a strict Content-Security-Policy
// (script-src 'self'; style-src 'self'; no inline script, style or event
// handlers). Kernel output is never inserted as markup into the page: text
// is set with textContent, images are loaded from data: URLs and HTML output
// is shown only inside <iframe sandbox=""> via srcdoc.
package web
