// Package kernel speaks the Jupyter messaging protocol (v5.3) to one running
// kernel over ZeroMQ. It knows nothing of sandboxes or sessions.
//
// It has three layers:
//
//   - the wire codec (Codec, Message): multipart framing, the <IDS|MSG>
//     delimiter, and HMAC-SHA256 signing and constant-time verification;
//   - guarded transports: every ZeroMQ connection the gateway opens goes
//     through a dialer that refuses symlinks in ipc socket directories and
//     bounds the size of every frame and message the kernel sends, before
//     zmq4 allocates memory for it;
//   - Client: the shell, control, stdin, iopub and heartbeat sockets of one
//     kernel, with replies and iopub output routed to the request that
//     caused them, turned into typed Events, and a side stream (Side) for
//     what belongs to no pending request: comm traffic, debug events, and
//     the output of a comm's handler (an Execute with CommEvents gets its
//     own cell's comm messages as events instead, in order with its
//     output). Send sends the messages that have no reply (comm_open,
//     comm_msg, comm_close).
//
// The kernel is assumed hostile: the code running in it controls every byte
// it sends. Nothing received is acted on before its signature is verified,
// and no message can make the gateway allocate more than the configured
// bounds.
//
// The runtimes that start sandboxed kernels live below, in kernel/runtime:
// the shared sandbox layer (kernel/runtime/sandbox: the Sandbox contract,
// Spec, Limits, the launcher) and the bubblewrap, Docker and Kubernetes
// runtimes built on it. They hand back a Connection that this package dials.
package kernel
