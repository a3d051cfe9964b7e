package kernel

import (
	"context"
	"errors"
	"fmt"
	"regexp"
)

// Spec describes the kernel a runtime must start for one session.
type Spec struct {
	// ID is the session id. Runtimes derive deterministic names from it
	// (directories, container names), so it must match IDPattern.
	ID string
	// Env is extra environment for the kernel process.
	Env map[string]string
	// Limits are the resources granted; zero fields take the runtime's defaults.
	Limits Limits
}

// Limits are the resources of one sandbox. Runtimes cap them at their maxima.
type Limits struct {
	MemoryMB    int     `json:"memory_mb"`    // address space (local) or cgroup memory (docker)
	CPUs        float64 `json:"cpus"`         // CPU quota in cores (docker)
	Pids        int     `json:"pids"`         // processes and threads
	WorkspaceMB int     `json:"workspace_mb"` // size of the writable workspace
}

// IDPattern is the shape of a session id accepted by runtimes.
var IDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{7,63}$`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// ErrBadSpec reports an invalid Spec.
var ErrBadSpec = errors.New("kernel: bad spec")

// Validate checks the id and the environment names and sizes.
func (s Spec) Validate() error {
	if !IDPattern.MatchString(s.ID) {
		return fmt.Errorf("%w: id %q", ErrBadSpec, s.ID)
	}
	if len(s.Env) > 128 {
		return fmt.Errorf("%w: more than 128 environment variables", ErrBadSpec)
	}
	for k, v := range s.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("%w: environment name %q", ErrBadSpec, k)
		}
		if len(v) > 32<<10 {
			return fmt.Errorf("%w: environment value of %s over 32 KiB", ErrBadSpec, k)
		}
		for i := 0; i < len(v); i++ {
			if v[i] == 0 {
				return fmt.Errorf("%w: environment value of %s has a NUL byte", ErrBadSpec, k)
			}
		}
	}
	if s.Limits.MemoryMB < 0 || s.Limits.CPUs < 0 || s.Limits.Pids < 0 || s.Limits.WorkspaceMB < 0 {
		return fmt.Errorf("%w: negative limit", ErrBadSpec)
	}
	return nil
}

// ErrUnavailable is wrapped by runtime errors that mean no kernel can be
// started now (sandbox tool missing, engine down, out of capacity).
var ErrUnavailable = errors.New("kernel: runtime unavailable")

// Sandbox is one running, isolated kernel handed out by a runtime.
//
// Methods are safe for concurrent use. The holder must call Close, which
// kills the kernel and removes everything the runtime created for it.
type Sandbox interface {
	// Connection returns how the gateway reaches the current kernel process.
	// It changes after Restart.
	Connection() ConnectionInfo
	// Limits returns the effective limits (defaults filled in, maxima applied).
	Limits() Limits
	// Workspace returns the host path of the session's workspace directory:
	// the kernel's working directory. It survives Restart.
	Workspace() string
	// Exited is closed when the current kernel process has exited. It is
	// replaced by a fresh channel after Restart.
	Exited() <-chan struct{}
	// ExitReason explains the exit after Exited is closed (for example
	// "exit status 1", "killed: OOM").
	ExitReason() string
	// Restart replaces the kernel process with a fresh one, keeping the
	// workspace. Variables are lost.
	Restart(ctx context.Context) error
	// Close kills the kernel and removes the sandbox. It is idempotent.
	Close(ctx context.Context) error
}
