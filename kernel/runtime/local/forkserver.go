package local

import (
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// templateCode is the fork server's template (template.py).
//
//go:embed template.py
var templateCode string

// ForkConfig configures the fork server (Config.Fork): python3 kernels
// forked from a template that has already loaded ipykernel and the
// preload modules, instead of a fresh interpreter each.
type ForkConfig struct {
	// Disabled starts every kernel as its own interpreter (exec'd).
	Disabled bool
	// Preload are the modules the template imports besides ipykernel's
	// (the gateway gives --pool-preload's). nil: none.
	Preload []string
	// ReadyTimeout bounds the template's start (60 s).
	ReadyTimeout time.Duration
}

// The reasons a python3 kernel is exec'd rather than forked, counted by
// the runtime (KernelStarts).
const (
	startForked = "forked"
	startExec   = "exec"
	// reasonEnv: the session's environment differs from the template's in
	// a variable that libraries read when they load (BLAS threads,
	// matplotlib, the locale, the time zone).
	reasonEnv = "env"
	// reasonLimits: the session's memory limit leaves too little room
	// above the template's address space.
	reasonLimits = "limits"
	// reasonTemplate: the template is not running and could not start, or
	// failed this fork.
	reasonTemplate = "template"
)

// ForkServerDir is the fork server's directory in the state directory
// (root's only): the template's socket, its log and its caches.
const ForkServerDir = sandbox.ForkServerStateDir

// templateHeadroom is the address space a forked kernel needs beyond the
// template's own: its threads' stacks, ZeroMQ, the shell.
const templateHeadroom = 512 << 20

// templateInfo is what the template says when it is ready.
type templateInfo struct {
	Ready   bool              `json:"ready"`
	PID     int               `json:"pid"`
	Loaded  []string          `json:"loaded"`
	Failed  map[string]string `json:"failed"`
	VMKB    int64             `json:"vm_kb"`
	RSSKB   int64             `json:"rss_kb"`
	Threads int               `json:"threads"`
}

// template is one running template process.
type template struct {
	cmd    *exec.Cmd
	sock   string
	info   templateInfo
	exited chan struct{} // closed once the process is reaped
}

// forkServer owns the template: it starts it on first use, restarts it
// when it has died, and forks kernels from it (spawn). Safe for
// concurrent use; Close kills the template and waits for its reaper.
type forkServer struct {
	python  string
	dir     string // root-only: the template's socket, log and caches
	env     map[string]string
	preload []string
	ready   time.Duration
	log     zerolog.Logger

	mu       sync.Mutex
	cur      *template
	starting chan struct{} // non-nil while a start is under way; closed when it ends
	startErr error         // the last start's failure
	closed   bool
	counts   map[[2]string]uint64
	wg       sync.WaitGroup // reapers
}

// newForkServer prepares the fork server of a runtime; nothing starts
// until the first spawn. kernelEnv is the environment of a kernel with the
// default limits: the template loads its libraries under it, with its
// /tmp paths moved into dir.
func newForkServer(cfg Config, kernelEnv map[string]string, log zerolog.Logger) (*forkServer, error) {
	dir := filepath.Join(cfg.StateDir, ForkServerDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	env := make(map[string]string, len(kernelEnv))
	for k, v := range kernelEnv {
		if strings.HasPrefix(v, "/tmp/") {
			v = filepath.Join(dir, "tmp", v[len("/tmp/"):])
		}
		env[k] = v
	}
	env["HOME"] = filepath.Join(dir, "tmp")
	seedFontCache(cfg.FontCache, env["MPLCONFIGDIR"])
	return &forkServer{python: cfg.Python, dir: dir, env: env, preload: cfg.Fork.Preload,
		ready: cfg.Fork.ReadyTimeout, log: log.With().Str("component", "fork server").Logger(), counts: map[[2]string]uint64{}}, nil
}

// seedFontCache copies matplotlib's font lists into the template's
// matplotlib directory, so that it does not scan the host's fonts.
func seedFontCache(from, to string) {
	if from == "" || to == "" {
		return
	}
	names, _ := filepath.Glob(filepath.Join(from, "fontlist-v*.json"))
	if len(names) == 0 {
		return
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return
	}
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil && len(b) < 8<<20 {
			_ = os.WriteFile(filepath.Join(to, filepath.Base(n)), b, 0o600)
		}
	}
}

// count records one kernel start.
func (f *forkServer) count(path, reason string) {
	f.mu.Lock()
	f.counts[[2]string{path, reason}]++
	f.mu.Unlock()
}

// starts returns the kernel starts counted so far.
func (f *forkServer) starts() []sandbox.StartCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]sandbox.StartCount, 0, len(f.counts))
	for k, n := range f.counts {
		out = append(out, sandbox.StartCount{Path: k[0], Reason: k[1], N: n})
	}
	return out
}

// refusal says why a kernel with env and memory limit memMB cannot be
// forked from the template ("" when it can). It does not start the
// template.
func (f *forkServer) refusal(env map[string]string, memMB int) string {
	for k, v := range env {
		if importTimeEnv(k) && f.env[k] != v {
			return reasonEnv
		}
	}
	for k := range f.env {
		if _, ok := env[k]; !ok && importTimeEnv(k) {
			return reasonEnv
		}
	}
	f.mu.Lock()
	t := f.cur
	f.mu.Unlock()
	if t != nil && t.info.VMKB<<10+templateHeadroom > int64(memMB)<<20 {
		return reasonLimits
	}
	return ""
}

// importTimeEnv reports whether libraries read the variable k when they
// load (so a template loaded under another value cannot serve it).
func importTimeEnv(k string) bool {
	for _, p := range []string{"OPENBLAS_", "OMP_", "MKL_", "GOTO_", "BLIS_", "NUMEXPR_", "NPY_", "NUMPY_",
		"MPLBACKEND", "PANDAS_", "PYDEVD_", "LANG", "LC_", "TZ", "JUPYTER_PLATFORM_DIRS"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// prestart starts the template, if it is not running, without waiting
// for it.
func (f *forkServer) prestart() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = f.get(ctx)
}

// get returns the running template, starting it (and waiting for it,
// bounded by ctx) when there is none.
func (f *forkServer) get(ctx context.Context) (*template, error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, errors.New("local: fork server: closed")
		}
		if t := f.cur; t != nil {
			f.mu.Unlock()
			return t, nil
		}
		wait := f.starting
		if wait == nil {
			wait = make(chan struct{})
			f.starting = wait
			f.wg.Add(1)
			go func() { // owned by the fork server: Close waits for it
				defer f.wg.Done()
				f.start(wait)
			}()
		}
		f.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		f.mu.Lock()
		t, err := f.cur, f.startErr
		f.mu.Unlock()
		if t == nil && err != nil {
			return nil, err
		}
	}
}

// start starts a template and closes done once it is ready or has failed.
func (f *forkServer) start(done chan struct{}) {
	t, err := f.launch()
	f.mu.Lock()
	f.starting = nil
	f.startErr = err
	if err == nil && f.closed {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
	if err == nil && !f.closed {
		f.cur = t
	}
	f.mu.Unlock()
	close(done)
	if err != nil {
		f.log.Warn().Err(err).Msg("the kernel template did not start: kernels are exec'd")
		return
	}
	f.log.Info().Int("pid", t.info.PID).Int64("rss_kb", t.info.RSSKB).Int64("vm_kb", t.info.VMKB).
		Strs("loaded", t.info.Loaded).Interface("failed", t.info.Failed).Msg("kernel template ready")
	<-t.exited
	f.mu.Lock()
	if f.cur == t {
		f.cur = nil
	}
	closed := f.closed
	f.mu.Unlock()
	if !closed {
		f.log.Warn().Str("state", t.cmd.ProcessState.String()).Msg("the kernel template exited; the next kernel restarts it")
	}
}

// launch starts the template process and waits for its ready line.
func (f *forkServer) launch() (*template, error) {
	sock := filepath.Join(f.dir, "template.sock")
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	for _, k := range []string{"MPLCONFIGDIR", "IPYTHONDIR", "HOME"} {
		if err := os.MkdirAll(f.env[k], 0o700); err != nil {
			return nil, fmt.Errorf("local: fork server: %w", err)
		}
	}
	logf, err := os.OpenFile(filepath.Join(f.dir, "template.log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	defer r.Close()
	preload, _ := json.Marshal(append([]string{}, f.preload...)) // strings: it cannot fail
	cmd := exec.Command(f.python, "-I", "-B", "-c", sandbox.WithoutComments("# glassroom kernel template\n", templateCode),
		sock, string(preload), sandbox.LauncherCode())
	cmd.Dir = f.dir
	cmd.Stdout = w
	cmd.Stderr = logf
	for k, v := range f.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// A session of its own, without a controlling terminal, which its
	// kernels share (no kernel can reach the gateway's terminal).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("local: fork server: start the template: %w", err)
	}
	t := &template{cmd: cmd, sock: sock, exited: make(chan struct{})}
	go func() { // the reaper, owned by the fork server through start (which waits on exited)
		_ = cmd.Wait()
		close(t.exited)
	}()
	_ = r.SetReadDeadline(time.Now().Add(f.ready))
	line, err := readLine(r, 1<<16)
	if err == nil {
		err = json.Unmarshal(line, &t.info)
	}
	if err == nil && !t.info.Ready {
		err = errors.New("it said it is not ready")
	}
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-t.exited
		return nil, fmt.Errorf("local: fork server: the template did not become ready (%w): %s", err, tailOf(filepath.Join(f.dir, "template.log")))
	}
	return t, nil
}

// readLine reads up to a newline (at most limit bytes) from r, a byte at a
// time: nothing after the line is consumed.
func readLine(r interface{ Read([]byte) (int, error) }, limit int) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < limit {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				return line, nil
			}
			line = append(line, b[0])
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("line over %d bytes", limit)
}

// tailOf returns the last 2 KiB of the file at path.
func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return strings.TrimSpace(string(b))
}

// Close kills the template and waits for its reaper. Forked kernels die
// with it (their parent-death signal).
func (f *forkServer) Close() {
	f.mu.Lock()
	f.closed = true
	t := f.cur
	f.mu.Unlock()
	if t != nil {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
	f.wg.Wait()
}

// forkRequest is what a forked kernel reads before it confines itself
// (template.py's read_body; the template reads only NSPid, from the
// header before it).
type forkRequest struct {
	NSPid       int               `json:"ns_pid"`
	CgroupProcs []string          `json:"cgroup_procs"`
	Rlimits     []rlimitJSON      `json:"rlimits"`
	UID         int               `json:"uid"`
	GID         int               `json:"gid"`
	Cwd         string            `json:"cwd"`
	Env         map[string]string `json:"env"`
	Argv        []string          `json:"argv"`
	// Cmdline is what the kernel's /proc/self/cmdline shows.
	Cmdline []string `json:"cmdline"`
	Seccomp []byte   `json:"seccomp"` // base64 in JSON
}

// rlimitJSON is one rlimit as [name, soft, hard] (-1: unlimited).
type rlimitJSON struct {
	Name       string
	Soft, Hard int64
}

// MarshalJSON implements json.Marshaler.
func (r rlimitJSON) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{r.Name, r.Soft, r.Hard})
}

// forkReply is one line on a kernel's connection: the kernel's, once it
// has confined itself ({"fds": ["kernel"]}, with a pidfd of itself) or
// failed to ({"error"}), then the template's once it has reaped it
// ({"exit"}).
type forkReply struct {
	// FDs names the descriptors that came with the reply, in order.
	FDs   []string `json:"fds"`
	Exit  *int     `json:"exit"`
	Error string   `json:"error"`
}

// forked is a kernel forked from the template: a pidfd of it and the
// connection on which the template reports its end.
type forked struct {
	conn *net.UnixConn

	mu    sync.Mutex // guards pidfd: kill and end race
	pidfd int
}

// spawn forks a kernel: it sends req (and out, the kernel's stdout and
// stderr) to the template and waits, bounded by ctx, until the kernel has
// confined itself. The caller must close the returned kernel's conn and pidfd.
func (f *forkServer) spawn(ctx context.Context, req forkRequest, out *os.File) (*forked, error) {
	t, err := f.get(ctx)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", t.sock)
	if err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	conn := c.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			_ = conn.Close()
		}
	}()
	if dl, has := ctx.Deadline(); has {
		_ = conn.SetDeadline(dl)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	head := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(req.NSPid)), uint32(len(body)))
	if _, _, err := conn.WriteMsgUnix(head, unix.UnixRights(int(out.Fd())), nil); err != nil {
		return nil, fmt.Errorf("local: fork server: send the request: %w", err)
	}
	if _, err := conn.Write(body); err != nil {
		return nil, fmt.Errorf("local: fork server: send the request: %w", err)
	}
	reply, fds, err := readReply(conn)
	if err != nil {
		return nil, fmt.Errorf("local: fork server: %w", err)
	}
	if reply.Error != "" || len(fds) != 1 || len(reply.FDs) != 1 || reply.FDs[0] != "kernel" {
		closeFDs(fds)
		return nil, fmt.Errorf("local: fork server: the kernel's confinement failed: %s", reply.Error)
	}
	k := &forked{pidfd: fds[0], conn: conn}
	_ = conn.SetDeadline(time.Time{})
	ok = true
	return k, nil
}

// wait blocks until the template reports the kernel's wait status, or
// the connection ends (the template died: the kernel died with it).
func (k *forked) wait() (syscall.WaitStatus, error) {
	reply, fds, err := readReply(k.conn)
	closeFDs(fds)
	if err != nil {
		return 0, err
	}
	if reply.Exit == nil {
		return 0, fmt.Errorf("the template says %q", reply.Error)
	}
	return syscall.WaitStatus(*reply.Exit), nil
}

// readReply reads one JSON line (at most 64 KiB) from conn, with the
// descriptors that came with it.
func readReply(conn *net.UnixConn) (forkReply, []int, error) {
	var line []byte
	var fds []int
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for len(line) < 1<<16 {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, m := range msgs {
					if got, rerr := unix.ParseUnixRights(&m); rerr == nil {
						fds = append(fds, got...)
					}
				}
			}
		}
		if n == 1 && buf[0] == '\n' {
			var r forkReply
			if err := json.Unmarshal(line, &r); err != nil {
				closeFDs(fds)
				return r, nil, fmt.Errorf("reply %q: %w", line, err)
			}
			return r, fds, nil
		}
		line = append(line, buf[:n]...)
		if err != nil {
			closeFDs(fds)
			return forkReply{}, nil, err
		}
	}
	closeFDs(fds)
	return forkReply{}, nil, errors.New("reply over 64 KiB")
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
