// Package app is glassroom's composition root: the one place that wires
// the layers together. From one Config it builds, in order, the kernel
// runtime (local, docker or k8s), the session store, the metrics, the
// session manager and the gateway, and restores the stored sessions last;
// Run serves them until its context ends, and Close then ends the
// sessions (detaching or stopping them) and releases the store and the
// runtime.
//
// Every front end is built here: `glassroom serve`, the embedded gateway of
// `glassroom mcp --embedded`, the test harness (app/apptest) and the
// density suite. No other package connects a runtime to a manager.
//
//	cmd/glassroom ──flags──▶ app.Config ──▶ app.New
//	                                           │
//	    runtime ◀── store ◀── metrics ◀── manager ◀── gateway (HTTP, WS, Jupyter, MCP, UI)
package app
