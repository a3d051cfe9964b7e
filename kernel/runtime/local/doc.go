// Package local is the embedded default runtime: it starts each session's
// kernel under bubblewrap (bwrap) on the gateway's own machine: ipykernel,
// or, where the host has them (Runtime.Installed: R with IRkernel, Deno at
// /usr/local/bin/deno; scripts/install-deps.sh installs both), IRkernel or
// Deno's kernel behind the launcher's bridge. A kernel the host lacks is
// refused with a SpecError naming it.
//
// Each sandbox gets new user, pid, net, ipc and uts namespaces (so no
// network at all: only a loopback device of its own, where the launcher
// reaches a Deno kernel), a read-only view of /usr and the few /etc files
// Python and R need, a private /tmp, and a private workspace that is the
// kernel's working directory. When the gateway runs
// as root, every sandbox also runs as its own unprivileged host uid, its
// workspace is a size-limited tmpfs, and rlimits (address space, open
// files, file size, processes) are per session. The address-space limit
// is soft where a cgroup bounds the sandbox's memory (V8, whose
// reservations exceed any such limit, lifts it for a Deno kernel), and
// absent from a sandbox without one whose kernel is Deno.
//
// The kernel talks over ipc: unix sockets in a per-session directory that
// the sandboxed code can write to. The gateway connects to them only
// through kernel's guarded transport, which refuses anything but a plain
// socket (see kernel.OpenSocketNoFollow).
//
// bwrap installs a seccomp filter (seccomp.go) before the kernel starts:
// it kills a process calling in another architecture's ABI and denies a
// list of system calls by name (the kernel attack surface a Python kernel
// has no use for) and sockets outside unix, inet, inet6 and netlink. The
// filter exists for amd64 and arm64; on any other architecture New
// refuses to start unless the explicitly insecure InsecureNoSeccomp is set.
//
// Pausing an idle sandbox freezes its cgroup (v2 cgroup.freeze, v1
// freezer.state); a freeze that has not completed within FreezeTimeout is
// undone and fails, so the kernel stays running.
//
// A sandbox holds more kernels than its first (sandbox.ContextStarter):
// each context's kernel is one more bwrap like the first's, with the same
// uid, workspace, egress socket, seccomp filter and rlimits, in the same
// cgroup (so the session's memory, CPU and pids limits, and a freeze,
// cover all its kernels), in namespaces of its own, on an ipc directory
// of its own that the first kernel's restart leaves alone.
//
// Without bwrap the runtime refuses to start kernels, unless the
// explicitly insecure option InsecureNoSandbox is set; the kernel's /tmp
// paths (IPYTHONDIR, the caches) are then a directory of the session that
// each kernel start empties, like the sandbox's private /tmp.
//
// The fork server (forkserver.go, template.py; Config.Fork): as root with
// bubblewrap, python3 kernels are forked from a template process that
// has loaded ipykernel and the preload modules, rather than exec'd. The
// sandbox is bwrap's as above, built around a holder process; the kernel
// is forked into the sandbox's pid namespace and joins its cgroups,
// rlimits, other namespaces, uid and seccomp filter, and drops every
// capability, before it reads anything of the session. The template
// reaps it and reports its end. A kernel dies with the template, the template
// with the runtime (Close) and the gateway. A session whose environment
// or memory limit the template cannot serve is exec'd; the runtime
// counts both paths (sandbox.StartCounter). docs/security.md says what
// forked kernels share.
//
// A runtime holds its state directory locked (sandbox.LockStateDir) from
// New to Close: a second one on the same directory fails at New and
// touches nothing. As root it holds its uid range claimed host-wide
// (sandbox.ClaimUIDRange) for as long: a runtime on an overlapping range,
// whatever its state directory, fails at New too. New removes the session
// directories a dead gateway left, except one whose kernel (recorded in
// the directory's kernel.pid) still runs.
package local
