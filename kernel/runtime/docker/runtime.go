package docker

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// defaultSeccomp is glassroom's seccomp profile for kernel containers.
//
//go:embed seccomp.json
var defaultSeccomp string

// Runtime starts kernels in containers. It is safe for concurrent use.
type Runtime struct {
	cfg     Config
	log     zerolog.Logger
	cli     engine
	closer  func() error
	root    bool
	seccomp string // the profile's JSON, or "" for Docker's default
	gvisor  bool   // the OCI runtime is gVisor (runsc)
	slots   *sandbox.Slots
	kernels []sandbox.KernelSpec // what the image holds (LabelKernels), read once by New

	live      sandbox.LiveSet // session ids with a sandbox, including ones starting
	deadlines deadlines       // the held sandboxes' deadlines, which Run renews
}

// New locks the state directory for this runtime alone (see
// sandbox.LockStateDir: a *sandbox.StateDirInUseError when another
// gateway's runtime holds it), claims its uid range host-wide (see
// claimUIDs: a *sandbox.UIDRangeInUseError when another live gateway's
// overlaps it), connects to the Docker engine (DOCKER_HOST
// or the default socket), checks that the engine has the OCI runtime (a
// gVisor one with --oci-seccomp, else ErrSeccompNotEnforced) and the
// image, reads which kernels the image holds (LabelKernels; see
// Installed), and removes this instance's orphaned containers and directories
// (see Reconcile). The caller must Close the runtime.
func New(ctx context.Context, cfg Config, log zerolog.Logger) (_ *Runtime, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	lock, err := sandbox.LockStateDir(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	uids, err := claimUIDs(cfg, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			uids.Release()
		}
	}()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: docker: client: %w", sandbox.ErrUnavailable, err)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	if _, err := cli.Ping(cctx); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: docker: engine not reachable: %w", sandbox.ErrUnavailable, err)
	}
	r, err := newRuntime(ctx, cfg, cli, log)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	r.closer = func() error {
		err := cli.Close()
		uids.Release()
		lock.Release()
		return err
	}
	return r, nil
}

// newRuntime builds the runtime over any engine (tests pass a fake). The
// caller holds the state directory's lock.
func newRuntime(ctx context.Context, cfg Config, cli engine, log zerolog.Logger) (*Runtime, error) {
	r := &Runtime{cfg: cfg, log: log.With().Str("runtime", "docker").Logger(), cli: cli, closer: func() error { return nil },
		root: os.Geteuid() == 0, slots: sandbox.NewSlots(cfg.MaxSandboxes)}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	info, err := cli.Info(cctx)
	if err != nil {
		return nil, fmt.Errorf("%w: docker: engine info: %w", sandbox.ErrUnavailable, err)
	}
	if r.gvisor, err = checkOCIRuntime(info, cfg.OCIRuntime); err != nil {
		return nil, err
	}
	switch cfg.SeccompProfile {
	case "":
		r.seccomp = defaultSeccomp
	case SeccompDockerDefault:
		if r.gvisor {
			return nil, fmt.Errorf("docker: config: seccomp profile %s cannot be used with gVisor (runtime %q): %w", SeccompDockerDefault, cfg.OCIRuntime, errGVisorErrnoRet)
		}
	default:
		b, err := os.ReadFile(cfg.SeccompProfile)
		if err != nil {
			return nil, fmt.Errorf("docker: seccomp profile: %w", err)
		}
		r.seccomp = string(b)
	}
	if r.gvisor {
		if r.seccomp, err = gvisorProfile(r.seccomp); err != nil {
			return nil, fmt.Errorf("docker: seccomp profile %s: %w", cfg.SeccompProfile, err)
		}
	}
	img, err := cli.ImageInspect(cctx, cfg.Image)
	if err != nil {
		return nil, fmt.Errorf("%w: docker: kernel image %s: %w (build it with `make image`)", sandbox.ErrUnavailable, cfg.Image, err)
	}
	var unknown []string
	r.kernels, unknown = imageKernels(img)
	if len(unknown) > 0 {
		r.log.Warn().Strs("names", unknown).Str("image", cfg.Image).Msg("the image's " + LabelKernels + " label names kernels glassroom does not know; ignored")
	}
	if !cfg.Adopting {
		if err := r.Reconcile(ctx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// StateDir returns the directory of the sandboxes' state (where the
// gateway keeps its session store too).
func (r *Runtime) StateDir() string { return r.cfg.StateDir }

// Name returns "docker".
func (r *Runtime) Name() string { return "docker" }

// Close releases the engine connection and the state directory (for the
// next gateway). Sandboxes must be closed (or detached) first.
func (r *Runtime) Close() error { return r.closer() }

// Run reconciles periodically, and renews the deadlines of the sandboxes
// this gateway holds (a quarter of OrphanGrace apart, within 250 ms and 5
// min), until ctx ends; it returns once both loops have.
func (r *Runtime) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by Run; ends with ctx
		defer wg.Done()
		_ = sandbox.Every(ctx, renewInterval(r.cfg.OrphanGrace), r.renewDeadlines)
	}()
	err := sandbox.Every(ctx, r.cfg.ReconcileInterval, func(ctx context.Context) {
		if err := r.Reconcile(ctx); err != nil {
			r.log.Warn().Err(err).Msg("reconcile failed")
		}
	})
	wg.Wait()
	return err
}

// ContainerName is the deterministic name of a session's container.
func (r *Runtime) ContainerName(sessionID string) string {
	return "glassroom-" + r.cfg.Instance + "-" + sessionID
}

// Start creates and starts the session's container and waits for the
// kernel's sockets. A Spec.Kernel the image does not hold (Installed) is
// refused with a *sandbox.SpecError. On failure, and on a panic,
// everything made so far is undone. The caller must Close the sandbox.
func (r *Runtime) Start(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := r.checkKernel(spec.Kernel); err != nil {
		return nil, err
	}
	if err := r.live.Claim(spec.ID); err != nil {
		return nil, err
	}
	limits := r.cfg.Limits(spec.Limits)
	if r.gvisor {
		limits = gvisorLimits(limits)
	}
	b := sandbox.NewBase(sandbox.BaseConfig{ID: spec.ID, Limits: limits, SandboxIPC: sandbox.IPCDir, StartTimeout: r.cfg.StartTimeout})
	defer b.CloseOnFailure(ctx, &err)
	b.OnClose("forget session", func() error { r.live.Forget(spec.ID); return nil })
	slot, err := r.slots.Take()
	if err != nil {
		return nil, err
	}
	b.OnClose("release slot", func() error { r.slots.Release(slot); return nil })
	uid := r.cfg.UIDBase + slot
	b.SetOwner(uid, uid)
	dirs, err := sandbox.CreateDirs(r.cfg.StateDir, spec.ID, uid, uid, limits.WorkspaceMB, r.root)
	if err != nil {
		return nil, err
	}
	b.OnClose("remove session directory", dirs.Remove)
	if len(spec.Volumes) > 0 {
		if !r.root {
			return nil, &sandbox.SpecError{Reason: "volumes need a root gateway"}
		}
		if err := dirs.BindVolumes(spec.Volumes); err != nil {
			return nil, err
		}
	}
	if err := sandbox.WriteIdentity(dirs.Path(), uid, uid); err != nil {
		return nil, err
	}
	end, err := newDeadline(dirs.Path(), r.cfg.OrphanGrace, time.Now())
	if err != nil {
		return nil, err
	}
	d := &driver{r: r, id: spec.ID, kernel: spec.Kernel, name: r.ContainerName(spec.ID), limits: limits, dirs: dirs, uid: uid, egress: spec.EgressSocket, egressed: spec.EgressSocket != "", end: end}
	b.Use(dirs, d)
	r.deadlines.add(spec.ID, end) // Destroy (or Detach) takes it out
	if err := d.create(ctx, sandbox.KernelEnv(spec, limits)); err != nil {
		return nil, err
	}
	if err := b.Launch(ctx); err != nil {
		return nil, err
	}
	return newSandbox(b, d), nil
}

// Adopt implements sandbox.Adopter: it takes over the container a previous
// gateway of this instance and state directory started for st. The
// container must carry this instance's labels (and, if it has one, this
// state directory's) and run this runtime's image; a stopped one is started
// again (a fresh kernel: the sandbox's State then has a new Incarnation).
// On failure everything is undone, the container removed.
func (r *Runtime) Adopt(ctx context.Context, st sandbox.State) (_ sandbox.Sandbox, err error) {
	if !sandbox.IDPattern.MatchString(st.ID) {
		return nil, fmt.Errorf("docker: adopt: bad id %q", st.ID)
	}
	var ds driverState
	if err := json.Unmarshal(st.Driver, &ds); err != nil || ds.Container == "" {
		return nil, fmt.Errorf("docker: adopt %s: no container in the stored state", st.ID)
	}
	if err := r.live.Claim(st.ID); err != nil {
		return nil, err
	}
	b := sandbox.NewBase(sandbox.BaseConfig{ID: st.ID, Limits: st.Limits, SandboxIPC: sandbox.IPCDir, StartTimeout: r.cfg.StartTimeout})
	defer b.CloseOnFailure(ctx, &err)
	b.OnClose("forget session", func() error { r.live.Forget(st.ID); return nil })
	slot := st.UID - r.cfg.UIDBase
	if !r.slots.Mark(slot) {
		return nil, fmt.Errorf("docker: adopt %s: uid %d is not free", st.ID, st.UID)
	}
	b.OnClose("release slot", func() error { r.slots.Release(slot); return nil })
	b.SetOwner(st.UID, st.GID)
	dirs, err := sandbox.OpenDirs(r.cfg.StateDir, st.ID, st.UID, st.GID)
	if err != nil {
		return nil, err
	}
	b.OnClose("remove session directory", dirs.Remove)
	// Held again before anything else: a container whose released deadline
	// is close must not end while it is adopted.
	end, err := newDeadline(dirs.Path(), r.cfg.OrphanGrace, time.Now())
	if err != nil {
		return nil, err
	}
	d := &driver{r: r, id: st.ID, name: r.ContainerName(st.ID), limits: st.Limits, dirs: dirs, uid: st.UID, containerID: ds.Container, started: ds.Started, end: end}
	b.Use(dirs, d)
	r.deadlines.add(st.ID, end)
	ictx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	info, err := r.cli.ContainerInspect(ictx, ds.Container)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("docker: adopt %s: %w", st.ID, err)
	}
	switch {
	case info.Config == nil || info.State == nil:
		return nil, fmt.Errorf("docker: adopt %s: the engine describes no container", st.ID)
	case info.Config.Labels[LabelManaged] != "true" || info.Config.Labels[LabelInstance] != r.cfg.Instance || info.Config.Labels[LabelSession] != st.ID:
		return nil, fmt.Errorf("docker: adopt %s: the container's labels do not match", st.ID)
	case info.Config.Labels[LabelStateDir] != "" && info.Config.Labels[LabelStateDir] != r.cfg.StateDir:
		return nil, fmt.Errorf("docker: adopt %s: the container belongs to the gateway of state dir %s", st.ID, info.Config.Labels[LabelStateDir])
	case info.Config.Image != r.cfg.Image:
		return nil, fmt.Errorf("docker: adopt %s: the container runs %s, this gateway %s", st.ID, info.Config.Image, r.cfg.Image)
	}
	d.ctxBind = hasMount(info.Mounts, sandbox.ContextsDir)
	d.egressed = hasEnv(info.Config.Env, sandbox.EgressSocketEnv)
	if info.State.Paused { // frozen when its gateway died: the kernel must answer
		uctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		err := r.cli.ContainerUnpause(uctx, ds.Container)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("docker: adopt %s: unpause: %w", st.ID, err)
		}
	}
	inc := sandbox.NewIncarnation(st.Conn)
	if !info.State.Running {
		if info.State.ExitCode == DeadlineExit {
			inc.Exit("stopped while no gateway watched it: it reached its deadline and ended itself")
		} else {
			inc.Exit("stopped while no gateway watched it")
		}
		b.Attach(inc, &process{d: d, id: ds.Container, stop: func() {}})
		if err := b.Restart(ctx); err != nil {
			return nil, err
		}
		return newSandbox(b, d), nil
	}
	b.Attach(inc, d.watch(ds.Container, inc))
	d.mu.Lock()
	d.started = info.State.StartedAt
	d.mu.Unlock()
	return newSandbox(b, d), nil
}

// hasMount reports whether mounts has one at dest.
func hasMount(mounts []container.MountPoint, dest string) bool {
	for _, m := range mounts {
		if m.Destination == dest {
			return true
		}
	}
	return false
}

// hasEnv reports whether env sets name to a value that is not empty.
func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok && v != "" {
			return true
		}
	}
	return false
}

// Interface guards: the optional capabilities of the Docker runtime and its
// sandboxes (a sandbox.Durable: a Freezer and Persistent, whose driver
// gives its State and Detach; Expiring; and a ContextStarter), exercised by
// runtimetest.Capabilities and runtimetest.Contexts.
var (
	_ sandbox.KernelLister   = (*Runtime)(nil)
	_ sandbox.StateDirHolder = (*Runtime)(nil)
	_ sandbox.Adopter        = (*Runtime)(nil)
	_ sandbox.Persistent     = sandbox.Durable{}
	_ sandbox.Persistent     = (*dockerSandbox)(nil)
	_ sandbox.Freezer        = (*dockerSandbox)(nil)
	_ sandbox.ContextStarter = (*dockerSandbox)(nil)
	_ sandbox.Expiring       = (*dockerSandbox)(nil)
	_ sandbox.DriverStater   = (*driver)(nil)
	_ sandbox.DriverDetacher = (*driver)(nil)
	_ sandbox.DriverFreezer  = (*driver)(nil) // Freeze: docker pause
	_ sandbox.DriverUsage    = (*driver)(nil) // Usage: the container's cgroup
)
