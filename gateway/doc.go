// Package gateway is glassroom's HTTP face: one echo server (Server) with
// the native REST API (/v1), the WebSocket relay, the Jupyter Server
// kernels API (/api, served by package gateway/jupyter: a second view of
// the same sessions for Jupyter front ends), /mcp (when Config.MCP is set:
// app sets it), API-key authentication, the embedded notebook UI, and the
// mapping from session errors to HTTP responses. It and its subpackages are the only importers of echo.
//
//   - server.go: Server, New (every route), Serve and its graceful
//     shutdown, authentication, the error responses ({"error":{...}} on
//     /v1, the Jupyter shape on /api), /healthz and /metrics.
//   - api.go: the session and execution calls of /v1.
//   - files.go: filesAPI, the workspace files of a session (and their text
//     edits, PATCH, through package workspace/fileedit).
//   - contexts.go: a session's contexts (its kernels, one language each),
//     their kernel_info, and the languages the gateway runs (/v1/kernels).
//   - ws.go, introspect.go: sessionSocket, the native WebSocket
//     (/v1/sessions/{id}/ws): events, the kernel's comm traffic (comm
//     frames, beside the event log), a client's comm frames, and its
//     complete, inspect and comm_info requests.
//   - mcp.go: /mcp over the in-process transport; openapi.go: the
//     embedded openapi.json and Routes; ui.go: the notebook UI.
//
// What its front ends share lives in gateway/internal: httperr (the error
// type handlers return and the one mapping of package errors to HTTP
// statuses), tenant (the API keys, each a tenant, and the tenant of a
// request) and wsconn (the upgrader and origin check, the group of live
// WebSockets that shutdown ends and waits for, panic recovery).
//
// Every request is authenticated with an API key (Authorization: Bearer, or
// ?token= on WebSocket upgrades and file downloads; on /api also
// Authorization: token, as Jupyter clients send it). Each key is a tenant:
// sessions made with one key do not exist for another.
package gateway
