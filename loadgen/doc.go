// Package loadgen is glassroom's load harness: S sessions, each running a
// cell over and over for T seconds, against any gateway that speaks either
// glassroom's native WebSocket API or the Jupyter Server kernels API
// (glassroom's /api, or a Jupyter server itself), measuring executions per
// second, latency percentiles and fairness across sessions. Both targets
// share the driving and measuring code; only the wire protocol differs.
// `glassroom bench` is its command line; `make bench` compares glassroom
// with Debian's jupyter_server on this machine.
package loadgen
