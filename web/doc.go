// Package web holds glassroom's browser notebook UI: a static page
// (index.html, style.css) and its code as native ES modules under
// static/js, loaded with <script type="module"> from js/main.js, with no
// build step. It talks to the gateway's REST and WebSocket API from the
// same origin.
//
// The modules, one concern each, static/js/NAME.js (TestDocListsEveryModule
// keeps this list and the directory the same):
//
//   - store: the little state they share: the API key, the session, the
//     cells, the notebook's language
//   - storage: localStorage that never throws, and its keys
//   - api: REST
//   - ws: the WebSocket, resume and reconnect
//   - session: key, session, its contexts and their kernels' states
//   - sessionlist: the sessions panel: the key's live sessions, to open,
//     interrupt, restart or end
//   - tabs: several notebooks at once, each with a session of its own,
//     and the launcher that opens new ones
//   - kernels: the notebook's language: the chooser, GET /v1/kernels, the
//     language a file asks for, the saved metadata
//   - languages: what the page knows of each language: prompt label,
//     syntax mode, kernelspec and language_info; pure
//   - cells: the cells and their runs, each in the notebook's language
//   - commands: command-mode keys
//   - find: find and replace in the cells' sources and their outputs'
//     text
//   - editor: CodeMirror with the notebook's keys and the language's
//     syntax mode
//   - assist: completion and inspection requests, code point offsets
//   - outputs: a cell's outputs drawn: streams, MIME bundles, errors,
//     input() prompts, display updates
//   - pager: the help pane where an execution's page events, obj? and
//     obj??, are shown; set_next_input and ask_exit
//   - comms: Jupyter's comm protocol over the WebSocket: comm events and
//     frames, comm_info, the Output widget's capture of outputs; pure
//   - widgets: the widget manager of the lazily imported widgets bundle:
//     views in outputs, restore after a reload
//   - chart: the interactive SVG chart of
//     application/vnd.glassroom.chart+json: a pure layout with each
//     element's hover text, then the <svg>
//   - table: the sortable table of application/vnd.glassroom.dataframe+json
//   - ports: the servers panel: the ports the sandbox listens on, each
//     a link to its preview (the gateway's preview origin)
//   - terminal: the terminal pane: xterm.js over
//     /v1/sessions/{id}/terminal
//   - markdown: markdown-it + DOMPurify
//   - ansi: ANSI escapes in text: SGR colours and styles as classes,
//     every other escape dropped
//   - nbformat: the WebSocket's execution events -> output records, and
//     output records <-> .ipynb
//   - notebook: local save, .ipynb
//   - files: the files panel
//   - text, dom: helpers
//   - main: builds them and hands each its dependencies
//
// The pure ones are unit-tested with Node's test runner (jstest/, run by
// TestJSUnits).
//
// Every module starts with // @ts-check and carries JSDoc types, checked by
// the TypeScript compiler that package.json pins (tsconfig.json: strict,
// nothing emitted; the browser loads the files as they are). TestTypeCheck
// installs it with `npm ci` into node_modules on first use and runs it.
//
// Third-party code is one committed ES module, static/vendor/vendor.js,
// bundled from vendor/ (package.json and lockfile with exact versions) by
// `make web-vendor`; vendor/entry.js lists what the app uses from it, and
// static/vendor/vendor.d.ts declares the types of that part for the type
// check (the bundle itself is not checked). The Jupyter widgets (ipywidgets
// 8: @jupyter-widgets/base, controls, output and base-manager, with
// Font Awesome) are a second module, static/vendor/widgets.js, with
// widgets.css and fonts/ beside it, bundled from vendor/widgets-entry.js:
// js/widgets.js imports it (the one import() of the app) only when a
// session has widgets; static/vendor/widgets.d.ts types it. build.mjs
// rewrites what the CSP or the page's rules forbid in it (underscore's
// eval, the HTML widgets' innerHTML: DOMPurify instead). xterm.js styles its terminal
// through <style> elements and style attributes, which the CSP blocks:
// vendor/build.mjs rewrites them as it bundles it (vendor/csp-style.js: a
// constructed stylesheet; CSSOM assignments) and copies its xterm.css to
// static/vendor, which index.html links.
//
// The files are embedded into the binary; Assets returns them as an fs.FS
// rooted at the static directory, ready for http.FileServerFS.
//
// The page is written to run under a strict Content-Security-Policy
// (script-src 'self'; style-src 'self'; no inline script, style or event
// handlers; CodeMirror's styles go into a constructed stylesheet). Kernel
// output is never inserted as markup into the page: text is set with
// textContent, images are loaded from data: URLs, HTML output is shown only
// inside <iframe sandbox=""> via srcdoc, Markdown reaches the page only
// as the DOM fragment DOMPurify returns, and charts are SVG elements built
// with createElementNS whose texts are set with textContent. Widgets'
// markup (the HTML widget's value, HTML descriptions) goes through
// DOMPurify too (the widgets bundle's sanitiser), and an Output widget's
// outputs are drawn by outputs.js as a cell's.
package web
