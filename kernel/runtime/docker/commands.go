package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

var _ sandbox.CommandRunner = (*dockerSandbox)(nil)

// killGroup kills the process group "-$1" (a command's, inside the
// container), as an exec of its own.
const killGroup = `kill -9 "-$1"` // dash: no "--", no -s KILL before a negative pid

// StartCommand implements sandbox.CommandRunner. A command is a docker
// exec into the session's container, like a context's kernel (the same
// uid, file system, network namespace, seccomp profile, capabilities,
// rlimits and cgroup; the first kernel's egress forwarder), that runs the
// launcher's command mode in spec.StartDir(). Kill closes the exec's stdin (the
// launcher then kills the command's group) and kills the group with an
// exec of its own, which works too when the launcher is stuck. It fails
// with sandbox.ErrUnavailable while the container does not run.
func (s *dockerSandbox) StartCommand(ctx context.Context, spec sandbox.CommandSpec) (sandbox.Command, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	d := s.d
	if err := sandbox.CheckCwd(d.dirs.Work(), spec.StartDir()); err != nil {
		return nil, err
	}
	slot, err := s.cmds.Begin()
	if err != nil {
		return nil, err
	}
	defer slot.EndUnlessStarted()
	run := d.currentRun()
	if run == nil || sandbox.IsDone(run.inc.Exited()) {
		return nil, fmt.Errorf("%w: docker: the sandbox's first kernel is not running", sandbox.ErrUnavailable)
	}
	if s.Frozen() { // a paused container runs no exec
		if err := s.Thaw(ctx); err != nil {
			return nil, fmt.Errorf("docker: start command: %w", err)
		}
	}
	env := map[string]string{}
	if d.egressOn() {
		env = sandbox.SharedEgressEnv()
	}
	maps.Copy(env, spec.Env)
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	user := fmt.Sprintf("%d:%d", d.uid, d.uid)
	id := d.container()
	cctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	_, hj, err := d.startExec(cctx, id, container.ExecOptions{
		User: user, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: envList, WorkingDir: spec.StartDir(), Cmd: sandbox.CommandArgv("/usr/bin/python3", spec, sandbox.LauncherOptions{MemoryGuard: d.r.gvisor}),
	})
	if err != nil {
		return nil, err
	}
	tail := &sandbox.TailBuffer{Max: 4 << 10}
	pr, pw := io.Pipe()
	copied := make(chan struct{})
	go func() { // owned by the command: its Wait closes the stream and waits for it
		defer close(copied)
		done := make(chan error, 1)
		go func() { // owned by the goroutine above, which waits for it
			_, err := stdcopy.StdCopy(pw, tail, hj.Reader)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-run.inc.Exited():
			// The container stopped: under gVisor the engine may never
			// end the stream of an exec whose container started again.
			hj.Close()
			if cerr := <-done; cerr != nil {
				tail.Note("(the stream ended: " + cerr.Error() + ")")
			}
			err = errors.New("the sandbox stopped (its first kernel ended or restarted)")
		}
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	c := sandbox.NewCommand(sandbox.CommandTransport{
		In:  execStdin{hj},
		Out: pr,
		Kill: func(pgid int) {
			_ = hj.CloseWrite()
			if pgid > 0 {
				d.killGroup(user, id, pgid)
			}
		},
		// A process that left the killed group keeps the exec's stream
		// open: closing the connection ends it.
		Abandon: func() { hj.Close() },
		Wait: func() string {
			_ = pr.Close()
			hj.Close()
			<-copied
			slot.End()
			if sandbox.IsDone(run.inc.Exited()) {
				return "the sandbox stopped (its first kernel ended or restarted)"
			}
			return tail.String()
		},
	})
	slot.Started(c)
	return c, nil
}

// startExec creates an exec of opts in container id and attaches to it,
// which starts it; ctx bounds both calls. Its errors wrap
// sandbox.ErrUnavailable. The caller closes hj.
func (d *driver) startExec(ctx context.Context, id string, opts container.ExecOptions) (execID string, hj types.HijackedResponse, err error) {
	created, err := d.r.cli.ContainerExecCreate(ctx, id, opts)
	if err != nil {
		if cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err) {
			return "", hj, fmt.Errorf("%w: docker: the sandbox's first kernel is not running: %w", sandbox.ErrUnavailable, err)
		}
		return "", hj, fmt.Errorf("%w: docker: exec into %s: %w", sandbox.ErrUnavailable, d.name, err)
	}
	hj, err = d.r.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", hj, fmt.Errorf("%w: docker: start exec in %s: %w", sandbox.ErrUnavailable, d.name, err)
	}
	return created.ID, hj, nil
}

// killGroup kills process group pgid of container id with an exec, as
// user (bounded by CallTimeout; errors are the caller's to ignore: the
// group may be gone).
func (d *driver) killGroup(user, id string, pgid int) {
	ctx, cancel := context.WithTimeout(context.Background(), d.r.cfg.CallTimeout)
	defer cancel()
	ex, err := d.r.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: user, Cmd: []string{"/bin/sh", "-c", killGroup, "glassroom-kill", strconv.Itoa(pgid)},
	})
	if err != nil {
		return
	}
	_ = d.r.cli.ContainerExecStart(ctx, ex.ID, container.ExecStartOptions{Detach: true})
}

// execStdin is an exec's stdin: Close ends it (the launcher then ends its
// command).
type execStdin struct{ hj types.HijackedResponse }

func (w execStdin) Write(p []byte) (int, error) { return w.hj.Conn.Write(p) }
func (w execStdin) Close() error                { return w.hj.CloseWrite() }
