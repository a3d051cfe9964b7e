// Package wsconn is what the gateway's WebSocket front ends (the native
// relay, GET /v1/sessions/{id}/ws, and the Jupyter channels,
// GET /api/kernels/{id}/channels) share about a connection's life: the
// upgrader and its origin check, the Reader's rate and frame limits, the
// write timeout, the Group of live connections that a shutdown tells to
// go away and waits for, the Group's one budget for frames above a
// connection's ordinary limit (a widget's file upload), and the recovery
// that keeps a panic in one connection from ending any other.
package wsconn
