package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"golang.org/x/sys/unix"
)

// driver runs one session's container (sandbox.Driver). The container is
// created once; each kernel incarnation is a start of it.
type driver struct {
	r      *Runtime
	id     string
	kernel string // the first kernel's name (sandbox.KernelSpec); "" for the default
	name   string
	limits sandbox.Limits
	dirs   *sandbox.Dirs
	uid    int
	env    map[string]string // to create the container again; nil for an adopted one
	egress string            // host path of the egress proxy's socket, "" for none
	end    *deadline         // the sandbox's deadline file (see init.py)

	mu          sync.Mutex
	containerID string
	started     string               // when the current kernel's container started (its incarnation)
	run         *mainRun             // the container's current run, nil before the first
	ctxBind     bool                 // the container has the contexts' bind (sandbox.ContextsDir)
	egressed    bool                 // its kernels have an egress forwarder (the first kernel's)
	waits       []context.CancelFunc // end the waiters' ContainerWait
	wg          sync.WaitGroup       // waiter goroutines
}

// create creates the locked-down container.
func (d *driver) create(ctx context.Context, env map[string]string) error {
	cfg := d.r.cfg
	envList := make([]string, 0, len(env))
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	pids := int64(d.limits.Pids)
	hostPids := pids // the container's pids cgroup on the host
	if d.r.gvisor {
		// gVisor enforces pids itself (the nproc ulimit, in the sentry);
		// the host limit bounds the sentry's own threads, which grow with it.
		hostPids = gvisorHostPids(d.limits.Pids)
	}
	mem := int64(d.limits.MemoryMB) << 20
	secOpt := []string{"no-new-privileges"}
	if d.r.seccomp != "" {
		secOpt = append(secOpt, "seccomp="+d.r.seccomp)
	}
	// The sandbox, never the gateway, is the OOM killer's choice; within it
	// a command (a docker exec starts at the container's 500; the launcher
	// raises it to 1000) goes before a kernel.
	oomScore := 500
	cc := &container.Config{
		Image:           cfg.Image,
		Entrypoint:      initEntrypoint(), // PID 1: init.py, which ends the container at its deadline
		Cmd:             sandbox.KernelArgv("/usr/bin/python3", d.kernel, sandbox.ConnFile),
		User:            fmt.Sprintf("%d:%d", d.uid, d.uid),
		WorkingDir:      sandbox.WorkDir,
		Env:             envList,
		Hostname:        "glassroom",
		NetworkDisabled: true,
		Labels:          map[string]string{LabelManaged: "true", LabelInstance: cfg.Instance, LabelSession: d.id, LabelStateDir: cfg.StateDir},
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    secOpt,
		IpcMode:        "private",
		ShmSize:        64 << 20,
		OomScoreAdj:    oomScore,
		Runtime:        cfg.OCIRuntime,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=256m,mode=1777"},
		Binds: []string{
			d.dirs.IPC() + ":" + sandbox.IPCDir + ":rw",
			d.dirs.Work() + ":" + sandbox.WorkDir + ":rw",
			d.dirs.Work() + ":" + sandbox.WorkspaceAlias + ":rw",
			d.dirs.Contexts() + ":" + sandbox.ContextsDir + ":rw", // the gateway's 0711 tmpfs: only its entries are the sandbox's
			// The session's uid by name (sandbox.WriteIdentity): whoami,
			// a shell's prompt and getpwuid work.
			filepath.Join(d.dirs.Path(), "passwd") + ":/etc/passwd:ro",
			filepath.Join(d.dirs.Path(), "group") + ":/etc/group:ro",
			// The gateway's directory, read-only: the sandbox cannot move its deadline.
			d.end.dir + ":" + DeadlineDir + ":ro",
		},
		// The kernel's own stdout/stderr (not Jupyter output): bounded, so
		// the code cannot fill the host's disk through the engine's logs.
		LogConfig: container.LogConfig{Type: "json-file", Config: map[string]string{
			"max-size": strconv.Itoa(cfg.LogMaxBytes), "max-file": "1"}},
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem,
			NanoCPUs:   int64(d.limits.CPUs * 1e9),
			PidsLimit:  &hostPids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: int64(cfg.NoFile), Hard: int64(cfg.NoFile)},
				{Name: "nproc", Soft: pids, Hard: pids},
				{Name: "fsize", Soft: int64(cfg.FileSizeMB) << 20, Hard: int64(cfg.FileSizeMB) << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	if d.egress != "" { // read-only: the kernel can connect to the socket, not replace it
		hc.Binds = append(hc.Binds, filepath.Dir(d.egress)+":"+sandbox.EgressDir+":ro")
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	resp, err := d.r.cli.ContainerCreate(cctx, cc, hc, nil, nil, d.name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: docker: image %s not found: %w", sandbox.ErrUnavailable, cfg.Image, err)
		}
		return fmt.Errorf("%w: docker: create container: %w", sandbox.ErrUnavailable, err)
	}
	d.mu.Lock()
	d.containerID = resp.ID
	d.env = env
	d.ctxBind = true
	d.mu.Unlock()
	return nil
}

// Launch implements sandbox.Driver: it starts the container and a waiter
// that reports the exit. A container removed from outside is created
// again first (the workspace is on the host, so files survive).
func (d *driver) Launch(ctx context.Context, inc *sandbox.Incarnation) (sandbox.Process, error) {
	recreated := false
	for attempt := 0; ; attempt++ {
		d.mu.Lock()
		id, env := d.containerID, d.env
		d.mu.Unlock()
		// Wait is registered before the start so no exit is missed.
		proc := d.watch(id, inc)
		sctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
		err := d.r.cli.ContainerStart(sctx, id, container.StartOptions{})
		cancel()
		if err == nil {
			d.noteStart(ctx, id)
			return proc, nil
		}
		proc.stop() // its waiter may not end inc: that is the next container's
		if !recreated && d.removedFromOutside(ctx, id, err) {
			recreated = true
		} else {
			// An engine that just came back may still hold the previous
			// task of the container ("already exists") or not answer yet:
			// try again a few times, bounded by ctx.
			if attempt == startRetries && !recreated {
				// The engine keeps refusing this container (state left by an
				// unclean engine stop: "failed to start shim: file exists"):
				// replace it with a fresh one, files kept.
				recreated = true
				d.r.log.Warn().Err(err).Str("container", d.name).Msg("kernel container does not start; replacing it")
				if rerr := d.removeContainer(ctx, id); rerr != nil {
					return nil, fmt.Errorf("%w: docker: start container: %w", sandbox.ErrUnavailable, errors.Join(err, rerr))
				}
				if env == nil {
					env = sandbox.KernelEnv(sandbox.Spec{ID: d.id}, d.limits)
				}
				if err := d.create(ctx, env); err != nil {
					return nil, err
				}
				continue
			}
			if attempt >= startRetries {
				return nil, fmt.Errorf("%w: docker: start container: %w", sandbox.ErrUnavailable, err)
			}
			d.r.log.Info().Err(err).Str("container", d.name).Msg("kernel container did not start; trying again")
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: docker: start container: %w", sandbox.ErrUnavailable, err)
			case <-time.After(time.Duration(attempt+1) * 250 * time.Millisecond):
			}
			continue
		}
		d.r.log.Warn().Str("container", d.name).Msg("kernel container removed from outside; creating it again")
		if env == nil {
			env = sandbox.KernelEnv(sandbox.Spec{ID: d.id}, d.limits)
		}
		if err := d.create(ctx, env); err != nil {
			return nil, err
		}
	}
}

// removeContainer force-removes container id, bounded by CallTimeout.
func (d *driver) removeContainer(ctx context.Context, id string) error {
	rctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	if err := d.r.cli.ContainerRemove(rctx, id, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove %s: %w", d.name, err)
	}
	return nil
}

// startRetries is how many times a container start that failed is tried
// again (250 ms, 500 ms, ... apart).
const startRetries = 4

// removedFromOutside reports whether the container that failed to start
// with err was removed (or is being removed: docker rm -f), waiting,
// bounded, until it is gone so its name is free again.
func (d *driver) removedFromOutside(ctx context.Context, id string, err error) bool {
	if cerrdefs.IsNotFound(err) {
		return true
	}
	for try := 0; try < 50; try++ {
		ictx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
		info, ierr := d.r.cli.ContainerInspect(ictx, id)
		cancel()
		switch {
		case cerrdefs.IsNotFound(ierr):
			return true
		case ierr != nil || info.State == nil || (info.State.Status != "removing" && !info.State.Dead):
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// watch starts the waiter of container id's next exit: it calls inc.Exit
// with the reason. While the engine cannot be reached (dockerd restarting
// with live-restore), it waits again instead of declaring the kernel dead,
// as long as the container runs.
func (d *driver) watch(id string, inc *sandbox.Incarnation) *process {
	wctx, wcancel := context.WithCancel(context.Background())
	d.mu.Lock()
	d.waits = append(d.waits, wcancel)
	d.mu.Unlock()
	// The one Docker call without a deadline: it lasts as long as the kernel.
	waitC, errC := d.r.cli.ContainerWait(wctx, id, container.WaitConditionNextExit)
	gate := &exitGate{inc: inc}
	run := &mainRun{inc: inc}
	d.mu.Lock()
	d.run = run
	d.mu.Unlock()
	d.wg.Add(1)
	go func() { // owned by the driver; ends when the container exits or the wait is cancelled
		defer d.wg.Done()
		defer wcancel()
		for {
			select {
			case res := <-waitC:
				gate.exit(d.exitReason(res.StatusCode))
				return
			case err := <-errC:
				if wctx.Err() != nil {
					gate.exit("sandbox closed")
					return
				}
				if reason, gone := d.stillRunning(wctx, id); gone {
					gate.exit(reason)
					return
				}
				d.r.log.Info().Err(err).Str("container", d.name).Msg("engine connection lost; watching the kernel again")
				waitC, errC = d.r.cli.ContainerWait(wctx, id, container.WaitConditionNextExit)
			}
		}
	}()
	return &process{d: d, id: id, run: run, stop: func() { gate.close(); wcancel() }}
}

// currentRun returns the container's current run (its first kernel's
// incarnation), or nil before the first.
func (d *driver) currentRun() *mainRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.run
}

// contextsBound reports whether the container has the contexts' bind.
func (d *driver) contextsBound() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ctxBind
}

// egressOn reports whether the container's kernels have a network (the
// first kernel's egress forwarder).
func (d *driver) egressOn() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.egressed
}

// stillRunning waits (up to a minute, retrying) for the engine to answer
// and reports whether the container is gone or stopped, with why.
func (d *driver) stillRunning(ctx context.Context, id string) (reason string, gone bool) {
	for try := 0; try < 30; try++ {
		ictx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
		info, err := d.r.cli.ContainerInspect(ictx, id)
		cancel()
		switch {
		case cerrdefs.IsNotFound(err):
			return "kernel container removed", true
		case err == nil && info.State != nil && info.State.Running:
			return "", false
		case err == nil:
			return d.exitReason(int64(info.State.ExitCode)), true
		}
		select {
		case <-ctx.Done():
			return "sandbox closed", true
		case <-time.After(2 * time.Second):
		}
	}
	return "the container engine did not answer for a minute", true
}

// noteStart records when the container's current kernel started: its
// incarnation.
func (d *driver) noteStart(ctx context.Context, id string) {
	ictx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	if info, err := d.r.cli.ContainerInspect(ictx, id); err == nil && info.State != nil {
		d.mu.Lock()
		d.started = info.State.StartedAt
		d.mu.Unlock()
	}
}

// driverState is the docker part of sandbox.State.
type driverState struct {
	Container string `json:"container"`
	Image     string `json:"image"`
	Started   string `json:"started"`
}

// State implements sandbox.DriverStater.
func (d *driver) State() (json.RawMessage, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, _ := json.Marshal(driverState{Container: d.containerID, Image: d.r.cfg.Image, Started: d.started})
	return b, d.started
}

// Freeze implements sandbox.DriverFreezer: docker pause (the cgroup
// freezer; gVisor stops its sandbox).
func (d *driver) Freeze(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	if err := d.r.cli.ContainerPause(ctx, d.container()); err != nil {
		return fmt.Errorf("docker: pause %s: %w", d.name, err)
	}
	return nil
}

// Thaw implements sandbox.DriverFreezer: docker unpause.
func (d *driver) Thaw(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	if err := d.r.cli.ContainerUnpause(ctx, d.container()); err != nil {
		return fmt.Errorf("docker: unpause %s: %w", d.name, err)
	}
	return nil
}

func (d *driver) container() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.containerID
}

// Detach implements sandbox.DriverDetacher: stop watching, leave the
// container running until its released deadline (min(its session's
// end, now + OrphanGrace)) unless a gateway adopts it first.
func (d *driver) Detach(context.Context) error {
	d.r.deadlines.remove(d.id)
	err := d.end.release(time.Now())
	d.mu.Lock()
	for _, stop := range d.waits {
		stop()
	}
	d.mu.Unlock()
	d.wg.Wait()
	if err != nil {
		return fmt.Errorf("docker: detach %s: %w", d.name, err)
	}
	return nil
}

// exitReason inspects the exited container and says why it ended: removed
// from outside, the OOM killer, a signal (named), or the exit code.
func (d *driver) exitReason(code int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), d.r.cfg.CallTimeout)
	defer cancel()
	info, err := d.r.cli.ContainerInspect(ctx, d.container())
	switch {
	case cerrdefs.IsNotFound(err) || (err == nil && info.State != nil && info.State.Status == "removing"):
		return "its container was removed from outside"
	case err == nil && info.State != nil && info.State.OOMKilled:
		return "OOMKilled: the kernel exceeded its memory limit of " + strconv.Itoa(d.limits.MemoryMB) + " MB"
	}
	if d.r.gvisor && code == gvisorSentryExit {
		return gvisorSentryReason
	}
	if code == DeadlineExit && !d.end.current().After(time.Now()) {
		return deadlineReason
	}
	return exitCodeReason(code)
}

// deadlineReason is the exit reason of a container its init ended at its
// deadline.
const deadlineReason = "exit code 124: the sandbox reached its deadline (no gateway renewed it) and ended itself"

// exitCodeReason explains a container's exit code; above 128 it names the
// signal that ended its first process.
func exitCodeReason(code int64) string {
	reason := "exit code " + strconv.FormatInt(code, 10)
	if code == 0 {
		return reason + ": the kernel exited (the code called exit(), or its container was stopped or restarted from outside)"
	}
	if code <= 128 || code > 128+64 {
		return reason
	}
	sig := syscall.Signal(code - 128)
	reason += ": killed by " + unix.SignalName(sig)
	if sig == syscall.SIGTERM {
		reason += " (its container was stopped or restarted from outside, or its engine stopped it)"
	}
	return reason
}

// Destroy implements sandbox.Driver: it force-removes the container, even
// with a done ctx (one retry), ends the waits and waits for the waiters.
func (d *driver) Destroy(ctx context.Context) error {
	d.r.deadlines.remove(d.id)
	d.mu.Lock()
	id := d.containerID
	d.mu.Unlock()
	var err error
	if id != "" {
		for try := 0; try < 2; try++ {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.r.cfg.CallTimeout)
			err = d.r.cli.ContainerRemove(cctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
			cancel()
			if err == nil || cerrdefs.IsNotFound(err) {
				err = nil
				break
			}
		}
	}
	d.mu.Lock()
	for _, stop := range d.waits {
		stop() // if removal failed, reconcile removes the container later
	}
	d.mu.Unlock()
	d.wg.Wait()
	if err != nil {
		return fmt.Errorf("docker: remove container %s: %w", d.name, err)
	}
	return nil
}

// process is one start of the container (sandbox.Process).
// exitGate lets a waiter end its incarnation only until the waiter is
// disowned (a start that failed): a late waiter never ends the next
// container's incarnation.
type exitGate struct {
	inc *sandbox.Incarnation
	mu  sync.Mutex
	off bool
}

func (g *exitGate) exit(reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.off {
		g.inc.Exit(reason)
	}
}

func (g *exitGate) close() {
	g.mu.Lock()
	g.off = true
	g.mu.Unlock()
}

type process struct {
	d    *driver
	id   string
	run  *mainRun           // nil for a container adopted stopped
	stop context.CancelFunc // ends its waiter
}

// Kill implements sandbox.Process. A container that is not running
// already (a conflict) is fine.
func (p *process) Kill(ctx context.Context) error {
	if p.run != nil {
		p.run.killed.Store(true) // for its contexts: a restart (or a close) ended it
	}
	kctx, cancel := context.WithTimeout(ctx, p.d.r.cfg.CallTimeout)
	defer cancel()
	err := p.d.r.cli.ContainerKill(kctx, p.id, "KILL")
	if err != nil && !cerrdefs.IsConflict(err) && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: kill %s: %w", p.d.name, err)
	}
	return nil
}

// Diagnostics implements sandbox.Process: the last lines of the
// container's output.
func (p *process) Diagnostics() string {
	ctx, cancel := context.WithTimeout(context.Background(), p.d.r.cfg.CallTimeout)
	defer cancel()
	rc, err := p.d.r.cli.ContainerLogs(ctx, p.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf := make([]byte, 8<<10)
	n, err := io.ReadFull(rc, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return ""
	}
	return strings.ToValidUTF8(string(buf[:n]), "?")
}

// Usage implements sandbox.DriverUsage: the container's cgroup, found
// through its first process (the gateway runs on the engine's host; where
// it cannot see the cgroup, ErrNoUsage).
func (d *driver) Usage(ctx context.Context) (sandbox.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	info, err := d.r.cli.ContainerInspect(ctx, d.container())
	if err != nil {
		return sandbox.Usage{}, fmt.Errorf("docker: usage of %s: %w", d.name, err)
	}
	if info.State == nil || info.State.Pid <= 0 {
		return sandbox.Usage{}, sandbox.ErrNoUsage
	}
	return sandbox.CgroupUsageOfPid(info.State.Pid)
}
