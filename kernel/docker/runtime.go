package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/go-units"
	"github.com/glassroom/glassroom/kernel"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Labels put on every container.
const (
	LabelManaged  = "io.glassroom.managed"
	LabelInstance = "io.glassroom.instance"
	LabelSession  = "io.glassroom.session"
)

// Config configures the Docker runtime. Zero fields take defaults.
type Config struct {
	// Image is the kernel image (default glassroom/python-kernel:latest).
	Image string
	// OCIRuntime is the container runtime: runc (default), runsc (gVisor), kata.
	OCIRuntime string
	// Instance names this gateway in labels and container names (default "default").
	Instance string
	// StateDir holds one directory per session; it must be the same path on
	// the host and, when the gateway runs in a container, inside it
	// (default /run/glassroom/docker).
	StateDir string
	// SeccompProfile is a path to a seccomp JSON profile; empty keeps
	// Docker's default profile.
	SeccompProfile string
	// Defaults are the limits of a session that asks for none
	// (2048 MB, 1 CPU, 128 pids, 512 MB workspace).
	Defaults kernel.Limits
	// Max caps what a session may ask for (8192 MB, 2 CPUs, 1024 pids, 4096 MB).
	Max kernel.Limits
	// NoFile is the nofile ulimit (1024); FileSizeMB the fsize ulimit (1024).
	NoFile     int
	FileSizeMB int
	// CallTimeout bounds each Docker API call (10 s).
	CallTimeout time.Duration
	// StartTimeout bounds a kernel start (60 s).
	StartTimeout time.Duration
	// ReconcileInterval is how often orphaned containers are removed (1 min).
	ReconcileInterval time.Duration
	// UIDBase is the first host uid of kernel containers (300000): session
	// n runs as UIDBase+n, so the nproc ulimit (counted per host uid) and
	// file ownership are per session, even across containers.
	UIDBase int
	// MaxSandboxes bounds concurrent containers (1024).
	MaxSandboxes int
}

func (c Config) withDefaults() Config {
	if c.Image == "" {
		c.Image = "glassroom/python-kernel:latest"
	}
	if c.OCIRuntime == "" {
		c.OCIRuntime = "runc"
	}
	if c.Instance == "" {
		c.Instance = "default"
	}
	if c.StateDir == "" {
		c.StateDir = "/run/glassroom/docker"
	}
	c.Defaults = c.Defaults.Or(kernel.Limits{MemoryMB: 2048, CPUs: 1, Pids: 128, WorkspaceMB: 512})
	c.Max = c.Max.Or(kernel.Limits{MemoryMB: 8192, CPUs: 2, Pids: 1024, WorkspaceMB: 4096})
	if c.NoFile == 0 {
		c.NoFile = 1024
	}
	if c.FileSizeMB == 0 {
		c.FileSizeMB = 1024
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = time.Minute
	}
	if c.UIDBase == 0 {
		c.UIDBase = 300000
	}
	if c.MaxSandboxes == 0 {
		c.MaxSandboxes = 1024
	}
	return c
}

// instancePattern is the shape of an instance name (it goes into container names).
var instancePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if !filepath.IsAbs(c.StateDir) {
		return errors.New("docker: config: state dir must be absolute")
	}
	if !instancePattern.MatchString(c.Instance) {
		return fmt.Errorf("docker: config: instance %q must match %s", c.Instance, instancePattern)
	}
	if c.Defaults.Exceeds(c.Max) {
		return errors.New("docker: config: default limits exceed maxima")
	}
	if c.Defaults.MemoryMB < 64 || c.Defaults.Pids < 16 {
		return errors.New("docker: config: a kernel needs at least 64 MB and 16 pids")
	}
	return nil
}

// Runtime starts kernels in containers. It is safe for concurrent use.
type Runtime struct {
	cfg  Config
	log  zerolog.Logger
	cli  *client.Client
	root bool

	mu    sync.Mutex
	live  map[string]*sandbox // session id → sandbox, including ones starting
	slots []bool              // uid slots in use
}

// New connects to the Docker engine (DOCKER_HOST or the default socket),
// checks that the image exists, and removes this instance's orphaned
// containers and directories. The caller must Close the runtime.
func New(ctx context.Context, cfg Config, log zerolog.Logger) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: docker: client: %v", kernel.ErrUnavailable, err)
	}
	r := &Runtime{cfg: cfg, log: log.With().Str("runtime", "docker").Logger(), cli: cli, root: os.Geteuid() == 0, live: make(map[string]*sandbox), slots: make([]bool, cfg.MaxSandboxes)}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	if _, err := cli.Ping(cctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: docker: engine not reachable: %v", kernel.ErrUnavailable, err)
	}
	if _, err := cli.ImageInspect(cctx, cfg.Image); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: docker: kernel image %s: %v (build it with `make image`)", kernel.ErrUnavailable, cfg.Image, err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o711); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker: state dir: %w", err)
	}
	if err := r.Reconcile(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return r, nil
}

// Name returns "docker".
func (r *Runtime) Name() string { return "docker" }

// Close releases the engine connection. Sandboxes must be closed first.
func (r *Runtime) Close() error { return r.cli.Close() }

// Run reconciles periodically until ctx ends.
func (r *Runtime) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.ReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := r.Reconcile(ctx); err != nil {
				r.log.Warn().Err(err).Msg("reconcile failed")
			}
		}
	}
}

// ContainerName is the deterministic name of a session's container.
func (r *Runtime) ContainerName(sessionID string) string {
	return "glassroom-" + r.cfg.Instance + "-" + sessionID
}

// Reconcile removes containers labelled with this instance, and session
// directories, that no live sandbox owns.
func (r *Runtime) Reconcile(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	list, err := r.cli.ContainerList(cctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelInstance+"="+r.cfg.Instance))})
	if err != nil {
		return fmt.Errorf("docker: reconcile: list: %w", err)
	}
	for _, c := range list {
		id := c.Labels[LabelSession]
		if r.isLive(id) {
			continue
		}
		r.log.Info().Str("container", strings.TrimPrefix(firstName(c.Names), "/")).Msg("removing orphaned kernel container")
		rctx, rcancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		err := r.cli.ContainerRemove(rctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		rcancel()
		if err != nil && !client.IsErrNotFound(err) {
			r.log.Warn().Err(err).Msg("removing orphan failed")
		}
	}
	ents, err := os.ReadDir(r.cfg.StateDir)
	if err != nil {
		return fmt.Errorf("docker: reconcile: %w", err)
	}
	for _, e := range ents {
		if kernel.IDPattern.MatchString(e.Name()) && !r.isLive(e.Name()) {
			removeDir(filepath.Join(r.cfg.StateDir, e.Name()))
		}
	}
	return nil
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func (r *Runtime) isLive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.live[id]
	return ok
}

func removeDir(dir string) {
	_ = unix.Unmount(filepath.Join(dir, "work"), unix.MNT_DETACH)
	_ = os.RemoveAll(dir)
}

func (r *Runtime) limits(req kernel.Limits) kernel.Limits {
	return req.Or(r.cfg.Defaults).Cap(r.cfg.Max)
}

const (
	sandboxIPC  = "/run/glassroom/ipc"
	sandboxConn = sandboxIPC + "/kernel.json"
	sandboxWork = "/workspace"
)

// Start creates and starts the session's container and waits for the
// kernel's sockets. The caller must Close the sandbox.
func (r *Runtime) Start(ctx context.Context, spec kernel.Spec) (kernel.Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	s := &sandbox{r: r, id: spec.ID, name: r.ContainerName(spec.ID), limits: r.limits(spec.Limits),
		dir: filepath.Join(r.cfg.StateDir, spec.ID)}
	r.mu.Lock()
	if _, dup := r.live[spec.ID]; dup {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s already has a sandbox", kernel.ErrBadSpec, spec.ID)
	}
	s.slot = -1
	for i, used := range r.slots {
		if !used {
			r.slots[i], s.slot = true, i
			break
		}
	}
	if s.slot < 0 {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: all %d container slots in use", kernel.ErrUnavailable, len(r.slots))
	}
	s.uid = r.cfg.UIDBase + s.slot
	r.live[spec.ID] = s
	r.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.CallTimeout)
			s.Close(cctx)
			cancel()
		}
	}()
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if err := s.create(ctx, spec.Env); err != nil {
		return nil, err
	}
	if err := s.launch(ctx); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

type sandbox struct {
	r      *Runtime
	id     string
	name   string
	limits kernel.Limits
	dir    string
	slot   int
	uid    int // host uid and gid of the container's processes

	mu          sync.Mutex
	containerID string
	proc        *kernel.Incarnation
	stopWait    context.CancelFunc // ends the current waiter's ContainerWait
	closed      bool
	wg          sync.WaitGroup // waiter goroutines
}

func (s *sandbox) workDir() string { return filepath.Join(s.dir, "work") }
func (s *sandbox) ipcDir() string  { return filepath.Join(s.dir, "ipc") }

func (s *sandbox) prepare() error {
	if err := os.Mkdir(s.dir, 0o711); err != nil {
		return fmt.Errorf("docker: sandbox dir: %w", err)
	}
	for _, d := range []string{s.workDir(), s.ipcDir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("docker: sandbox dir: %w", err)
		}
		if err := os.Chown(d, s.uid, s.uid); err != nil {
			return fmt.Errorf("docker: chown sandbox dir: %w", err)
		}
	}
	if s.r.root {
		opts := fmt.Sprintf("size=%dm,mode=0700,uid=%d,gid=%d,nr_inodes=%d", s.limits.WorkspaceMB, s.uid, s.uid, 64*1024)
		if err := unix.Mount("tmpfs", s.workDir(), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("docker: mount workspace tmpfs: %w", err)
		}
	}
	return nil
}

func (s *sandbox) create(ctx context.Context, env map[string]string) error {
	cfg := s.r.cfg
	envList := []string{
		"HOME=" + sandboxWork, "USER=sandbox", "LOGNAME=sandbox", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1",
		"MPLBACKEND=module://matplotlib_inline.backend_inline", "MPLCONFIGDIR=/tmp/matplotlib",
		"IPYTHONDIR=/tmp/ipython", "XDG_CACHE_HOME=/tmp/cache", // history and caches stay out of the workspace
		"OPENBLAS_NUM_THREADS=" + strconv.Itoa(max(1, int(s.limits.CPUs))), "PYDEVD_DISABLE_FILE_VALIDATION=1",
	}
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	pids := int64(s.limits.Pids)
	mem := int64(s.limits.MemoryMB) << 20
	secOpt := []string{"no-new-privileges"}
	if cfg.SeccompProfile != "" {
		b, err := os.ReadFile(cfg.SeccompProfile)
		if err != nil {
			return fmt.Errorf("docker: seccomp profile: %w", err)
		}
		secOpt = append(secOpt, "seccomp="+string(b))
	}
	cc := &container.Config{
		Image:           cfg.Image,
		Cmd:             []string{"python3", "-m", "ipykernel_launcher", "-f", sandboxConn},
		User:            fmt.Sprintf("%d:%d", s.uid, s.uid),
		WorkingDir:      sandboxWork,
		Env:             envList,
		Hostname:        "glassroom",
		NetworkDisabled: true,
		Labels:          map[string]string{LabelManaged: "true", LabelInstance: cfg.Instance, LabelSession: s.id},
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    secOpt,
		IpcMode:        "private",
		Runtime:        cfg.OCIRuntime,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=256m,mode=1777"},
		Binds: []string{
			s.ipcDir() + ":" + sandboxIPC + ":rw",
			s.workDir() + ":" + sandboxWork + ":rw",
		},
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem,
			NanoCPUs:   int64(s.limits.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: int64(cfg.NoFile), Hard: int64(cfg.NoFile)},
				{Name: "nproc", Soft: pids, Hard: pids},
				{Name: "fsize", Soft: int64(cfg.FileSizeMB) << 20, Hard: int64(cfg.FileSizeMB) << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	resp, err := s.r.cli.ContainerCreate(cctx, cc, hc, nil, nil, s.name)
	if err != nil {
		if client.IsErrNotFound(err) {
			return fmt.Errorf("%w: docker: image %s not found: %v", kernel.ErrUnavailable, cfg.Image, err)
		}
		return fmt.Errorf("%w: docker: create container: %v", kernel.ErrUnavailable, err)
	}
	s.mu.Lock()
	s.containerID = resp.ID
	s.mu.Unlock()
	return nil
}

// launch writes a fresh connection file, starts the container and waits
// for the kernel's sockets.
func (s *sandbox) launch(ctx context.Context) error {
	cfg := s.r.cfg
	host, err := kernel.PrepareIPC(s.ipcDir(), sandboxIPC, s.uid, s.uid)
	if err != nil {
		return err
	}
	inc := kernel.NewIncarnation(host)
	// Wait is registered before the start so no exit is missed. It is the
	// one Docker call without a deadline: it lasts as long as the kernel.
	wctx, wcancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.stopWait = wcancel // Close ends the wait even if the container could not be removed
	s.mu.Unlock()
	waitC, errC := s.r.cli.ContainerWait(wctx, s.containerID, container.WaitConditionNextExit)
	sctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	err = s.r.cli.ContainerStart(sctx, s.containerID, container.StartOptions{})
	cancel()
	if err != nil {
		wcancel()
		return fmt.Errorf("%w: docker: start container: %v", kernel.ErrUnavailable, err)
	}
	s.mu.Lock()
	s.proc = inc
	s.mu.Unlock()
	s.wg.Add(1)
	go func() { // owned by the sandbox; ends when the container exits or is removed
		defer s.wg.Done()
		defer wcancel()
		select {
		case res := <-waitC:
			inc.Exit(s.exitReason(res.StatusCode))
		case err := <-errC:
			if wctx.Err() != nil {
				inc.Exit("sandbox closed")
			} else {
				inc.Exit("wait failed: " + err.Error())
			}
		}
	}()
	ctx, cancelStart := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancelStart()
	if err := kernel.WaitForSockets(ctx, host, inc.Exited()); err != nil {
		return fmt.Errorf("docker: %w (%s)%s", err, inc.ExitReason(), s.logsTail())
	}
	return nil
}

// exitReason inspects the exited container: OOMKilled when the OOM killer
// ended it, else the exit code.
func (s *sandbox) exitReason(code int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), s.r.cfg.CallTimeout)
	defer cancel()
	info, err := s.r.cli.ContainerInspect(ctx, s.containerID)
	if err == nil && info.State != nil && info.State.OOMKilled {
		return "OOMKilled: the kernel exceeded its memory limit of " + strconv.Itoa(s.limits.MemoryMB) + " MB"
	}
	return "exit code " + strconv.FormatInt(code, 10)
}

// logsTail returns the last lines of the container's output for errors.
func (s *sandbox) logsTail() string {
	ctx, cancel := context.WithTimeout(context.Background(), s.r.cfg.CallTimeout)
	defer cancel()
	rc, err := s.r.cli.ContainerLogs(ctx, s.containerID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(rc, buf)
	return ": " + strings.ToValidUTF8(string(buf[:n]), "?")
}

func (s *sandbox) current() *kernel.Incarnation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Connection implements kernel.Sandbox.
func (s *sandbox) Connection() kernel.ConnectionInfo { return s.current().Connection() }

// Limits implements kernel.Sandbox.
func (s *sandbox) Limits() kernel.Limits { return s.limits }

// Workspace implements kernel.Sandbox.
func (s *sandbox) Workspace() string { return s.workDir() }

// Exited implements kernel.Sandbox.
func (s *sandbox) Exited() <-chan struct{} { return s.current().Exited() }

// ExitReason implements kernel.Sandbox.
func (s *sandbox) ExitReason() string { return s.current().ExitReason() }

// ErrClosed is returned by Restart after Close.
var ErrClosed = errors.New("docker: sandbox closed")

// Restart implements kernel.Sandbox: it kills the container's process and
// starts the same container again, keeping the workspace.
func (s *sandbox) Restart(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	inc := s.proc
	s.mu.Unlock()
	kctx, cancel := context.WithTimeout(ctx, s.r.cfg.CallTimeout)
	err := s.r.cli.ContainerKill(kctx, s.containerID, "KILL")
	cancel()
	if err != nil && !strings.Contains(err.Error(), "is not running") {
		return fmt.Errorf("docker: restart: kill: %w", err)
	}
	select {
	case <-inc.Exited():
	case <-ctx.Done():
		return fmt.Errorf("docker: restart: %w", ctx.Err())
	}
	if err := s.launch(ctx); err != nil {
		return fmt.Errorf("docker: restart: %w", err)
	}
	return nil
}

// Close implements kernel.Sandbox: it force-removes the container, waits
// for its waiter, and removes the session directory.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	id := s.containerID
	s.mu.Unlock()
	var err error
	if id != "" {
		// Removal must happen even if the caller's context is already
		// cancelled (a DELETE whose client went away); one retry.
		for try := 0; try < 2; try++ {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.r.cfg.CallTimeout)
			err = s.r.cli.ContainerRemove(cctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
			cancel()
			if err == nil || client.IsErrNotFound(err) {
				err = nil
				break
			}
		}
	}
	s.mu.Lock()
	if s.stopWait != nil {
		s.stopWait() // if removal failed, reconcile removes the container later
	}
	s.mu.Unlock()
	s.wg.Wait()
	removeDir(s.dir)
	s.r.mu.Lock()
	delete(s.r.live, s.id)
	s.r.slots[s.slot] = false
	s.r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("docker: remove container %s: %w", s.name, err)
	}
	return nil
}
