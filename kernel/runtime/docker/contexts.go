package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"golang.org/x/sys/unix"
)

// dockerSandbox is a sandbox of the docker runtime: the container's first
// kernel (a Durable Base) and the contexts started in the container
// (sandbox.ContextStarter).
//
// A context's kernel is a `docker exec` into the session's container: the
// same uid, file system, network namespace, seccomp profile, capabilities
// and rlimits, and the same cgroup, so the session's memory, CPU and pids
// limits cover all its kernels together. It runs in spec.Cwd, with the
// container's environment (the first kernel's, sandbox.KernelEnv); with
// egress it uses the first kernel's forwarder (sandbox.SharedEgressEnv),
// which listens on the loopback they share. Its ipc directory is
// sandbox.ContextsDir/<name>, the bind of Dirs.Contexts.
//
// A supervisor (execSupervisor) runs the kernel in a process group of its
// own: the exec's stdin is the gateway's end of the line, and when the
// gateway closes it (Kill) the supervisor kills that group. So a context
// ends, too, when the gateway's connection to the engine does (the engine
// restarting, the sandbox detached). The engine has no API to kill an
// exec, and host pids mean nothing under gVisor: this works under both.
//
// The container lives as long as its first kernel: a restart of that
// kernel, or its death, stops the container and every context's kernel
// with it. Each context then reports its exit ("the sandbox's first kernel
// restarted", "the sandbox stopped: ...") and starts again with its own
// Restart once the container runs again.
//
// Freezing (docker pause) stops every kernel of the container; a context
// itself is no sandbox.Freezer.
type dockerSandbox struct {
	sandbox.Durable
	d    *driver
	ctxs *sandbox.Contexts
	cmds sandbox.CommandSet
}

// newSandbox wraps the Base of a started or adopted container.
func newSandbox(b *sandbox.Base, d *driver) *dockerSandbox {
	return &dockerSandbox{Durable: sandbox.Durable{Base: b}, d: d, ctxs: sandbox.NewContexts(b)}
}

// StartContext implements sandbox.ContextStarter. The context's kernel
// starts in spec.Cwd (a directory of the workspace: a *sandbox.SpecError
// otherwise, and for a kernel the image does not have). It fails with
// sandbox.ErrUnavailable while the container does not run (its first
// kernel restarting or dead), and for a container made before contexts
// existed (no ContextsDir bind).
func (s *dockerSandbox) StartContext(ctx context.Context, spec sandbox.ContextSpec) (sandbox.Sandbox, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	if err := sandbox.CheckInstalled(s.d.r, spec.Kernel); err != nil {
		return nil, err
	}
	if !s.d.contextsBound() {
		return nil, fmt.Errorf("%w: docker: the container of %s was made before contexts existed (it has no %s)", sandbox.ErrUnavailable, s.ID(), sandbox.ContextsDir)
	}
	cfg := sandbox.BaseConfig{ID: s.ID(), Limits: s.Limits(), SandboxIPC: sandbox.ContextsDir + "/" + spec.Name, StartTimeout: s.d.r.cfg.StartTimeout}
	return s.ctxs.Start(ctx, spec.Name, cfg, func(b *sandbox.Base) error {
		if err := sandbox.CheckCwd(s.d.dirs.Work(), spec.Cwd); err != nil {
			return err
		}
		b.OnClose("remove context directory", func() error { return s.d.dirs.RemoveContext(spec.Name) })
		dirs, err := s.d.dirs.Context(spec.Name)
		if err != nil {
			return err
		}
		b.SetOwner(s.d.uid, s.d.uid)
		b.Use(dirs, &execDriver{d: s.d, spec: spec, ipc: cfg.SandboxIPC})
		return nil
	})
}

// Close closes the sandbox's contexts, then the sandbox.
func (s *dockerSandbox) Close(ctx context.Context) error {
	return errors.Join(s.cmds.Close(ctx), s.ctxs.Close(ctx), s.Durable.Close(ctx))
}

// SetEnd implements sandbox.Expiring: the container's deadline follows
// its session's end (see the package doc).
func (s *dockerSandbox) SetEnd(end time.Time) error {
	if err := s.d.end.setEnd(end, time.Now()); err != nil {
		return fmt.Errorf("docker: set end of %s: %w", s.d.name, err)
	}
	return nil
}

// Detach implements sandbox.Persistent: the contexts are closed (another
// gateway could not reach them: their supervisors end with this gateway's
// connections), the container is left running for the next gateway.
func (s *dockerSandbox) Detach(ctx context.Context) error {
	return errors.Join(s.cmds.Close(ctx), s.ctxs.Close(ctx), s.Durable.Detach(ctx))
}

// execSupervisor runs the kernel ("$@") in a session and process group of
// its own; EOF (or anything) on its stdin, the gateway's end, kills that
// group. It exits with the kernel's status, a signal's 128+n made 192+n:
// an exit status of 129 to 191 then means that the supervisor itself was
// killed (the container stopped), not the kernel.
const execSupervisor = `exec 3<&0 </dev/null
setsid "$@" &
k=$!
(read _ <&3; kill -KILL -$k 2>/dev/null || kill -KILL $k) &
w=$!
exec 3<&-
wait $k
s=$?
kill -KILL $w -$k 2>/dev/null
[ $s -gt 128 ] && [ $s -lt 192 ] && s=$((s + 64))
exit $s`

// Exit statuses of execSupervisor.
const (
	supervisorSignal = 192 // 192+n: the kernel died of signal n
	signalStatus     = 128 // 128+n: the supervisor did (the engine's report)
)

// execDriver starts one context's kernel (sandbox.Driver): a docker exec
// of execSupervisor into the sandbox's container.
type execDriver struct {
	d    *driver // the sandbox's
	spec sandbox.ContextSpec
	ipc  string         // where the kernel sees its ipc directory
	wg   sync.WaitGroup // waiter goroutines
}

// Launch implements sandbox.Driver: it creates the exec and attaches to
// it (which starts it), and a waiter reads its output until it ends.
func (x *execDriver) Launch(ctx context.Context, inc *sandbox.Incarnation) (sandbox.Process, error) {
	d := x.d
	run := d.currentRun()
	if run == nil || sandbox.IsDone(run.inc.Exited()) {
		return nil, fmt.Errorf("%w: docker: the sandbox's first kernel is not running", sandbox.ErrUnavailable)
	}
	var env []string
	if d.egressOn() {
		for k, v := range sandbox.SharedEgressEnv() {
			env = append(env, k+"="+v)
		}
	}
	cmd := append([]string{"/bin/sh", "-c", execSupervisor, "glassroom-context"},
		sandbox.KernelArgv("/usr/bin/python3", x.spec.Kernel, x.ipc+"/"+sandbox.ConnectionFileName)...)
	cctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	id := d.container()
	oom := d.oomCounter(cctx, id)
	execID, hj, err := d.startExec(cctx, id, container.ExecOptions{
		User:         fmt.Sprintf("%d:%d", d.uid, d.uid),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Env:          env,
		WorkingDir:   x.spec.Cwd,
		Cmd:          cmd,
	})
	if err != nil {
		return nil, err
	}
	p := &execProcess{x: x, id: execID, inc: inc, conn: hj, out: &sandbox.TailBuffer{Max: 16 << 10}, run: run, oom: oom, killed: make(chan struct{})}
	x.wg.Add(1)
	go func() { // owned by the driver: Destroy waits for it; ends when the exec does
		defer x.wg.Done()
		p.wait()
	}()
	return p, nil
}

// Destroy implements sandbox.Driver: the Base killed the process; wait for
// the waiter (bounded by ctx).
func (x *execDriver) Destroy(ctx context.Context) error {
	done := make(chan struct{})
	go func() { x.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("docker: waiting for context %s of %s to exit: %w", x.spec.Name, x.d.name, ctx.Err())
	}
}

// execProcess is one run of a context's kernel (sandbox.Process).
type execProcess struct {
	x      *execDriver
	id     string // the exec's
	inc    *sandbox.Incarnation
	conn   types.HijackedResponse
	out    *sandbox.TailBuffer
	run    *mainRun   // the container's run it was started in
	oom    oomCounter // the container's OOM kills, to tell one of this kernel
	killed chan struct{}
	once   sync.Once
}

// Kill implements sandbox.Process: it closes the exec's stdin, on which
// the supervisor kills the kernel's process group.
func (p *execProcess) Kill(context.Context) error {
	p.once.Do(func() {
		close(p.killed)
		_ = p.conn.CloseWrite()
	})
	return nil
}

// Diagnostics implements sandbox.Process: the kernel's last output.
func (p *execProcess) Diagnostics() string { return p.out.String() }

// wait reads the exec's output until it ends, or the container's run
// does, and reports why.
func (p *execProcess) wait() {
	copied := make(chan error, 1)
	go func() { // owned by wait, which closes the stream and waits for it
		_, err := stdcopy.StdCopy(p.out, p.out, p.conn.Reader)
		copied <- err
	}()
	select {
	case err := <-copied:
		p.conn.Close()
		p.inc.Exit(p.reason(err))
	case <-p.run.inc.Exited():
		// The container stopped, so every process in it is gone; under
		// gVisor the engine may never end the stream of an exec whose
		// container was started again at once.
		p.conn.Close()
		if err := <-copied; err != nil { // the stream's end is not the reason
			p.out.Note("(the stream ended: " + err.Error() + ")")
		}
		p.inc.Exit(p.runEnded())
	}
}

// runEnded says why the exec ended with the container's run.
func (p *execProcess) runEnded() string {
	if p.run.killed.Load() {
		return "the sandbox's first kernel restarted, which ended the kernels of all its contexts: restart this context"
	}
	return "the sandbox stopped: its first kernel ended (" + p.run.inc.ExitReason() + "), and with it the kernels of all its contexts"
}

// settleWait bounds how long an ended exec whose supervisor was killed
// waits for the container's first kernel to be reported gone: the engine
// reports the execs of a stopping container before the container.
const settleWait = 10 * time.Second

// runEndedWithin waits up to d for the container's run to end, or the
// context to be killed, and then says so; ended is false if neither came.
func (p *execProcess) runEndedWithin(d time.Duration) (reason string, ended bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.run.inc.Exited():
		return p.runEnded(), true
	case <-p.killed:
		return "killed (a restart or close of the context)", true
	case <-timer.C:
		return "", false
	}
}

// reason says why the exec ended: the kernel's status, its OOM kill, or
// the container's stop or restart.
func (p *execProcess) reason(readErr error) string {
	if sandbox.IsDone(p.killed) {
		return "killed (a restart or close of the context)"
	}
	code, err := p.exitCode()
	switch {
	case err == nil && code > supervisorSignal && code <= supervisorSignal+64:
		sig := syscall.Signal(code - supervisorSignal)
		if sig == syscall.SIGKILL && p.oom.increased() {
			return "OOMKilled: the sandbox exceeded its memory limit of " + strconv.Itoa(p.x.d.limits.MemoryMB) + " MB, which all its kernels share"
		}
		return "the kernel was killed by " + unix.SignalName(sig)
	case err == nil && code == signalStatus:
		// The kernel's own exit 128, or the exec of a container whose
		// gVisor sentry was killed (the engine reports 128 for those):
		// the container's end, if it follows, tells which.
		if reason, ended := p.runEndedWithin(settleWait); ended {
			return reason
		}
		return "exit code " + strconv.Itoa(code)
	case err == nil && (code < signalStatus || code > supervisorSignal+64):
		return "exit code " + strconv.Itoa(code)
	}
	// The supervisor itself was killed, or the exec is gone: the container
	// stopped (reported after its execs), or the engine went away.
	if reason, ended := p.runEndedWithin(settleWait); ended {
		return reason
	}
	if err != nil {
		return fmt.Sprintf("the connection to the kernel was lost (%v; %v)", readErr, err)
	}
	return "the kernel's supervisor was killed (exit code " + strconv.Itoa(code) + ")"
}

// exitCode asks the engine for the exec's exit code, a few times while it
// says it still runs (it reports it at most 2 s after the process ended).
func (p *execProcess) exitCode() (int, error) {
	var err error
	for try := 0; try < 30; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), p.x.d.r.cfg.CallTimeout)
		var info container.ExecInspect
		info, err = p.x.d.r.cli.ContainerExecInspect(ctx, p.id)
		cancel()
		switch {
		case cerrdefs.IsNotFound(err):
			return 0, err
		case err == nil && !info.Running:
			return info.ExitCode, nil
		case err == nil:
			err = errors.New("the exec still runs")
		}
		select {
		case <-p.run.inc.Exited():
			if try > 0 {
				return 0, err
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	return 0, err
}

// mainRun is one run of the container: its first kernel's incarnation,
// and whether the gateway killed it (a restart).
type mainRun struct {
	inc    *sandbox.Incarnation
	killed atomic.Bool
}

// oomCounter reads the count of OOM kills of a container's memory cgroup
// on this host (cgroup v1 memory.oom_control, v2 memory.events). The zero
// value knows nothing (the gateway runs where it cannot see the
// container's cgroup): increased is then false.
type oomCounter struct {
	file   string
	before int
}

// oomCounter finds container id's memory cgroup through its first
// process's /proc/<pid>/cgroup, and reads its count now.
func (d *driver) oomCounter(ctx context.Context, id string) oomCounter {
	info, err := d.r.cli.ContainerInspect(ctx, id)
	if err != nil || info.State == nil || info.State.Pid <= 0 {
		return oomCounter{}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(info.State.Pid) + "/cgroup")
	if err != nil {
		return oomCounter{}
	}
	var file string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		switch {
		case len(f) != 3:
		case f[0] == "0" && f[1] == "":
			if file == "" {
				file = filepath.Join("/sys/fs/cgroup", f[2], "memory.events")
			}
		case strings.Contains(","+f[1]+",", ",memory,"):
			file = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.oom_control")
		}
	}
	n, ok := readOOMKills(file)
	if !ok {
		return oomCounter{}
	}
	return oomCounter{file: file, before: n}
}

// increased reports whether the container's OOM kills grew since.
func (c oomCounter) increased() bool {
	if c.file == "" {
		return false
	}
	n, ok := readOOMKills(c.file)
	return ok && n > c.before
}

func readOOMKills(file string) (int, bool) {
	if file == "" {
		return 0, false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, err := strconv.Atoi(f[1])
			return n, err == nil
		}
	}
	return 0, false
}
