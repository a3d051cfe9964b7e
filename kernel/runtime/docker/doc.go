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
// The image says which kernels it holds in its io.glassroom.kernels label
// (LabelKernels, written by images/python/build.sh; an image without it
// holds python3 only). New reads it once; Installed lists those kernels
// (sandbox.KernelLister) and Start refuses any other Spec.Kernel with a
// *sandbox.SpecError ("kernel r is not installed in image X").
//
// Containers have deterministic names (glassroom-<instance>-<session>) and
// labels naming the gateway instance, its state directory and the
// session. Every Docker call has a bounded context except the wait for a
// container's exit. A runtime holds its state directory locked
// (sandbox.LockStateDir) and its uid range claimed host-wide
// (sandbox.ClaimUIDRange; a runtime on an overlapping range fails at New)
// from New to Close; containers of this instance
// and state directory that no live sandbox owns are removed at start and
// periodically (Run). Another state directory's containers (another
// gateway of the same instance) are never touched.
//
// Under gVisor (Config.OCIRuntime runsc, or a runtime whose binary is
// runsc) the seccomp profile is enforced by gVisor's sentry, which does so
// only when the engine runs runsc with --oci-seccomp: New checks that in
// the engine's runtime config and refuses a runsc without it
// (ErrSeccompNotEnforced). gVisor answers every refusal with EPERM, so the
// profile's clone3 refusal (ENOSYS, for glibc's fallback to clone) is
// rewritten to a trace action, which gives ENOSYS too. A gVisor session's
// pids are enforced inside the sandbox (the nproc ulimit), capped at 48
// and at its memory over 40 MB, because each of its processes costs the
// host tens of MB and many threads; the host's pids cgroup only bounds the
// sentry's own threads (pids² + 512). A sandbox whose sentry stopped
// (exit code 2) is reported as such.
//
// A sandbox holds more kernels than its first (sandbox.ContextStarter):
// each context's kernel is a docker exec into the container, under a
// supervisor that kills the kernel's process group when the gateway
// closes the exec's stdin (the engine cannot kill an exec, and host pids
// mean nothing under gVisor). They share the container's uid, files,
// network namespace (and the first kernel's egress forwarder) and cgroup,
// so the session's limits cover them all. The container lives as long as
// its first kernel: its restart or death ends every context's kernel,
// which then reports it and restarts on its own Restart. Contexts end
// with the gateway's connection to the engine, and are closed when the
// sandbox is detached (another gateway adopts the first kernel alone).
//
// A container ends itself when no gateway holds it. Its PID 1 is
// glassroom's init (init.py, on the image's python; tini's work besides),
// which stops the container (exit code DeadlineExit, 124) once the time
// in its deadline file has passed: <session dir>/deadline/at on the host,
// a directory of the gateway's bound read-only at DeadlineDir, so the
// kernel, which runs as the init's uid, can read the time but not move
// it. The init reads it again every 5 s and when the time comes, and ends
// the container as well when the file is gone (its state directory was
// removed). While a gateway holds the sandbox the deadline is min(its
// session's end (sandbox.Expiring) + 1 min, now + OrphanGrace), renewed
// by Run: the gateway ends the session itself first, and a gateway that
// dies leaves its containers OrphanGrace (2 h) at most. Detach writes
// min(the session's end, or its idle expiry if sooner, now + OrphanGrace),
// after which no gateway would restore it; Adopt writes a held deadline
// before anything else, so an adopted container never ends under its new
// gateway. A frozen container (docker pause) cannot end itself: Adopt
// thaws it, or the operator removes it. The kernel cannot stop the init
// under runc (Linux delivers no SIGKILL or SIGSTOP sent from inside a
// pid namespace to its init, the init only passes other signals on, and
// it is not dumpable, so not ptraced). gVisor delivers SIGSTOP to the
// init: there a kernel that sets out to do so can stop it, and with it
// its deadline; `glassroom sandboxes --remove` is the remedy.
//
// Host is the operator's view of every glassroom container of an engine,
// whichever gateway made it (`glassroom sandboxes`): their session, state
// directory, age, deadline, and whether a live gateway owns them (holds
// the state directory's lock); it removes those none owns, taking the
// lock of each free state directory meanwhile.
package docker
