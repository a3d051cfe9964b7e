package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/images/python"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// Config configures the local runtime. Zero fields take defaults.
type Config struct {
	// Common holds what every runtime shares. StateDir defaults to
	// /run/glassroom/local as root, else $TMPDIR/glassroom-local-<uid>;
	// UIDBase to 200000.
	sandbox.Common
	// Bwrap is the bubblewrap binary (default: "bwrap" on PATH).
	Bwrap string
	// Python is the interpreter with ipykernel (default /usr/bin/python3).
	Python string
	// InsecureNoSandbox runs kernels without bwrap. Never use it for
	// untrusted code; every kernel start logs a warning.
	InsecureNoSandbox bool
	// InsecureNoSeccomp lets the runtime start kernels on an architecture
	// it has no seccomp filter for (only amd64 and arm64 have one); without
	// it New refuses such a machine with ErrNoSeccomp. It changes nothing
	// where a filter exists. Never use it for untrusted code; every kernel
	// start logs a warning.
	InsecureNoSeccomp bool
	// Arch is the GOARCH whose system call numbers the seccomp filter
	// uses (default: runtime.GOARCH, the machine's). Tests set it; the
	// filter of another architecture kills every kernel at its first call.
	Arch string
	// FreezeTimeout bounds each freeze of a sandbox's cgroup (pausing an
	// idle kernel) and each thaw (5 s). A freeze that has not completed by
	// then is undone (the sandbox thawed again) and fails: the kernel stays
	// running.
	FreezeTimeout time.Duration
	// FontCache is a directory of matplotlib font lists
	// (fontlist-v*.json) built on this host (scripts/install-deps.sh
	// builds DefaultFontCache as root). It is bound read-only into every
	// sandbox, and each kernel start seeds its fresh, private matplotlib
	// directory from it instead of scanning the host's fonts again (about
	// 0.6 s of the first plot with Debian's fonts). Default:
	// DefaultFontCache when it exists; a directory that does not exist is
	// ignored.
	FontCache string
	// Fork is the fork server: python3 kernels forked from a template
	// that has loaded ipykernel and Fork.Preload (see forkserver.go and
	// doc.go). It needs root and bubblewrap; other kernels, and a session
	// whose environment or memory limit the template cannot serve, are
	// exec'd.
	Fork ForkConfig
}

// DefaultFontCache is where scripts/install-deps.sh writes matplotlib's
// font list for the local runtime.
const DefaultFontCache = "/var/cache/glassroom/matplotlib"

func (c Config) withDefaults() Config {
	c.Common = c.Common.WithDefaults(DefaultStateDir(), DefaultUIDBase)
	if c.Python == "" {
		c.Python = "/usr/bin/python3"
	}
	if c.Bwrap == "" {
		c.Bwrap = "bwrap"
	}
	if c.Arch == "" {
		c.Arch = runtime.GOARCH
	}
	if c.FreezeTimeout == 0 {
		c.FreezeTimeout = 5 * time.Second
	}
	if c.FontCache == "" {
		c.FontCache = DefaultFontCache
	}
	if c.Fork.ReadyTimeout == 0 {
		c.Fork.ReadyTimeout = 60 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Common.Validate(); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if !filepath.IsAbs(c.Python) {
		return errors.New("local: config: python must be an absolute path")
	}
	if c.Fork.ReadyTimeout < 0 {
		return fmt.Errorf("local: config: negative fork ready timeout %v", c.Fork.ReadyTimeout)
	}
	if c.FreezeTimeout < 0 {
		return fmt.Errorf("local: config: negative freeze timeout %v", c.FreezeTimeout)
	}
	if _, ok := seccompArchOf(c.Arch); !ok && !c.InsecureNoSeccomp {
		return fmt.Errorf("%w (GOARCH=%s)", ErrNoSeccomp, c.Arch)
	}
	return nil
}

// ErrNoBwrap is returned by Start when bubblewrap is missing and the
// insecure mode is off.
var ErrNoBwrap = errors.New("local: bubblewrap (bwrap) not found: install the bubblewrap package, or (unsafe) enable InsecureNoSandbox")

// Runtime starts sandboxed kernels on this machine. It is safe for
// concurrent use.
type Runtime struct {
	cfg     Config
	log     zerolog.Logger
	root    bool
	bwrap   string // resolved path, "" when missing
	slots   *sandbox.Slots
	cgroups cgroupLayout // zero when cgroups are unavailable (not root)
	lock    *sandbox.StateLock
	uids    *sandbox.UIDClaim // nil when not root: sandboxes then run as the gateway's uid
	seccomp []byte            // the filter bwrap installs; nil only with InsecureNoSeccomp
	fork    *forkServer       // nil: every kernel is exec'd
	// readFreezerState is each cgroup's readState (nil: os.ReadFile); set
	// by tests before Start.
	readFreezerState func(name string) ([]byte, error)
}

// DefaultUIDBase is the UIDBase of a Config that names none.
const DefaultUIDBase = 200000

// DefaultStateDir is the state directory of a Config that names none:
// /run/glassroom/local as root, else $TMPDIR/glassroom-local-<uid>.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/glassroom/local"
	}
	return filepath.Join(os.TempDir(), "glassroom-local-"+strconv.Itoa(os.Geteuid()))
}

// New returns a runtime. It locks the state directory for this runtime
// alone (see sandbox.LockStateDir: a *sandbox.StateDirInUseError when
// another gateway's runtime holds it); as root, it claims its sandboxes'
// uid range host-wide (see sandbox.ClaimUIDRange: a
// *sandbox.UIDRangeInUseError when another live gateway's overlaps it;
// not as root, sandboxes run as the gateway's own uid and nothing is
// claimed). Then it removes the directories and cgroups of sandboxes a
// previous gateway left behind (their kernels died with it). The caller
// must Close the runtime.
func New(cfg Config, log zerolog.Logger) (_ *Runtime, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Runtime{cfg: cfg, log: log.With().Str("runtime", "local").Logger(), root: os.Geteuid() == 0, slots: sandbox.NewSlots(cfg.MaxSandboxes)}
	filter, err := seccompFilter(cfg.Arch)
	switch {
	case errors.Is(err, ErrNoSeccomp): // Validate let it through: InsecureNoSeccomp
		r.log.Warn().Str("arch", cfg.Arch).Msg("INSECURE: no seccomp filter for this architecture (InsecureNoSeccomp): kernels run without a system call filter")
	case err != nil:
		return nil, err
	}
	r.seccomp = filter
	if p, err := exec.LookPath(cfg.Bwrap); err == nil {
		r.bwrap = p
	}
	r.lock, err = sandbox.LockStateDir(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	defer func() {
		if err != nil {
			r.lock.Release()
		}
	}()
	if r.root {
		if r.uids, err = cfg.ClaimUIDs(); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		defer func() {
			if err != nil {
				r.uids.Release()
			}
		}()
		if err := checkTraversable(cfg.StateDir); err != nil {
			return nil, err
		}
		r.cgroups = detectCgroups()
		r.cgroups.owner = strconv.Itoa(cfg.UIDBase)
		if !r.cgroups.usable() {
			r.log.Warn().Msg("no usable cgroup hierarchy: only per-process rlimits bound a sandbox's memory, and the cpus limit is not enforced")
		}
	} else {
		r.log.Warn().Msg("not running as root: sandboxes share the gateway's uid (RLIMIT_NPROC is shared), workspaces have no size limit, and no cgroup bounds memory or CPU")
	}
	if err := r.writeShims(); err != nil {
		return nil, err
	}
	r.reconcile()
	if r.root && r.bwrap != "" && r.seccomp != nil && !cfg.Fork.Disabled {
		env := sandbox.KernelEnv(sandbox.Spec{ID: "template"}, cfg.Limits(sandbox.Limits{}))
		if r.fork, err = newForkServer(cfg, env, r.log); err != nil {
			return nil, err
		}
		r.fork.prestart()
	}
	return r, nil
}

// writeShims writes what the sandboxes find at sandbox.ShimDir (the
// image's sudo, which the host's /usr may lack) into the state dir's
// sandbox.ShimStateDir, which bwrapArgs binds read-only.
func (r *Runtime) writeShims() error {
	dir := filepath.Join(r.cfg.StateDir, sandbox.ShimStateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("local: shims: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("local: shims: %w", err)
	}
	sudo := filepath.Join(dir, "sudo")
	if err := os.WriteFile(sudo, []byte(python.SudoShim()), 0o755); err != nil {
		return fmt.Errorf("local: shims: %w", err)
	}
	if err := os.Chmod(sudo, 0o755); err != nil { // a file left by an older gateway keeps its mode otherwise
		return fmt.Errorf("local: shims: %w", err)
	}
	return nil
}

// checkTraversable makes sure unprivileged sandbox uids can reach dir: bwrap
// opens its bind-mount sources as the sandbox's host uid.
func checkTraversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("local: state dir: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("local: state dir %s: %s is not searchable by other users (mode %v); sandbox uids need o+x on every parent", dir, d, st.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// StateDir returns the directory of the sandboxes' state (where the
// gateway keeps its session store too).
func (r *Runtime) StateDir() string { return r.cfg.StateDir }

// Name returns "local".
func (r *Runtime) Name() string { return "local" }

// Close releases the uid range and the state directory for the next
// gateway. Sandboxes must be closed first. Later calls do nothing.
func (r *Runtime) Close() error {
	if r.fork != nil {
		r.fork.Close()
	}
	r.uids.Release()
	r.lock.Release()
	return nil
}

// reconcile removes leftover session directories and cgroups. It runs
// while this runtime holds the state directory's lock, so no live gateway
// owns them; as a second line of defence it leaves alone the directory
// of a sandbox whose kernel is still running (see kernelAlive).
func (r *Runtime) reconcile() {
	ids, err := sandbox.SessionDirs(r.cfg.StateDir)
	if err != nil {
		r.log.Warn().Err(err).Msg("reconcile")
		return
	}
	for _, id := range ids {
		dir := filepath.Join(r.cfg.StateDir, id)
		if kernelAlive(dir) {
			r.log.Warn().Str("dir", dir).Msg("leaving an unowned sandbox directory alone: its kernel is still running")
			continue
		}
		r.log.Info().Str("dir", dir).Msg("removing orphaned sandbox directory")
		if err := sandbox.RemoveDir(dir); err != nil {
			r.log.Warn().Err(err).Msg("removing orphaned sandbox directory failed")
		}
		r.cgroups.remove(id)
	}
}

// Start creates a sandbox for spec and starts its kernel. It blocks until
// the kernel's sockets exist (or ctx ends, or StartTimeout passes). On
// failure, and on a panic, everything made so far is undone. The caller
// must Close the returned sandbox.
func (r *Runtime) Start(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkKernel(spec.Kernel); err != nil {
		return nil, err
	}
	if r.bwrap == "" && !r.cfg.InsecureNoSandbox {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, ErrNoBwrap)
	}
	limits := r.cfg.Limits(spec.Limits)
	ipc := sandbox.IPCDir
	if r.bwrap == "" {
		ipc = "" // insecure mode: the kernel sees host paths
	}
	b := sandbox.NewBase(sandbox.BaseConfig{ID: spec.ID, Limits: limits, SandboxIPC: ipc, StartTimeout: r.cfg.StartTimeout, FreezeTimeout: r.cfg.FreezeTimeout})
	defer b.CloseOnFailure(ctx, &err)
	slot, err := r.slots.Take()
	if err != nil {
		return nil, err
	}
	b.OnClose("release slot", func() error { r.slots.Release(slot); return nil })
	uid, gid := os.Geteuid(), os.Getegid()
	if r.root {
		uid, gid = r.cfg.UIDBase+slot, r.cfg.UIDBase+slot
	}
	b.SetOwner(uid, gid)
	dirs, err := sandbox.CreateDirs(r.cfg.StateDir, spec.ID, uid, gid, limits.WorkspaceMB, r.root)
	if err != nil {
		return nil, err
	}
	b.OnClose("remove session directory", dirs.Remove)
	if len(spec.Volumes) > 0 {
		if !r.root || r.bwrap == "" {
			return nil, &sandbox.SpecError{Reason: "volumes need a root gateway with bubblewrap"}
		}
		if err := dirs.BindVolumes(spec.Volumes); err != nil {
			return nil, err
		}
	}
	if err := sandbox.WriteIdentity(dirs.Path(), 1000, 1000); err != nil { // bwrap maps the uid to 1000 inside
		return nil, err
	}
	d := &driver{r: r, id: spec.ID, kernel: spec.Kernel, env: sandbox.KernelEnv(spec, limits), limits: limits, dirs: dirs, uid: uid, gid: gid, egress: spec.EgressSocket}
	if r.root && r.bwrap != "" {
		d.netns = &sharedNetns{}
	}
	if r.root && r.cgroups.usable() {
		cg, err := r.cgroups.create(spec.ID, limits, uid)
		if err != nil {
			return nil, fmt.Errorf("%w: local: cgroup: %w", sandbox.ErrUnavailable, err)
		}
		b.OnClose("remove cgroup", func() error { cg.remove(); return nil })
		cg.readState = r.readFreezerState
		d.cg = cg
	}
	if needsAddressSpace(spec.Kernel) && d.cg == nil {
		r.log.Warn().Str("session", spec.ID).Str("kernel", spec.Kernel).Msg("no cgroup bounds this kernel's memory, and V8 cannot run under an address-space limit: its memory is not bounded")
	}
	b.Use(dirs, d)
	if err := b.Launch(ctx); err != nil {
		return nil, err
	}
	return &localSandbox{Base: b, d: d, ctxs: sandbox.NewContexts(b)}, nil
}

// Interface guards: the optional capabilities of the local runtime and its
// sandboxes (a Base: a Freezer, not Persistent, since a local kernel dies
// with the gateway; and a ContextStarter), exercised by
// runtimetest.Capabilities and runtimetest.Contexts.
var (
	_ sandbox.StateDirHolder = (*Runtime)(nil)
	_ sandbox.KernelLister   = (*Runtime)(nil)
	_ sandbox.DriverFreezer  = (*driver)(nil) // Freeze: the cgroup freezer
	_ sandbox.DriverUsage    = (*driver)(nil) // Usage: the cgroup's counters
	_ sandbox.Freezer        = (*localSandbox)(nil)
	_ sandbox.ContextStarter = (*localSandbox)(nil)
)
