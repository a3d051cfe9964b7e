package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Config configures the local runtime. Zero fields take defaults.
type Config struct {
	// StateDir holds one directory per session (default /run/glassroom/local
	// as root, else $TMPDIR/glassroom-local-<uid>).
	StateDir string
	// Bwrap is the bubblewrap binary (default: "bwrap" on PATH).
	Bwrap string
	// Python is the interpreter with ipykernel (default /usr/bin/python3).
	Python string
	// InsecureNoSandbox runs kernels without bwrap. Never use it for
	// untrusted code; every kernel start logs a warning.
	InsecureNoSandbox bool
	// UIDBase is the first host uid for sandboxes when running as root
	// (default 200000); session n runs as UIDBase+n.
	UIDBase int
	// MaxSandboxes bounds concurrent sandboxes (default 1024).
	MaxSandboxes int
	// Defaults are the limits of a session that asks for none
	// (default 2048 MB address space, 128 pids, 512 MB workspace).
	Defaults kernel.Limits
	// Max caps what a session may ask for (default 8192 MB, 1024 pids, 4096 MB).
	Max kernel.Limits
	// NoFile is RLIMIT_NOFILE (default 1024).
	NoFile int
	// FileSizeMB is RLIMIT_FSIZE (default 1024).
	FileSizeMB int
	// StartTimeout bounds a kernel start (default 30 s).
	StartTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.StateDir == "" {
		if os.Geteuid() == 0 {
			c.StateDir = "/run/glassroom/local"
		} else {
			c.StateDir = filepath.Join(os.TempDir(), "glassroom-local-"+strconv.Itoa(os.Geteuid()))
		}
	}
	if c.Python == "" {
		c.Python = "/usr/bin/python3"
	}
	if c.UIDBase == 0 {
		c.UIDBase = 200000
	}
	if c.MaxSandboxes == 0 {
		c.MaxSandboxes = 1024
	}
	c.Defaults = c.Defaults.Or(kernel.Limits{MemoryMB: 2048, Pids: 128, WorkspaceMB: 512})
	c.Max = c.Max.Or(kernel.Limits{MemoryMB: 8192, Pids: 1024, WorkspaceMB: 4096})
	if c.NoFile == 0 {
		c.NoFile = 1024
	}
	if c.FileSizeMB == 0 {
		c.FileSizeMB = 1024
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if !filepath.IsAbs(c.StateDir) || !filepath.IsAbs(c.Python) {
		return errors.New("local: config: state dir and python must be absolute paths")
	}
	if c.UIDBase < 1000 || c.UIDBase+c.MaxSandboxes > 1<<31-2 {
		return fmt.Errorf("local: config: uid range %d+%d invalid", c.UIDBase, c.MaxSandboxes)
	}
	if c.Defaults.Exceeds(c.Max) {
		return errors.New("local: config: default limits exceed maxima")
	}
	return nil
}

// ErrNoBwrap is returned by Start when bubblewrap is missing and the
// insecure mode is off.
var ErrNoBwrap = errors.New("local: bubblewrap (bwrap) not found: install the bubblewrap package, or (unsafe) enable InsecureNoSandbox")

// Runtime starts sandboxed kernels on this machine. It is safe for
// concurrent use.
type Runtime struct {
	cfg   Config
	log   zerolog.Logger
	root  bool
	bwrap string // resolved path, "" when missing

	mu    sync.Mutex
	slots []bool
}

// New returns a runtime. It removes the directories of sandboxes a previous
// gateway left behind (their kernels died with it).
func New(cfg Config, log zerolog.Logger) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Runtime{cfg: cfg, log: log.With().Str("runtime", "local").Logger(), root: os.Geteuid() == 0, slots: make([]bool, cfg.MaxSandboxes)}
	bw := cfg.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	if p, err := exec.LookPath(bw); err == nil {
		r.bwrap = p
	}
	if err := os.MkdirAll(cfg.StateDir, 0o711); err != nil {
		return nil, fmt.Errorf("local: state dir: %w", err)
	}
	if err := os.Chmod(cfg.StateDir, 0o711); err != nil {
		return nil, fmt.Errorf("local: state dir: %w", err)
	}
	if r.root {
		if err := checkTraversable(cfg.StateDir); err != nil {
			return nil, err
		}
	} else {
		r.log.Warn().Msg("not running as root: sandboxes share the gateway's uid (RLIMIT_NPROC is shared) and workspaces have no size limit")
	}
	r.reconcile()
	return r, nil
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

// Name returns "local".
func (r *Runtime) Name() string { return "local" }

// reconcile removes leftover session directories.
func (r *Runtime) reconcile() {
	entries, err := os.ReadDir(r.cfg.StateDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !kernel.IDPattern.MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(r.cfg.StateDir, e.Name())
		r.log.Info().Str("dir", dir).Msg("removing orphaned sandbox directory")
		removeSessionDir(dir)
		if r.root {
			(&cgroup{dirs: cgroupDirs(e.Name())}).remove()
		}
	}
}

func removeSessionDir(dir string) {
	work := filepath.Join(dir, "work")
	_ = unix.Unmount(work, unix.MNT_DETACH)
	_ = os.RemoveAll(dir)
}

func (r *Runtime) limits(req kernel.Limits) kernel.Limits {
	return req.Or(r.cfg.Defaults).Cap(r.cfg.Max)
}

func (r *Runtime) takeSlot() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, used := range r.slots {
		if !used {
			r.slots[i] = true
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: all %d local sandboxes in use", kernel.ErrUnavailable, len(r.slots))
}

func (r *Runtime) releaseSlot(i int) {
	r.mu.Lock()
	r.slots[i] = false
	r.mu.Unlock()
}

// Start creates a sandbox for spec and starts its kernel. It blocks until
// the kernel's sockets exist (or ctx ends, or StartTimeout passes). The
// caller must Close the returned sandbox.
func (r *Runtime) Start(ctx context.Context, spec kernel.Spec) (kernel.Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if r.bwrap == "" && !r.cfg.InsecureNoSandbox {
		return nil, fmt.Errorf("%w: %w", kernel.ErrUnavailable, ErrNoBwrap)
	}
	slot, err := r.takeSlot()
	if err != nil {
		return nil, err
	}
	s := &sandbox{r: r, id: spec.ID, env: spec.Env, limits: r.limits(spec.Limits), slot: slot,
		dir: filepath.Join(r.cfg.StateDir, spec.ID), uid: os.Geteuid(), gid: os.Getegid()}
	if r.root {
		s.uid, s.gid = r.cfg.UIDBase+slot, r.cfg.UIDBase+slot
	}
	if err := s.prepare(); err != nil {
		s.remove()
		return nil, err
	}
	if err := s.launch(ctx); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// sandbox is one session's directories and its current kernel process.
type sandbox struct {
	r        *Runtime
	id       string
	env      map[string]string
	limits   kernel.Limits
	slot     int
	dir      string
	uid, gid int

	cg *cgroup // nil when cgroups are unavailable (not root)

	mu     sync.Mutex
	proc   *process
	closed bool
}

// process is one kernel incarnation. Its waiter goroutine calls Exit once
// the process has been reaped.
type process struct {
	*kernel.Incarnation
	cmd    *exec.Cmd
	stderr *tailBuffer
	// pidfd refers to the sandbox's pid-namespace init (bwrap's child), or -1.
	// Once it has exited, every process of the sandbox is gone.
	pidfd int
	// cg and oomBefore tell an OOM kill from other deaths.
	cg        *cgroup
	oomBefore int
}

// readChildPidfd reads bwrap's info JSON and opens a pidfd for the
// sandbox's init process. It returns -1 if that fails (the process group
// kill still applies).
func readChildPidfd(r *os.File) int {
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil || info.ChildPid <= 0 {
		return -1
	}
	fd, err := unix.PidfdOpen(info.ChildPid, 0)
	if err != nil {
		return -1
	}
	return fd
}

const (
	sandboxIPC  = "/run/glassroom/ipc"
	sandboxConn = sandboxIPC + "/kernel.json" // ipykernel rewrites it, so it lives in the writable ipc dir
	sandboxWork = "/workspace"
)

func (s *sandbox) workDir() string { return filepath.Join(s.dir, "work") }
func (s *sandbox) ipcDir() string  { return filepath.Join(s.dir, "ipc") }

// prepare creates the session directory tree, owned so that only this
// sandbox's uid can use it.
func (s *sandbox) prepare() error {
	if err := os.Mkdir(s.dir, 0o711); err != nil {
		return fmt.Errorf("local: create sandbox dir: %w", err)
	}
	for _, d := range []string{s.workDir(), s.ipcDir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("local: create sandbox dir: %w", err)
		}
		if err := os.Chown(d, s.uid, s.gid); err != nil {
			return fmt.Errorf("local: chown sandbox dir: %w", err)
		}
	}
	if s.r.root {
		cg, err := newCgroup(s.id, s.limits.MemoryMB, s.limits.Pids)
		if err != nil {
			s.r.log.Warn().Err(err).Str("session", s.id).Msg("no cgroup for the sandbox: only per-process rlimits bound its memory")
		} else {
			s.cg = cg
		}
		opts := fmt.Sprintf("size=%dm,mode=0700,uid=%d,gid=%d,nr_inodes=%d", s.limits.WorkspaceMB, s.uid, s.gid, 64*1024)
		if err := unix.Mount("tmpfs", s.workDir(), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("local: mount workspace tmpfs: %w", err)
		}
	}
	passwd := fmt.Sprintf("sandbox:x:1000:1000:sandbox:%s:/usr/sbin/nologin\n", sandboxWork)
	group := "sandbox:x:1000:\n"
	for name, body := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("local: write %s: %w", name, err)
		}
	}
	return nil
}

func (s *sandbox) remove() {
	if s.cg != nil {
		s.cg.remove()
	}
	removeSessionDir(s.dir)
	s.r.releaseSlot(s.slot)
}

// launch starts a kernel process and waits for its sockets.
func (s *sandbox) launch(ctx context.Context) error {
	sandboxDir := sandboxIPC
	if s.r.bwrap == "" {
		sandboxDir = "" // insecure mode: the kernel sees host paths
	}
	host, err := kernel.PrepareIPC(s.ipcDir(), sandboxDir, s.uid, s.gid)
	if err != nil {
		return err
	}
	filter, err := seccompFilter()
	if err != nil {
		return err
	}
	cmd := s.command(filepath.Join(s.ipcDir(), kernel.ConnectionFileName), filter != nil)
	p := &process{Incarnation: kernel.NewIncarnation(host), cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, pidfd: -1, cg: s.cg}
	if s.cg != nil {
		p.oomBefore = s.cg.oomKills()
	}
	cmd.Stdout = p.stderr
	cmd.Stderr = p.stderr
	var infoR *os.File
	if s.r.bwrap != "" {
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("local: start kernel: %w", err)
		}
		cmd.ExtraFiles = []*os.File{w} // fd 3: bwrap --info-fd
		infoR = r
		defer r.Close()
		defer w.Close()
		if filter != nil {
			sr, sw, err := os.Pipe()
			if err != nil {
				return fmt.Errorf("local: start kernel: %w", err)
			}
			defer sr.Close()
			_, err = sw.Write(filter) // a few hundred bytes: fits the pipe buffer
			sw.Close()
			if err != nil {
				return fmt.Errorf("local: seccomp filter: %w", err)
			}
			cmd.ExtraFiles = append(cmd.ExtraFiles, sr) // fd 4: bwrap --seccomp
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("local: start kernel: %w", err)
	}
	if infoR != nil {
		cmd.ExtraFiles[0].Close()
		p.pidfd = readChildPidfd(infoR)
	}
	go p.wait() // owned by the sandbox: Close and Restart wait for Exited
	s.mu.Lock()
	if s.closed { // Close ran during a Restart
		s.mu.Unlock()
		p.kill()
		<-p.Exited()
		return ErrClosed
	}
	s.proc = p
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, s.r.cfg.StartTimeout)
	defer cancel()
	if err := kernel.WaitForSockets(ctx, host, p.Exited()); err != nil {
		p.kill()
		<-p.Exited()
		return fmt.Errorf("local: %w (%s): %s", err, p.ExitReason(), p.stderr.String())
	}
	if s.cg != nil {
		if err := s.cg.adopt(s.uid); err != nil {
			s.r.log.Warn().Err(err).Str("session", s.id).Msg("moving the sandbox into its cgroup failed")
		}
	}
	return nil
}

// command builds prlimit -- bwrap ... -- python -m ipykernel_launcher.
func (s *sandbox) command(connFile string, seccomp bool) *exec.Cmd {
	cfg := s.r.cfg
	mb := func(n int) string { return strconv.FormatInt(int64(n)<<20, 10) }
	args := []string{
		"--as=" + mb(s.limits.MemoryMB),
		"--nofile=" + strconv.Itoa(cfg.NoFile),
		"--fsize=" + mb(cfg.FileSizeMB),
		"--nproc=" + strconv.Itoa(s.limits.Pids),
		"--core=0",
		"--",
	}
	env := map[string]string{
		"PATH":                           "/usr/local/bin:/usr/bin:/bin",
		"HOME":                           sandboxWork,
		"LANG":                           "C.UTF-8",
		"MPLBACKEND":                     "module://matplotlib_inline.backend_inline",
		"MPLCONFIGDIR":                   "/tmp/matplotlib",
		"IPYTHONDIR":                     "/tmp/ipython", // history stays out of the workspace
		"XDG_CACHE_HOME":                 "/tmp/cache",   // so do font and other caches
		"PYTHONDONTWRITEBYTECODE":        "1",
		"OPENBLAS_NUM_THREADS":           "1",
		"PYDEVD_DISABLE_FILE_VALIDATION": "1",
	}
	for k, v := range s.env {
		env[k] = v
	}
	py := []string{cfg.Python, "-m", "ipykernel_launcher", "-f", sandboxConn}
	var cmd *exec.Cmd
	if s.r.bwrap == "" {
		s.r.log.Warn().Str("session", s.id).Msg("INSECURE: starting kernel WITHOUT a sandbox (InsecureNoSandbox); code has the gateway user's full access")
		py[len(py)-1] = connFile
		env["HOME"] = s.workDir()
		cmd = exec.Command("prlimit", append(args, py...)...)
		cmd.Dir = s.workDir()
	} else {
		b := []string{s.r.bwrap,
			"--die-with-parent", "--new-session",
			"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
			"--uid", "1000", "--gid", "1000", "--hostname", "glassroom",
			"--ro-bind", "/usr", "/usr",
		}
		for _, l := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
			if t, err := os.Readlink("/" + l); err == nil {
				b = append(b, "--symlink", t, "/"+l)
			}
		}
		for _, e := range []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
			"/etc/fonts", "/etc/matplotlibrc", "/etc/python3", "/etc/python3.11", "/etc/localtime", "/etc/mime.types"} {
			if _, err := os.Stat(e); err == nil {
				b = append(b, "--ro-bind", e, e)
			}
		}
		b = append(b,
			"--ro-bind", filepath.Join(s.dir, "passwd"), "/etc/passwd",
			"--ro-bind", filepath.Join(s.dir, "group"), "/etc/group",
			"--proc", "/proc", "--dev", "/dev",
			"--size", strconv.Itoa(64<<20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
			"--size", strconv.Itoa(256<<20), "--tmpfs", "/tmp",
			"--bind", s.workDir(), sandboxWork,
			"--bind", s.ipcDir(), sandboxIPC,
			"--remount-ro", "/",
			"--chdir", sandboxWork,
			"--clearenv",
			"--cap-drop", "ALL",
			"--info-fd", "3",
			"--disable-userns",
		)
		if seccomp {
			b = append(b, "--seccomp", "4")
		}
		for k, v := range env {
			b = append(b, "--setenv", k, v)
		}
		b = append(b, "--")
		cmd = exec.Command("prlimit", append(append(args, b...), py...)...)
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if s.r.bwrap == "" {
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.r.root {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.uid), Gid: uint32(s.gid), Groups: []uint32{}}
	}
	return cmd
}

func (p *process) wait() {
	err := p.cmd.Wait()
	if p.pidfd >= 0 {
		// bwrap is gone; its child dies with it (die-with-parent). Wait
		// until the whole pid namespace is torn down.
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		for {
			if _, perr := unix.Poll(fds, 5000); perr != unix.EINTR {
				break
			}
		}
		unix.Close(p.pidfd)
	}
	switch {
	case p.cg != nil && p.cg.oomKills() > p.oomBefore:
		p.Exit("OOMKilled: the sandbox exceeded its memory limit")
	case err != nil:
		p.Exit(err.Error())
	default:
		p.Exit("exited")
	}
}

// kill ends the whole process group (bwrap and, through its pid namespace
// and die-with-parent, everything inside).
func (p *process) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (s *sandbox) current() *process {
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
var ErrClosed = errors.New("local: sandbox closed")

// Restart implements kernel.Sandbox.
func (s *sandbox) Restart(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	p := s.proc
	s.mu.Unlock()
	p.kill()
	<-p.Exited()
	if err := s.launch(ctx); err != nil {
		return fmt.Errorf("local: restart: %w", err)
	}
	return nil
}

// Close implements kernel.Sandbox.
func (s *sandbox) Close(context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		p.kill()
		<-p.Exited()
	}
	s.remove()
	return nil
}

// tailBuffer keeps the last max bytes written, for start-up diagnostics.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
