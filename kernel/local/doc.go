// Package local is the embedded default runtime: it starts each session's
// ipykernel under bubblewrap (bwrap) on the gateway's own machine.
//
// Each sandbox gets new user, pid, net, ipc and uts namespaces (so no
// network at all: only a down loopback device), a read-only view of /usr
// and the few /etc files Python needs, a private /tmp, and a private
// workspace that is the kernel's working directory. When the gateway runs
// as root, every sandbox also runs as its own unprivileged host uid, its
// workspace is a size-limited tmpfs, and rlimits (address space, open
// files, file size, processes) are per session.
//
// The kernel talks over ipc: unix sockets in a per-session directory that
// the sandboxed code can write to. The gateway connects to them only
// through kernel's guarded transport, which refuses anything but a plain
// socket (see kernel.OpenSocketNoFollow).
//
// Without bwrap the runtime refuses to start kernels, unless the
// explicitly insecure option InsecureNoSandbox is set; the kernel's /tmp
// paths (IPYTHONDIR, the caches) are then a directory of the session that
// each kernel start empties, like the sandbox's private /tmp.
package local
