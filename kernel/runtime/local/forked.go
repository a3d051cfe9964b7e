package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"golang.org/x/sys/unix"
)

// forkPlan says how a kernel starts: startForked, or startExec with the
// reason (sandbox.StartCount's Reason).
func (r *Runtime) forkPlan(kernel string, env map[string]string, memMB int, filter []byte) (string, string) {
	switch {
	case r.fork == nil || r.bwrap == "" || !r.root || filter == nil:
		return startExec, "off"
	case !forkable(kernel):
		return startExec, "kernel"
	}
	if why := r.fork.refusal(env, memMB); why != "" {
		return startExec, why
	}
	return startForked, ""
}

// countExec counts an exec'd start.
func (r *Runtime) countExec(reason string) {
	if r.fork != nil {
		r.fork.count(startExec, reason)
	}
}

// KernelStarts implements sandbox.StartCounter.
func (r *Runtime) KernelStarts() []sandbox.StartCount {
	if r.fork == nil {
		return nil
	}
	return r.fork.starts()
}

// forkable reports whether the template can serve the kernel: ipykernel
// in the runtime's Python (python3).
func forkable(kernel string) bool {
	if kernel == "" {
		kernel = sandbox.DefaultKernel
	}
	k, ok := kernels.Lookup(kernel)
	return ok && k.Name == kernel && k.Launch.Kind == kernels.IPyKernel
}

// launchForked starts the sandbox around a holder (bwrap running sleep:
// the namespaces, mounts, uid map and seccomp filter of an exec'd
// kernel's sandbox, inside its cgroup), then has the template fork the
// kernel into it (forkServer.spawn), confined as the holder is.
func (d *driver) launchForked(ctx context.Context, inc *sandbox.Incarnation, filter []byte) (_ *process, err error) {
	began := time.Now()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("local: fork: %w", err)
	}
	defer readyR.Close()
	defer readyW.Close()
	// The holder says it is running (bwrap has built the whole sandbox)
	// on the descriptor after bwrap's own (fd 3 info, fd 4 seccomp).
	readyFD := 3 + 2
	holder := []string{"/bin/sh", "-c", "echo >&" + strconv.Itoa(readyFD) + "; exec /usr/bin/sleep infinity"}
	cmd, err := d.commandLine(d.prlimit(), holder, d.env, true, true)
	if err != nil {
		return nil, err
	}
	p, err := d.start(inc, cmd, filter, []*os.File{readyW})
	if err != nil {
		return nil, err
	}
	readyW.Close()
	defer func() {
		if err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			if p.pidfd >= 0 {
				unix.Close(p.pidfd)
			}
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		_ = readyR.SetReadDeadline(dl)
	}
	if _, err := readLine(readyR, 16); err != nil || p.child <= 0 {
		if err == nil {
			err = errors.New("bwrap gave no pid")
		}
		return nil, fmt.Errorf("local: fork: the sandbox did not start (%w): %s", err, p.stderr.String())
	}
	held := time.Now()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("local: fork: %w", err)
	}
	defer outW.Close()
	argv := sandbox.KernelArgv(d.r.cfg.Python, d.kernel, sandbox.ConnFile)[5:] // after python -I -B -c CODE
	req := forkRequest{NSPid: p.child, Rlimits: d.rlimits(), UID: 1000, GID: 1000, Cwd: d.cwd(), Env: d.env,
		Argv: argv, Cmdline: append([]string{d.r.cfg.Python, "-I", "-B", "-c", "# glassroom kernel, forked"}, argv[:2]...), Seccomp: filter}
	if d.cg != nil {
		req.CgroupProcs = d.cg.memberFiles()
	}
	k, err := d.r.fork.spawn(ctx, req, outW)
	if err != nil {
		outR.Close()
		return nil, err
	}
	p.forked = k
	d.r.log.Debug().Str("session", d.id).Dur("sandbox", held.Sub(began)).Dur("fork", time.Since(held)).Msg("kernel forked")
	d.wg.Add(1)
	go func() { // owned by the driver: Destroy waits for it; ends when the kernel and all it started are gone
		defer d.wg.Done()
		_, _ = io.Copy(p.stderr, outR)
		outR.Close()
	}()
	d.watch(p)
	return p, nil
}

// forkedExit is how a forked kernel ended: its wait status.
type forkedExit struct{ status syscall.WaitStatus }

func (e *forkedExit) Error() string {
	switch {
	case e.status.Signaled():
		return "signal: " + e.status.Signal().String()
	default:
		return "exit status " + strconv.Itoa(e.status.ExitStatus())
	}
}

// end waits for the kernel's end and closes what refers to it; nil when
// it exited with status 0.
func (k *forked) end() error {
	status, err := k.wait()
	k.mu.Lock()
	if k.pidfd >= 0 {
		if err != nil { // the template is gone: make sure the kernel is
			_ = unix.PidfdSendSignal(k.pidfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(k.pidfd)
		k.pidfd = -1
	}
	k.mu.Unlock()
	_ = k.conn.Close()
	switch {
	case err != nil:
		return fmt.Errorf("local: the forked kernel's template: %w", err)
	case status.Exited() && status.ExitStatus() == 0:
		return nil
	}
	return &forkedExit{status: status}
}

// kill sends SIGKILL to the kernel, if it has not been reaped.
func (k *forked) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pidfd >= 0 {
		_ = unix.PidfdSendSignal(k.pidfd, unix.SIGKILL, nil, 0)
	}
}
