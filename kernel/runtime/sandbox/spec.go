package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/workspace"
)

// Spec describes the kernel a runtime must start for one session.
type Spec struct {
	// ID is the session id. Runtimes derive deterministic names from it
	// (directories, container names), so it must match IDPattern.
	ID string
	// Kernel is the canonical name of the sandbox's first kernel
	// (KernelSpec.Name); "" is DefaultKernel.
	Kernel string
	// Env is extra environment for the kernel process; see CheckEnv.
	Env map[string]string
	// Limits are the resources granted; zero fields take the runtime's defaults.
	Limits Limits
	// Tenant names the session's owner (an opaque id matching
	// TenantPattern), or "". Runtimes whose sandboxes outlive a gateway
	// (k8s) record it, so another gateway adopting the sandbox knows whose
	// it is.
	Tenant string
	// EgressSocket is the host path of the unix socket of the session's
	// egress proxy (package egress), or "" for no network at all: the zero
	// value, which is what a sandbox started before its session (a warm
	// pool's) has. The runtime binds the socket's directory read-only at
	// EgressDir, and the launcher's forwarder reaches the proxy through it
	// (see KernelEnv). The directory must hold nothing else.
	EgressSocket string
	// Volumes are host directories (a volume store's mounts) bound into
	// the workspace before anything runs in the sandbox (Dirs.BindVolumes):
	// the files API and every process of the sandbox see them at their
	// paths. Runtimes that cannot bind them refuse a spec with any.
	Volumes []VolumeMount
}

// VolumeMount is one volume of a Spec: HostDir (absolute, on the
// gateway's host) at Path, a directory of the workspace (relative to
// WorkDir, clean, not the workspace itself).
type VolumeMount struct {
	HostDir string
	Path    string
}

// MaxVolumes bounds a Spec's volumes.
const MaxVolumes = 8

// checkVolumes checks vols: their count, clean relative paths, none
// within another.
func checkVolumes(vols []VolumeMount) error {
	if len(vols) > MaxVolumes {
		return badSpec("at most %d volumes", MaxVolumes)
	}
	for i, v := range vols {
		p := v.Path
		if !filepath.IsAbs(v.HostDir) || filepath.Clean(v.HostDir) != v.HostDir {
			return badSpec("volume host directory %q", v.HostDir)
		}
		if p == "" || p == "." || filepath.IsAbs(p) || filepath.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || len(p) > 1024 {
			return badSpec("volume path %q: a directory of the workspace", p)
		}
		for _, o := range vols[:i] {
			if o.Path == p || strings.HasPrefix(p, o.Path+"/") || strings.HasPrefix(o.Path, p+"/") {
				return badSpec("volume paths %q and %q overlap", o.Path, p)
			}
		}
	}
	return nil
}

// TenantPattern is the shape of a Spec's Tenant (it must fit a Kubernetes
// label value).
var TenantPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// Limits are the resources of one sandbox. Runtimes cap them at their maxima.
type Limits struct {
	MemoryMB    int     `json:"memory_mb"`    // memory of the whole sandbox (cgroup), and address space per process (local)
	CPUs        float64 `json:"cpus"`         // CPU quota in cores
	Pids        int     `json:"pids"`         // processes and threads
	WorkspaceMB int     `json:"workspace_mb"` // size of the writable workspace
}

// Or returns l with every zero field taken from def.
func (l Limits) Or(def Limits) Limits {
	if l.MemoryMB == 0 {
		l.MemoryMB = def.MemoryMB
	}
	if l.CPUs == 0 {
		l.CPUs = def.CPUs
	}
	if l.Pids == 0 {
		l.Pids = def.Pids
	}
	if l.WorkspaceMB == 0 {
		l.WorkspaceMB = def.WorkspaceMB
	}
	return l
}

// Cap returns l with every field lowered to at most limit's.
func (l Limits) Cap(limit Limits) Limits {
	l.MemoryMB = min(l.MemoryMB, limit.MemoryMB)
	l.CPUs = min(l.CPUs, limit.CPUs)
	l.Pids = min(l.Pids, limit.Pids)
	l.WorkspaceMB = min(l.WorkspaceMB, limit.WorkspaceMB)
	return l
}

// The smallest limits a kernel runs with. A session may ask for no less
// (0 still means the runtime's default), and the operator's defaults and
// maxima may be no less (Common.Validate).
const (
	MinMemoryMB = 128
	MinCPUs     = 0.05
	MinPids     = 16
)

// Validate is the one check of limits, wherever they come from: a
// session's request (Spec.Validate, and the gateway before it), the
// operator's defaults and maxima (Common.Validate). It refuses a negative
// or non-finite field, and a non-zero one under MinMemoryMB, MinCPUs or
// MinPids; a zero field means the default and passes, and so does a field
// above the runtime's maxima (Common.Limits lowers it). The error is a
// *SpecError (errors.Is(err, ErrBadSpec)) whose Public text names the
// field and the thresholds.
func (l Limits) Validate() error {
	if reason := l.problem(); reason != "" {
		return &SpecError{Reason: reason}
	}
	return nil
}

// problem says what is wrong with l, or "".
func (l Limits) problem() string {
	fields := []struct {
		name     string
		value    float64
		smallest float64
	}{
		{"memory_mb", float64(l.MemoryMB), MinMemoryMB},
		{"cpus", l.CPUs, MinCPUs},
		{"pids", float64(l.Pids), MinPids},
		{"workspace_mb", float64(l.WorkspaceMB), 0},
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, f := range fields {
		switch {
		case math.IsNaN(f.value) || math.IsInf(f.value, 0):
			return fmt.Sprintf("limits must be finite numbers (%s is %s)", f.name, num(f.value))
		case f.value < 0:
			return fmt.Sprintf("limits must not be negative (%s is %s)", f.name, num(f.value))
		}
	}
	for _, f := range fields {
		if f.value != 0 && f.value < f.smallest {
			return fmt.Sprintf("limits too small: memory_mb >= %d, cpus >= %s, pids >= %d (or 0 for the default); %s is %s",
				MinMemoryMB, num(MinCPUs), MinPids, f.name, num(f.value))
		}
	}
	return ""
}

// Exceeds reports whether any field of l is larger than limit's.
func (l Limits) Exceeds(limit Limits) bool {
	return l.MemoryMB > limit.MemoryMB || l.CPUs > limit.CPUs || l.Pids > limit.Pids || l.WorkspaceMB > limit.WorkspaceMB
}

// socketName is the shape of an egress socket's file name.
var socketName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// IDPattern is the shape of a session id accepted by runtimes.
var IDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{7,63}$`)

// Errors shared by runtimes.
var (
	// ErrBadSpec reports an invalid Spec; its message says what is wrong
	// and may be shown to the client.
	ErrBadSpec = errors.New("invalid session spec")
	// ErrUnavailable is wrapped by runtime errors that mean no kernel can
	// be started now (sandbox tool missing, engine down, out of capacity).
	ErrUnavailable = errors.New("runtime unavailable")
	// ErrClosed is returned by Restart after Close.
	ErrClosed = errors.New("sandbox closed")
)

// SpecError is an invalid Spec. Reason says what is wrong in terms the
// client can act on (Public); errors.Is(err, ErrBadSpec) holds.
type SpecError struct{ Reason string }

func (e *SpecError) Error() string { return "sandbox: invalid session spec: " + e.Reason }

// Public is the reason, for the client.
func (e *SpecError) Public() string { return e.Reason }

// Unwrap makes errors.Is(err, ErrBadSpec) true.
func (e *SpecError) Unwrap() error { return ErrBadSpec }

func badSpec(format string, args ...any) error {
	return &SpecError{Reason: fmt.Sprintf(format, args...)}
}

// Validate checks the id, the environment (CheckEnv), the tenant, the
// limits (Limits.Validate) and the egress socket.
func (s Spec) Validate() error {
	if !IDPattern.MatchString(s.ID) {
		return badSpec("id %q", s.ID)
	}
	if k, ok := LookupKernel(s.Kernel); s.Kernel != "" && (!ok || k.Name != s.Kernel) {
		return badSpec("unknown kernel %q", s.Kernel)
	}
	if err := CheckEnv(s.Env); err != nil {
		return err
	}
	if s.Tenant != "" && !TenantPattern.MatchString(s.Tenant) {
		return badSpec("tenant %q", s.Tenant)
	}
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	if e := s.EgressSocket; e != "" && (!filepath.IsAbs(e) || filepath.Clean(e) != e || !socketName.MatchString(filepath.Base(e))) {
		return badSpec("egress socket %q", e)
	}
	return checkVolumes(s.Volumes)
}

// WorkspaceOpener is implemented by sandboxes whose workspace is not a
// directory on the gateway's host (their Workspace returns ""): they open
// it themselves, with the same guarantees as workspace.Root. The caller
// closes both; the tracker may be nil when changes cannot be tracked.
type WorkspaceOpener interface {
	OpenWorkspace(ctx context.Context) (workspace.FS, workspace.Tracker, error)
}

// Sandbox is one running, isolated kernel handed out by a runtime.
//
// Methods are safe for concurrent use. The holder must call Close, which
// kills the kernel and removes everything the runtime created for it.
type Sandbox interface {
	// ID returns the session id the sandbox was started for (Spec.ID).
	ID() string
	// Connection returns how the gateway reaches the current kernel process.
	// It changes after Restart.
	Connection() kernel.ConnectionInfo
	// Limits returns the effective limits (defaults filled in, maxima applied).
	Limits() Limits
	// Workspace returns the host path of the session's workspace directory:
	// the kernel's working directory. It survives Restart.
	Workspace() string
	// Exited is closed when the current kernel process has exited. It is
	// replaced by a fresh channel after Restart.
	Exited() <-chan struct{}
	// ExitReason explains the exit after Exited is closed (for example
	// "exit status 1", "OOMKilled: ...").
	ExitReason() string
	// Restart replaces the kernel process with a fresh one, keeping the
	// workspace. Variables are lost. It blocks until the new kernel's
	// sockets exist.
	Restart(ctx context.Context) error
	// Close kills the kernel and removes the sandbox. It is idempotent and
	// does its work even if ctx is already done.
	Close(ctx context.Context) error
}
