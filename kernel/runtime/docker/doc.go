// Package docker is the production runtime: each session's ipykernel runs
// in its own locked-down container.
//
// A container has no network (--network none), a read-only root
// filesystem, a tmpfs /tmp, no capabilities, no-new-privileges, the default
// (or a stricter, configured) seccomp profile, a non-root user, and limits
// on pids, memory (swap equal to memory), CPU and ulimits. The kernel
// talks over ipc unix sockets in a per-session host directory that is bind
// mounted; the workspace is a size-limited tmpfs that the gateway mounts
// on the host and binds in, so the gateway can serve files from it and it
// survives kernel restarts.
//
// Containers have deterministic names (glassroom-<instance>-<session>) and
// labels naming the gateway instance, its state directory and the
// session. Every Docker call has a bounded context except the wait for a
// container's exit. A runtime holds its state directory locked
// (sandbox.LockStateDir) from New to Close; containers of this instance
// and state directory that no live sandbox owns are removed at start and
// periodically (Run). Another state directory's containers (another
// gateway of the same instance) are never touched.
package docker
