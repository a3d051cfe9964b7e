package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// localSandbox is a sandbox of the local runtime: its first kernel (the
// Base) and the contexts started in it (sandbox.ContextStarter).
//
// A context's kernel is one more bwrap process like the first kernel's:
// the same uid, the same workspace binds (sandbox.WorkDir and its alias),
// the same egress socket bind, the same seccomp filter and rlimits, and
// the same cgroup, so the session's memory, CPU and pids limits cover all
// its kernels together. Its own pid, network, ipc and uts namespaces (the
// egress forwarder of its launcher listens on its own loopback), its own
// /tmp, and its own ipc directory (sandbox.Dirs.Context: outside the
// first kernel's, which that kernel's restart empties; bound at the same
// sandbox.IPCDir in its namespace).
//
// Freezing the sandbox freezes the cgroup, so every kernel of it; a
// context itself is no sandbox.Freezer.
type localSandbox struct {
	*sandbox.Base
	d    *driver
	ctxs *sandbox.Contexts
	cmds sandbox.CommandSet
}

// StartContext implements sandbox.ContextStarter. The context's kernel
// starts in spec.Cwd (a directory of the workspace: a *sandbox.SpecError
// otherwise, and for a kernel this runtime has not installed).
func (s *localSandbox) StartContext(ctx context.Context, spec sandbox.ContextSpec) (sandbox.Sandbox, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	if err := sandbox.CheckInstalled(s.d.r, spec.Kernel); err != nil {
		return nil, err
	}
	cfg := sandbox.BaseConfig{ID: s.ID(), Limits: s.Limits(), SandboxIPC: sandbox.IPCDir, StartTimeout: s.d.r.cfg.StartTimeout}
	if s.d.r.bwrap == "" {
		cfg.SandboxIPC = "" // insecure mode: the kernel sees host paths
	}
	return s.ctxs.Start(ctx, spec.Name, cfg, func(b *sandbox.Base) error {
		if err := sandbox.CheckCwd(s.d.dirs.Work(), spec.Cwd); err != nil {
			return err
		}
		b.OnClose("remove context directory", func() error { return s.d.dirs.RemoveContext(spec.Name) })
		dirs, err := s.d.dirs.Context(spec.Name)
		if err != nil {
			return err
		}
		b.SetOwner(s.d.uid, s.d.gid)
		cd := s.d.forContext(spec, dirs)
		if s.d.r.bwrap == "" {
			b.OnClose("remove scratch directory", func() error {
				return os.RemoveAll(filepath.Join(s.d.dirs.Path(), cd.scratchName()))
			})
		}
		b.Use(dirs, cd)
		return nil
	})
}

// forContext returns the driver of the context spec, whose ipc directory
// is that of dirs (the context's view): the sandbox's uid, limits,
// environment, egress socket and cgroup.
func (d *driver) forContext(spec sandbox.ContextSpec, dirs *sandbox.Dirs) *driver {
	return &driver{r: d.r, id: d.id, kernel: spec.Kernel, env: d.env, limits: d.limits, dirs: dirs,
		uid: d.uid, gid: d.gid, cg: d.cg, egress: d.egress, context: &spec}
}

// Close closes the sandbox's contexts, then the sandbox (Base.Close).
func (s *localSandbox) Close(ctx context.Context) error {
	return errors.Join(s.cmds.Close(ctx), s.ctxs.Close(ctx), s.Base.Close(ctx))
}
