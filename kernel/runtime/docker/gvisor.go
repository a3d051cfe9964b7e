package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/system"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"golang.org/x/sys/unix"
)

// ErrSeccompNotEnforced reports a gVisor (runsc) runtime that the engine
// runs without --oci-seccomp: runsc would ignore the container's seccomp
// profile, so code in the sandbox could make every system call gVisor
// implements (unshare(CLONE_NEWUSER), io_uring_setup, ...). New refuses
// such a runtime; the error names the fix.
var ErrSeccompNotEnforced = errors.New("gVisor (runsc) is registered without --oci-seccomp, so it would ignore the seccomp profile")

// ociSeccompFlag is the runsc flag that makes the sentry load the OCI
// seccomp profile inside the sandbox.
const ociSeccompFlag = "--oci-seccomp"

// checkOCIRuntime checks, in the engine's description of itself, that
// the runtime named name is registered and, when it is gVisor (by name or
// by its binary), that it enforces the seccomp profile; it reports
// whether it is gVisor. The error wraps sandbox.ErrUnavailable, and
// ErrSeccompNotEnforced for a runsc without --oci-seccomp.
func checkOCIRuntime(info system.Info, name string) (gvisor bool, err error) {
	rt, ok := info.Runtimes[name]
	if !ok {
		names := make([]string, 0, len(info.Runtimes))
		for n := range info.Runtimes {
			names = append(names, n)
		}
		sort.Strings(names)
		return false, fmt.Errorf("%w: docker: the engine has no OCI runtime %q (it has %s); register it in /etc/docker/daemon.json",
			sandbox.ErrUnavailable, name, strings.Join(names, ", "))
	}
	if !isGVisor(name, rt.Runtime) {
		return false, nil
	}
	fix := fmt.Sprintf(`add %q to the "runtimeArgs" of runtime %q in the engine's daemon.json (/etc/docker/daemon.json) and reload the engine (kill -HUP $(cat /var/run/docker.pid)); scripts/start-dockerd.sh does both`, ociSeccompFlag, name)
	if rt.Type != "" { // a containerd shim: its flags live in a file the engine does not describe
		return true, fmt.Errorf("%w: docker: %w: runtime %q is the shim %s, whose flags cannot be checked; register runsc by path instead and %s",
			sandbox.ErrUnavailable, ErrSeccompNotEnforced, name, rt.Type, fix)
	}
	if !flagOn(rt.Args, ociSeccompFlag) {
		return true, fmt.Errorf("%w: docker: %w (runtimeArgs %q): %s",
			sandbox.ErrUnavailable, ErrSeccompNotEnforced, rt.Args, fix)
	}
	return true, nil
}

// isGVisor reports whether the runtime registered as name is gVisor.
func isGVisor(name string, rt system.Runtime) bool {
	return name == "runsc" || filepath.Base(rt.Path) == "runsc" || strings.Contains(rt.Type, "runsc")
}

// flagOn reports whether the boolean Go flag (given as "--name") is true
// in args: "--name", "-name" or "--name=<true>"; the last one counts, as
// in the flag package.
func flagOn(args []string, flag string) bool {
	name := strings.TrimLeft(flag, "-")
	on := false
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		k, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if k != name {
			continue
		}
		if !hasValue {
			on = true
			continue
		}
		b, err := strconv.ParseBool(v)
		on = err == nil && b
	}
	return on
}

// errGVisorErrnoRet explains why a profile must be rewritten for gVisor.
var errGVisorErrnoRet = errors.New("gVisor ignores a rule's errnoRet and answers EPERM, " +
	"so a clone3 refused with ENOSYS (Docker's and glassroom's profiles) would stop glibc from falling back to clone and no thread could start")

// gvisorProfile rewrites a seccomp profile for gVisor, which answers every
// SCMP_ACT_ERRNO with EPERM whatever its errnoRet: a rule that refuses
// with ENOSYS (clone3, so that glibc falls back to clone, which the
// profile can filter) becomes SCMP_ACT_TRACE, which without a tracer
// (ptrace is refused too) also answers ENOSYS, in gVisor as in Linux.
// Other errnoRet values are refused.
func gvisorProfile(profile string) (string, error) {
	// Numbers stay json.Number: an argument value past 2^53 (a 64-bit
	// mask) must be written back exactly as it was.
	var p map[string]any
	dec := json.NewDecoder(strings.NewReader(profile))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return "", fmt.Errorf("parse: %w", err)
	}
	errno := func(v any) (int64, bool) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		i, err := n.Int64()
		return i, err == nil
	}
	if v, ok := p["defaultErrnoRet"]; ok {
		if n, isInt := errno(v); !isInt || n != int64(unix.EPERM) {
			return "", fmt.Errorf("defaultErrnoRet %v: %w", v, errGVisorErrnoRet)
		}
	}
	rules, _ := p["syscalls"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		raw, has := rule["errnoRet"]
		if !has || rule["action"] != "SCMP_ACT_ERRNO" {
			continue
		}
		v, _ := errno(raw)
		switch v {
		case int64(unix.EPERM):
		case int64(unix.ENOSYS):
			rule["action"] = "SCMP_ACT_TRACE"
			delete(rule, "errnoRet")
		default:
			return "", fmt.Errorf("rule for %v: errnoRet %v: %w", rule["names"], raw, errGVisorErrnoRet)
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return string(b), nil
}

// gVisor's sandbox is far costlier per process than a container's: on
// the ptrace platform (Debian's runsc; KVM needs /dev/kvm) each process
// of the sandbox is a stub process on the host with a thread for every
// sentry thread that has run it, kept until the sandbox ends, and the
// sentry breaks copy-on-write in 2 MiB units, so each forked kernel
// process copies most of the kernel's heap. Measured on a 2-core host, a
// fork bomb in a fresh kernel: 32 tasks took 331 host tasks and 682 MB,
// 48 took 607 and 1061 MB, 64 took over 1500 and 1.8 GB, 128 over 7000
// and 6 GB (runc: 128 and 219 MB). The host's tasks grow with the square
// of the sandbox's.
const (
	// gvisorMaxPids caps a gVisor session's pids (tasks in the sandbox).
	gvisorMaxPids = 48
	// gvisorMBPerTask is the memory a gVisor session's task may cost: its
	// pids are capped at its memory over this, so that a fork bomb meets
	// the pids limit (EAGAIN) before the memory limit (the sandbox dies).
	gvisorMBPerTask = 40
	// gvisorMinPids is the fewest pids a gVisor session gets (a kernel
	// needs about 12 tasks).
	gvisorMinPids = 16
)

// gvisorLimits lowers a gVisor session's pids to what its sandbox can
// refuse (EAGAIN) before it runs out of memory or host tasks.
func gvisorLimits(l sandbox.Limits) sandbox.Limits {
	l.Pids = min(l.Pids, gvisorMaxPids, max(l.MemoryMB/gvisorMBPerTask, gvisorMinPids))
	return l
}

// gvisorHostPids is the host's pids limit of a gVisor sandbox whose code
// may have pids tasks (processes and threads): the sentry, not the host,
// refuses the task past pids (EAGAIN, as Linux does; the nproc ulimit),
// and the host's limit only bounds the sentry's own threads and stub
// processes, which grow with the square of the sandbox's tasks (the
// fork bombs above took at most a third of this).
func gvisorHostPids(pids int) int64 { return int64(pids)*int64(pids) + gvisorHostPidsBase }

// gvisorHostPidsBase is the host tasks of an idle gVisor sandbox (about
// 50: the sentry's threads, the gofer), with room.
const gvisorHostPidsBase = 512

// gvisorSentryExit is the exit code of a gVisor sandbox whose sentry
// stopped on a fatal error (a Go panic), such as a host task it could not
// create; gvisorSentryReason says so (a kernel that calls exit(2) ends
// with it too).
const (
	gvisorSentryExit   = 2
	gvisorSentryReason = "exit code 2: the gVisor sandbox stopped (its sentry fails so when it cannot create a host thread or process, " +
		"as when the sandbox's host pids limit is reached; or the kernel called exit(2))"
)
