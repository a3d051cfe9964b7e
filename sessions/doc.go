// Package sessions owns the lifecycle of sessions: one sandboxed kernel per
// session, a per-session execution queue, timeouts, output caps, idle
// expiry, lifetime and count limits, and the event log that WebSocket
// clients replay after a reconnect.
//
// A Manager holds the sessions of every tenant. Each Session runs one
// worker goroutine that owns its kernel: it runs queued executions one at
// a time and performs every restart, so kernel lifecycle transitions never
// race. Events of every execution are published to the session's hub,
// which keeps a bounded, sequence-numbered backlog for late subscribers.
//
// The manager's Run reaps: it deletes expired sessions and freezes idle
// ones (Config.PauseAfter), each in a goroutine of its own that Run and
// Close wait for, so a sandbox slow to close or to freeze holds up
// neither the next tick nor any other session (one freeze at a time per
// session).
//
// The gateway's Jupyter face renders the same sessions for Jupyter
// clients; what it needs beyond the /v1 view (execute options and parent
// headers on the started event, the owner of an execution's input(),
// stop_on_error, the kernel's identity and a bounded pass-through of its
// read-only requests) is in jupyter.go.
//
// The package consumes a small Runtime interface (kernel/runtime/local and
// kernel/runtime/docker implement it) and maps nothing to HTTP: callers test
// errors against the sentinels below.
package sessions
