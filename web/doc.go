// Package web holds glassroom's browser notebook UI: a single static page
// (index.html, app.js, style.css) that talks to the gateway's REST and
// WebSocket API from the same origin.
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
