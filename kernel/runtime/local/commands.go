package local

import (
	"context"
	"fmt"
	"maps"
	"os"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

var _ sandbox.CommandRunner = (*localSandbox)(nil)

// StartCommand implements sandbox.CommandRunner. A command is one more
// bwrap process like a context's kernel (the same uid, workspace binds,
// egress socket bind, seccomp filter, rlimits and cgroup, its own pid,
// ipc and uts namespaces and its own /tmp) without the kernel's ipc
// directory, which runs the launcher's command mode in spec.StartDir(). As root
// it joins the first kernel's network namespace (sharedNetns: the
// sandbox has one loopback, as a container has); otherwise it has one of
// its own. Kill
// kills the whole bwrap from the host (its pid namespace with it). Without
// bubblewrap (InsecureNoSandbox) there are no commands (ErrNoCommands).
func (s *localSandbox) StartCommand(ctx context.Context, spec sandbox.CommandSpec) (sandbox.Command, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	d := s.d
	if d.r.bwrap == "" {
		return nil, fmt.Errorf("%w: not without bubblewrap (InsecureNoSandbox)", sandbox.ErrNoCommands)
	}
	if err := sandbox.CheckCwd(d.dirs.Work(), spec.StartDir()); err != nil {
		return nil, err
	}
	if d.r.seccomp == nil && !d.r.cfg.InsecureNoSeccomp {
		return nil, fmt.Errorf("local: start command: %w (GOARCH=%s)", ErrNoSeccomp, d.r.cfg.Arch)
	}
	slot, err := s.cmds.Begin()
	if err != nil {
		return nil, err
	}
	defer slot.EndUnlessStarted()
	if s.Frozen() { // a frozen cgroup would hold the new process too
		if err := s.Thaw(ctx); err != nil {
			return nil, fmt.Errorf("local: start command: %w", err)
		}
	}
	env := maps.Clone(d.env)
	maps.Copy(env, spec.Env)
	// The sandbox's driver, in the command's working directory.
	cd := &driver{r: d.r, id: d.id, kernel: d.kernel, env: d.env, limits: d.limits, dirs: d.dirs,
		uid: d.uid, gid: d.gid, cg: d.cg, egress: d.egress, context: &sandbox.ContextSpec{Name: "command", Cwd: spec.StartDir()}}
	// The first kernel's network namespace, when it can be joined: a
	// server a command or a cell starts is reached by the next command,
	// and by a preview's relay.
	var netns *os.File
	if d.netns != nil {
		netns = d.netns.dup()
	}
	if netns != nil {
		defer netns.Close()
		cd.joinNet = true
	}
	cmd, err := cd.commandLine(d.prlimit(), sandbox.CommandArgv(d.r.cfg.Python, spec, sandbox.LauncherOptions{}), env, d.r.seccomp != nil, false)
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("local: start command: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("local: start command: %w", err)
	}
	tail := &sandbox.TailBuffer{Max: 4 << 10}
	cmd.Stderr = tail
	// fd 3: bwrap's --info-fd (read by nobody; it fits the pipe's buffer),
	// fd 4: the seccomp filter (--seccomp 4).
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("local: start command: %w", err)
	}
	defer infoW.Close()
	cmd.ExtraFiles = []*os.File{infoW}
	if d.r.seccomp != nil {
		sr, sw, err := os.Pipe()
		if err != nil {
			infoR.Close()
			return nil, fmt.Errorf("local: start command: %w", err)
		}
		defer sr.Close()
		_, err = sw.Write(d.r.seccomp) // a few hundred bytes: fits the pipe buffer
		sw.Close()
		if err != nil {
			infoR.Close()
			return nil, fmt.Errorf("local: seccomp filter: %w", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, sr)
	}
	if d.cg != nil {
		closeFD, err := d.cg.cloneInto(cmd)
		if err != nil {
			infoR.Close()
			return nil, err
		}
		defer closeFD()
	}
	// Once the launcher has exited, Wait gives up on a stderr that a
	// process which outlived the kill still holds (see Abandon).
	cmd.WaitDelay = 2 * time.Second
	if err := startInNetns(netns, cmd); err != nil {
		infoR.Close()
		return nil, fmt.Errorf("local: start command: %w", err)
	}
	pid := cmd.Process.Pid
	c := sandbox.NewCommand(sandbox.CommandTransport{
		OwnPIDNamespace: true, // its bwrap's --unshare-pid
		In:              stdin,
		Out:             stdout,
		Kill: func(int) {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // prelude → prlimit → bwrap, and its pid namespace
		},
		// A process that escaped the kill (bwrap's child between its
		// clone and its parent-death signal) keeps the pipe open.
		Abandon: func() { _ = stdout.Close() },
		Wait: func() string {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // whatever the launcher left
			err := cmd.Wait()
			infoR.Close()
			slot.End()
			if err != nil {
				if t := tail.String(); t != "" {
					return fmt.Sprintf("%v: %s", err, t)
				}
				return err.Error()
			}
			return ""
		},
	})
	slot.Started(c)
	return c, nil
}
