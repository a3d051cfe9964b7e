package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// HostConfig configures a Host. Zero fields take defaults.
type HostConfig struct {
	// StateDirs, when set, limits the Host to the containers of these
	// state directories (absolute paths, as the gateways were given them).
	StateDirs []string
	// Instance, when set, limits it to the containers of that instance.
	Instance string
	// CallTimeout bounds each Docker call (10 s).
	CallTimeout time.Duration
}

func (c HostConfig) withDefaults() HostConfig {
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c HostConfig) Validate() error {
	for _, d := range c.StateDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("docker: host: state dir %q must be absolute", d)
		}
	}
	if c.Instance != "" && !instancePattern.MatchString(c.Instance) {
		return fmt.Errorf("docker: host: instance %q must match %s", c.Instance, instancePattern)
	}
	if c.CallTimeout < 0 {
		return errors.New("docker: host: negative call timeout")
	}
	return nil
}

// hostEngine is the part of the Docker API a Host uses; *client.Client
// implements it, and tests fake it. Every call gets a context bounded by
// HostConfig.CallTimeout.
type hostEngine interface {
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRemove(ctx context.Context, container string, options container.RemoveOptions) error
}

// Host is the operator's view of the glassroom sandboxes on one Docker
// engine, whichever gateway made them: it lists them with whether a live
// gateway owns them, and removes those none does. A live gateway is one
// that holds its state directory's lock (sandbox.LockStateDir); so Host
// must run where the gateways' state directories are (the engine's host,
// or a gateway's container with the same binds): a state directory it
// cannot find counts as gone. Build it with NewHost; Close it.
type Host struct {
	cfg    HostConfig
	cli    hostEngine
	log    zerolog.Logger
	closer func() error
}

// NewHost connects to the Docker engine (DOCKER_HOST or the default
// socket). ctx bounds the connection's check.
func NewHost(ctx context.Context, cfg HostConfig, log zerolog.Logger) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: docker: client: %w", sandbox.ErrUnavailable, err)
	}
	cfg = cfg.withDefaults()
	pctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: docker: engine not reachable: %w", sandbox.ErrUnavailable, err)
	}
	h := newHost(cfg, cli, log)
	h.closer = cli.Close
	return h, nil
}

// newHost is NewHost over any engine (tests pass a fake).
func newHost(cfg HostConfig, cli hostEngine, log zerolog.Logger) *Host {
	return &Host{cfg: cfg.withDefaults(), cli: cli, log: log, closer: func() error { return nil }}
}

// Close releases the engine connection.
func (h *Host) Close() error { return h.closer() }

// HostSandbox is one glassroom container, as Host sees it.
type HostSandbox struct {
	Container string // its name
	ID        string // the engine's id
	Session   string
	Instance  string
	// StateDir is its gateway's state directory: its LabelStateDir or,
	// on a container from before that label, where its binds come from;
	// "" when neither tells.
	StateDir string
	State    string // the engine's: running, exited, paused, created...
	Created  time.Time
	// Deadline is when it ends itself (the deadline file its gateway
	// wrote); zero when it has none: DeadlineNote says why.
	Deadline     time.Time
	DeadlineNote string
	Owner        Owner
}

// Owner says whether a live gateway owns a sandbox.
type Owner struct {
	// Live is set when a live process holds the sandbox's state directory
	// (PID is its pid as this process sees it; 0 when unknown), and when
	// that cannot be told (Unknown says why): such a sandbox is left alone.
	Live    bool
	PID     int
	Unknown string
	// Gone says, when no live gateway owns it, why: its state directory's
	// lock is free, the directory is gone, or no state directory is known.
	Gone string
}

func (o Owner) String() string {
	switch {
	case o.Unknown != "":
		return "unknown, left alone: " + o.Unknown
	case o.Live && o.PID > 0:
		return fmt.Sprintf("gateway (pid %d)", o.PID)
	case o.Live:
		return "gateway (pid not visible here)"
	}
	return "none: " + o.Gone
}

// Reasons of an Owner that is gone.
const (
	goneLockFree = "its state dir's lock is free (no gateway runs on it)"
	goneNoDir    = "its state dir does not exist here"
	goneUnknown  = "its state dir is not known"
)

// Sandboxes lists the glassroom containers of the engine (those with
// LabelManaged, within the configured state directories and instance),
// by state directory and name, with their owner and deadline.
func (h *Host) Sandboxes(ctx context.Context) ([]HostSandbox, error) {
	list, err := h.list(ctx)
	if err != nil {
		return nil, err
	}
	return h.describe(list, probeOwner, ReadDeadline), nil
}

// list lists the engine's managed containers (of the instance, when set).
func (h *Host) list(ctx context.Context) ([]container.Summary, error) {
	args := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if h.cfg.Instance != "" {
		args.Add("label", LabelInstance+"="+h.cfg.Instance)
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	list, err := h.cli.ContainerList(cctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return nil, fmt.Errorf("docker: host: list containers: %w", err)
	}
	return list, nil
}

// describe turns the engine's list into HostSandboxes, asking owner once
// per state directory and reading each deadline with deadlineOf (a
// session directory's). It touches nothing.
func (h *Host) describe(list []container.Summary, owner func(stateDir string) Owner, deadlineOf func(sessionDir string) (time.Time, error)) []HostSandbox {
	owners := map[string]Owner{}
	var out []HostSandbox
	for _, c := range list {
		if c.Labels[LabelManaged] != "true" || (h.cfg.Instance != "" && c.Labels[LabelInstance] != h.cfg.Instance) {
			continue
		}
		s := HostSandbox{ID: c.ID, Session: c.Labels[LabelSession], Instance: c.Labels[LabelInstance], StateDir: stateDirOf(c),
			State: c.State, Created: time.Unix(c.Created, 0)}
		if len(c.Names) > 0 {
			s.Container = strings.TrimPrefix(c.Names[0], "/")
		}
		if len(h.cfg.StateDirs) > 0 && !slices.Contains(h.cfg.StateDirs, s.StateDir) {
			continue
		}
		if s.StateDir == "" {
			s.Owner = Owner{Gone: goneUnknown}
		} else {
			o, ok := owners[s.StateDir]
			if !ok {
				o = owner(s.StateDir)
				owners[s.StateDir] = o
			}
			s.Owner = o
		}
		switch {
		case !hasMount(c.Mounts, DeadlineDir):
			s.DeadlineNote = "none (made before sandboxes had deadlines)"
		case s.StateDir == "" || !sandbox.IDPattern.MatchString(s.Session):
			s.DeadlineNote = "unknown"
		default:
			at, err := deadlineOf(filepath.Join(s.StateDir, s.Session))
			switch {
			case errors.Is(err, fs.ErrNotExist) && s.State == "running":
				s.DeadlineNote = "its deadline file is gone: it ends itself within seconds"
			case errors.Is(err, fs.ErrNotExist):
				s.DeadlineNote = "its deadline file is gone"
			case err != nil:
				s.DeadlineNote = "unreadable: " + err.Error()
			default:
				s.Deadline = at
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b HostSandbox) int {
		return cmp.Or(strings.Compare(a.StateDir, b.StateDir), strings.Compare(a.Container, b.Container))
	})
	return out
}

// stateDirOf is the state directory of the gateway that made c: its
// LabelStateDir or, on a container from before that label, the directory
// two levels above its ipc bind (<state dir>/<session>/ipc).
func stateDirOf(c container.Summary) string {
	if d := c.Labels[LabelStateDir]; d != "" {
		return d
	}
	for _, m := range c.Mounts {
		if m.Destination == sandbox.IPCDir && filepath.IsAbs(m.Source) {
			return filepath.Dir(filepath.Dir(m.Source))
		}
	}
	return ""
}

// probeOwner asks who holds stateDir's lock, without taking it.
func probeOwner(stateDir string) Owner {
	held, pid, err := sandbox.StateDirOwner(stateDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Owner{Gone: goneNoDir}
	case err != nil:
		// Not knowing is never "gone": such a sandbox is left alone.
		return Owner{Live: true, Unknown: err.Error()}
	case held:
		return Owner{Live: true, PID: pid}
	}
	return Owner{Gone: goneLockFree}
}

// RemoveUnowned removes the sandboxes no live gateway owns (see
// Sandboxes): for each state directory whose lock is free it takes the
// lock (so no gateway starts on the directory meanwhile), force-removes
// its containers and their session directories (a tmpfs workspace, its
// files with it), and gives the lock back; the containers of a state
// directory that does not exist here, or of none, are removed without a
// lock. A state directory a live gateway holds is never touched, even if
// that gateway started after the listing. It returns what it removed and
// the errors of what it could not.
func (h *Host) RemoveUnowned(ctx context.Context) ([]HostSandbox, error) {
	list, err := h.list(ctx)
	if err != nil {
		return nil, err
	}
	return h.removeUnowned(ctx, h.describe(list, probeOwner, ReadDeadline), sandbox.LockExistingStateDir)
}

// removeUnowned removes the unowned of all, taking each state directory
// with lock.
func (h *Host) removeUnowned(ctx context.Context, all []HostSandbox, lock func(dir string) (*sandbox.StateLock, error)) ([]HostSandbox, error) {
	byDir := map[string][]HostSandbox{}
	var dirs []string
	for _, s := range all {
		if s.Owner.Live {
			continue
		}
		if _, ok := byDir[s.StateDir]; !ok {
			dirs = append(dirs, s.StateDir)
		}
		byDir[s.StateDir] = append(byDir[s.StateDir], s)
	}
	var removed []HostSandbox
	var errs []error
	for _, dir := range dirs {
		var l *sandbox.StateLock
		if dir != "" {
			var err error
			l, err = lock(dir)
			var inUse *sandbox.StateDirInUseError
			switch {
			case errors.As(err, &inUse): // a gateway started on it since the listing
				h.log.Info().Str("state_dir", dir).Msg("a gateway holds the state dir now; its sandboxes are left alone")
				continue
			case errors.Is(err, fs.ErrNotExist):
				l = nil
			case err != nil:
				errs = append(errs, fmt.Errorf("docker: host: %w", err))
				continue
			}
		}
		for _, s := range byDir[dir] {
			if err := h.remove(ctx, s, l != nil); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, s)
		}
		if l != nil {
			l.Release()
		}
	}
	return removed, errors.Join(errs...)
}

// remove force-removes s's container and, when its state directory is
// held (locked), its session directory.
func (h *Host) remove(ctx context.Context, s HostSandbox, locked bool) error {
	rctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	err := h.cli.ContainerRemove(rctx, s.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	cancel()
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: host: remove %s: %w", s.Container, err)
	}
	h.log.Info().Str("container", s.Container).Str("state_dir", s.StateDir).Msg("removed a sandbox no gateway owns")
	if locked && sandbox.IDPattern.MatchString(s.Session) {
		if err := sandbox.RemoveDir(filepath.Join(s.StateDir, s.Session)); err != nil {
			return fmt.Errorf("docker: host: session directory of %s: %w", s.Container, err)
		}
	}
	return nil
}
