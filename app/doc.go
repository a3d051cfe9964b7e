// Package app is glassroom's composition root: the one place that wires
// the layers together. From one Config it builds, in order, the kernel
// runtime (local, docker or k8s), the session store, the metrics, the
// session manager and the gateway; Run runs them together and Close takes
// them down in reverse.
//
// Every front end is built here: `glassroom serve`, the embedded gateway of
// `glassroom mcp --embedded`, the test harness (app/apptest) and the
// density suite. No other package connects a runtime to a manager.
//
//	cmd/glassroom ──flags──▶ app.Config ──▶ app.New
//	                                           │
//	    runtime ◀── store ◀── metrics ◀── manager ◀── gateway (HTTP, WS, Jupyter, MCP, UI)
package app
