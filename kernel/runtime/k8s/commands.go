package k8s

import (
	"context"
	"fmt"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// StartCommand implements sandbox.CommandRunner. The pod's supervisor
// starts the launcher's command mode for it (sandbox.CommandArgv) in the
// kernel container: the same uid, file system, rlimits, cgroup, seccomp
// profile and network as the kernels, in a session of its own with
// oom_score_adj 1000, above the kernels'. Its stdin and stdout are a
// tunnel through the agent (the launcher's frames); Kill ends the
// tunnel's writing (the launcher then kills the command's group) and asks
// the supervisor to kill the group too, which works when the launcher is
// stuck. A tunnel that breaks (the gateway gone) kills the command the
// same way. It fails with sandbox.ErrUnavailable while the pod's first
// kernel does not run, and with a *sandbox.SpecError for a cwd that is
// not a directory of the workspace.
func (s *podSandbox) StartCommand(ctx context.Context, spec sandbox.CommandSpec) (sandbox.Command, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	slot, err := s.cmds.Begin()
	if err != nil {
		return nil, err
	}
	defer slot.EndUnlessStarted()
	d := s.d
	run, err := d.running()
	if err != nil {
		return nil, err
	}
	if s.Frozen() { // a stopped sandbox would run nothing
		if err := s.Thaw(ctx); err != nil {
			return nil, fmt.Errorf("k8s: start command: %w", err)
		}
	}
	conn, err := d.spawn(ctx, spawnRequest{Kind: "command", Argv: sandbox.CommandArgv(d.r.cfg.Python, spec, sandbox.LauncherOptions{}),
		Cwd: relativeCwd(spec.StartDir()), Env: spec.Env})
	if err != nil {
		return nil, fmt.Errorf("k8s: start command: %w", err)
	}
	c := sandbox.NewCommand(sandbox.CommandTransport{
		In:  streamWriter{conn},
		Out: conn,
		Kill: func(pgid int) {
			_ = closeWrite(conn)
			if pgid > 0 {
				_ = d.killGroup(pgid) // bounded by CallTimeout
			}
		},
		Abandon: func() { conn.Close() },
		Wait: func() string {
			conn.Close()
			slot.End()
			if sandbox.IsDone(run.Exited()) {
				return "the sandbox stopped (its first kernel ended or restarted)"
			}
			return ""
		},
	})
	slot.Started(c)
	return c, nil
}

// running returns the incarnation of the pod's first kernel, or
// sandbox.ErrUnavailable when it does not run: contexts and commands run
// beside it, and end with it.
func (d *driver) running() (*sandbox.Incarnation, error) {
	d.mu.Lock()
	inc, gone := d.inc, d.gone
	d.mu.Unlock()
	switch {
	case gone != "":
		return nil, fmt.Errorf("%w: k8s: pod %s: %s", sandbox.ErrUnavailable, d.name, gone)
	case inc == nil || sandbox.IsDone(inc.Exited()):
		return nil, fmt.Errorf("%w: k8s: the sandbox's first kernel is not running", sandbox.ErrUnavailable)
	}
	return inc, nil
}
