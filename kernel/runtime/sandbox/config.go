package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Common is the configuration every runtime shares. Zero fields take the
// defaults named in their comments (see WithDefaults).
type Common struct {
	// StateDir holds one directory per session (see Dirs). Each runtime
	// has its own default. One runtime at a time holds it (see
	// LockStateDir).
	StateDir string
	// Defaults are the limits of a session that asks for none
	// (2048 MB, 1 CPU, 128 pids, 512 MB workspace).
	Defaults Limits
	// Max caps what a session may ask for (8192 MB, 2 CPUs, 1024 pids, 4096 MB).
	Max Limits
	// NoFile is the open-files limit (1024); FileSizeMB the largest file (1024).
	NoFile     int
	FileSizeMB int
	// UIDBase is the first host uid of sandboxes: the sandbox in slot n runs
	// as UIDBase+n, so processes limits and file ownership are per session.
	// A runtime that runs sandboxes as these uids claims
	// [UIDBase, UIDBase+MaxSandboxes) host-wide (see ClaimUIDRange): it
	// refuses to start on uids another live gateway claimed.
	UIDBase int
	// MaxSandboxes bounds concurrent sandboxes (1024).
	MaxSandboxes int
	// UIDClaimDir is the host-wide directory of the gateways' uid claims
	// (DefaultUIDClaimDir). Every gateway of a host must claim in the same
	// one: a gateway in a container needs it bind mounted.
	UIDClaimDir string
	// StartTimeout bounds a kernel start (60 s).
	StartTimeout time.Duration
}

// StateDirHolder is implemented by runtimes that have a state directory
// on the gateway's host: StateDir returns it (absolute), or "" when there
// is none. A runtime that keeps its sandboxes' directories there (local,
// docker) holds it locked (LockStateDir) for as long as it runs; the
// gateway keeps its session store in it.
type StateDirHolder interface {
	StateDir() string
}

// DefaultMaxSandboxes is the default of Common.MaxSandboxes.
const DefaultMaxSandboxes = 1024

// DefaultLimits returns the default of Common.Defaults.
func DefaultLimits() Limits { return Limits{MemoryMB: 2048, CPUs: 1, Pids: 128, WorkspaceMB: 512} }

// MaxLimits returns the default of Common.Max.
func MaxLimits() Limits { return Limits{MemoryMB: 8192, CPUs: 2, Pids: 1024, WorkspaceMB: 4096} }

// WithDefaults fills zero fields; stateDir and uidBase are the runtime's
// own defaults.
func (c Common) WithDefaults(stateDir string, uidBase int) Common {
	if c.StateDir == "" {
		c.StateDir = stateDir
	}
	c.StateDir = filepath.Clean(c.StateDir)
	c.Defaults = c.Defaults.Or(DefaultLimits())
	c.Max = c.Max.Or(MaxLimits())
	if c.NoFile == 0 {
		c.NoFile = 1024
	}
	if c.FileSizeMB == 0 {
		c.FileSizeMB = 1024
	}
	if c.UIDBase == 0 {
		c.UIDBase = uidBase
	}
	if c.MaxSandboxes == 0 {
		c.MaxSandboxes = DefaultMaxSandboxes
	}
	if c.UIDClaimDir == "" {
		c.UIDClaimDir = DefaultUIDClaimDir
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work (call it on the
// result of WithDefaults).
func (c Common) Validate() error {
	if !filepath.IsAbs(c.StateDir) {
		return errors.New("sandbox: config: state dir must be an absolute path")
	}
	if !filepath.IsAbs(c.UIDClaimDir) {
		return errors.New("sandbox: config: uid claim dir must be an absolute path")
	}
	if c.UIDBase < 1000 || c.UIDBase+c.MaxSandboxes > 1<<31-2 {
		return fmt.Errorf("sandbox: config: uid range %d+%d invalid", c.UIDBase, c.MaxSandboxes)
	}
	if reason := c.Defaults.problem(); reason != "" {
		return errors.New("sandbox: config: default " + reason)
	}
	if reason := c.Max.problem(); reason != "" {
		return errors.New("sandbox: config: maximum " + reason)
	}
	if c.Defaults.Exceeds(c.Max) {
		return errors.New("sandbox: config: default limits exceed maxima")
	}
	if c.NoFile < 64 || c.FileSizeMB < 1 || c.MaxSandboxes < 1 || c.StartTimeout < 0 {
		return errors.New("sandbox: config: limits too small")
	}
	return nil
}

// Limits returns what a session asking for req gets.
func (c Common) Limits(req Limits) Limits { return req.Or(c.Defaults).Cap(c.Max) }
