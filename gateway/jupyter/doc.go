// Package jupyter is the gateway's Jupyter face: the Jupyter Server kernels
// API ("gateway" API) that JupyterLab, Notebook, jupyter_server's
// --gateway-url and nbclient-style tools attach to, served beside /v1 by
// package gateway (API.Register).
//
// It is a view over the sessions, not a second path to the kernel: a
// kernel is a glassroom session (listed in /v1/sessions, with its files
// API, sandbox and limits), and a /v1 session is a kernel here. Executions
// go through the session's queue and event log; the channels WebSocket
// renders the session's events as Jupyter messages.
//
//   - api.go: API, its Config and routes, authentication (Authorization:
//     token or Bearer; ?token= on WebSocket upgrades), /api,
//     /api/kernelspecs (one spec per kernel the runtime has installed:
//     python3, r, javascript, typescript, bash; python3's says "debugger":
//     true) and the /api/kernels REST
//     calls (a kernel's name is its session's first kernel; an unknown or
//     uninstalled name is a 400), the Jupyter error shape (IsPath,
//     ErrorOf).
//   - sessions.go: /api/sessions, the Jupyter sessions (a notebook's,
//     console's or file's use of a kernel) held by the glassroom sessions
//     that are their kernels (sessions.Session.JupyterSessions), kept with
//     them across a gateway restart and gone with them; a tenant's changes
//     are applied one at a time (tenantLocks).
//   - identity.go: /api/me (the tenant's identity, made from its tenant
//     id, and the permissions asked) and /api/status (its kernels and
//     connections).
//   - logos.go: the kernel specs' logos (logos/, embedded), their
//     resources map and GET /kernelspecs/{name}/{file}.
//   - conn.go: the channels WebSocket (GET /api/kernels/{id}/channels),
//     one conn per connection with its three goroutines, and how its
//     messages relate to the session.
//   - dispatch.go: reading the client's frames and acting on them
//     (executions through the session's queue, kernel requests and the
//     debugger's debug_request beside it, interrupt, shutdown, input_reply
//     from the connection that owns the input(), comm messages to the
//     kernel as the connection's own, comm_info).
//   - render.go: writing the session's events as Jupyter messages, with
//     replies routed to the client that asked, and the kernel's side
//     stream (comm traffic, a comm handler's output) to every connection,
//     in the kernel's order with the events.
//   - resume.go: where each client's channels stopped, per tenant and
//     kernel, so a client that reconnects gets what it missed.
//   - codec.go: the two framings of Jupyter messages on the WebSocket
//     (legacy JSON/binary and v1.kernel.websocket.jupyter.org).
//
// Errors are returned to echo as *httperr.Error, which package gateway
// writes in the Jupyter shape on these paths. Channels connections join the
// gateway's wsconn.Group, so its shutdown ends them and waits for them.
package jupyter
