// Package loadgen is glassroom's load harness: S sessions, each running a
// cell over and over for T seconds, against any gateway that speaks either
// glassroom's native WebSocket API or the Jupyter Server kernels API
// (glassroom's /api, or a Jupyter server itself), measuring executions per
// second, latency percentiles and fairness across sessions. Both targets
// share the driving and measuring code; only the wire protocol differs.
//
// Besides that run (Run), it measures what the speed goals are about:
// Creation (sessions created per second by concurrent clients), FirstCell
// (a new session's first cell, one at a time) and IdleMemory (the
// machine's memory per idle session). ProcMeter reads the CPU and memory
// figures from Linux's /proc, so those measure servers on this machine.
// Every function here blocks until its run ends and closes the kernels it
// opened; none is meant to be called concurrently with another on the same
// server (they would measure each other).
// `glassroom bench` is its command line; `make bench` compares glassroom
// with Debian's jupyter_server on this machine.
package loadgen
