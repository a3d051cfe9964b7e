package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"golang.org/x/sys/unix"
)

// driver starts one sandbox's kernel processes (sandbox.Driver).
type driver struct {
	r        *Runtime
	id       string
	kernel   string // the first kernel's name (sandbox.KernelSpec); "" for the default
	env      map[string]string
	limits   sandbox.Limits
	dirs     *sandbox.Dirs
	uid, gid int
	cg       *cgroup // nil without cgroups
	egress   string  // host path of the egress proxy's socket, "" for none
	// context is set on the driver of a context's kernel (contexts.go):
	// its name and working directory. Its dirs are then the context's
	// view (its own ipc directory), and it records no pid file.
	context *sandbox.ContextSpec
	// netns is the sandbox's shared network namespace (the first
	// kernel's), nil when commands cannot join it (not root); joinNet is
	// set on a command's driver that joins it (bwrap makes no new one).
	netns   *sharedNetns
	joinNet bool

	wg sync.WaitGroup // waiter goroutines
}

// process is one kernel incarnation (sandbox.Process). Its waiter
// goroutine calls Exit once the process has been reaped.
type process struct {
	inc    *sandbox.Incarnation
	cmd    *exec.Cmd
	stderr *sandbox.TailBuffer
	// pidfd refers to the sandbox's pid-namespace init (bwrap's child), or -1.
	// Once it has exited, every process of the sandbox is gone. child is
	// that init's host pid (0: unknown).
	pidfd int
	child int
	// forked is the kernel a forked start forked into the sandbox (cmd
	// is then its holder), nil for an exec'd one.
	forked *forked
	// cg and oomBefore tell an OOM kill from other deaths.
	cg        *cgroup
	oomBefore int
}

// Launch implements sandbox.Driver: it starts prelude → prlimit → bwrap →
// python, already inside the sandbox's cgroup.
func (d *driver) Launch(ctx context.Context, inc *sandbox.Incarnation) (sandbox.Process, error) {
	filter := d.r.seccomp
	if filter == nil && d.r.bwrap != "" {
		if !d.r.cfg.InsecureNoSeccomp { // New refused it already; never start without
			return nil, fmt.Errorf("local: start kernel: %w (GOARCH=%s)", ErrNoSeccomp, d.r.cfg.Arch)
		}
		d.r.log.Warn().Str("session", d.id).Str("arch", d.r.cfg.Arch).Msg("INSECURE: starting kernel WITHOUT a seccomp filter (InsecureNoSeccomp)")
	}
	how, reason := d.r.forkPlan(d.kernel, d.env, d.limits.MemoryMB, filter)
	if how == startForked {
		p, err := d.launchForked(ctx, inc, filter)
		if err == nil {
			d.r.fork.count(startForked, "")
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		d.r.log.Warn().Err(err).Str("session", d.id).Msg("the kernel could not be forked from the template: starting it exec'd")
		reason = reasonTemplate
	}
	d.r.countExec(reason)
	cmd, err := d.command(filter != nil)
	if err != nil {
		return nil, err
	}
	p, err := d.start(inc, cmd, filter, nil)
	if err != nil {
		return nil, err
	}
	d.watch(p)
	return p, nil
}

// start starts cmd (sh → prlimit → bwrap → ...) already inside the
// sandbox's cgroup, with bwrap's info descriptor (fd 3), its seccomp
// filter (fd 4) and extra (from fd 5 on), and returns its process: the
// pidfd of the sandbox's pid-namespace init (read from bwrap's info) is
// open, and the sandbox's network namespace held for commands. The
// caller starts the waiter (watch).
func (d *driver) start(inc *sandbox.Incarnation, cmd *exec.Cmd, filter []byte, extra []*os.File) (*process, error) {
	p := &process{inc: inc, cmd: cmd, stderr: &sandbox.TailBuffer{Max: 16 << 10}, pidfd: -1, cg: d.cg}
	if d.cg != nil {
		p.oomBefore = d.cg.oomKills()
	}
	cmd.Stdout = p.stderr
	cmd.Stderr = p.stderr
	var infoR *os.File
	if d.r.bwrap != "" {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("local: start kernel: %w", err)
		}
		cmd.ExtraFiles = []*os.File{w} // fd 3: bwrap --info-fd
		infoR = r
		defer r.Close()
		defer w.Close()
		if filter != nil {
			sr, sw, err := os.Pipe()
			if err != nil {
				return nil, fmt.Errorf("local: start kernel: %w", err)
			}
			defer sr.Close()
			_, err = sw.Write(filter) // a few hundred bytes: fits the pipe buffer
			sw.Close()
			if err != nil {
				return nil, fmt.Errorf("local: seccomp filter: %w", err)
			}
			cmd.ExtraFiles = append(cmd.ExtraFiles, sr) // fd 4: bwrap --seccomp
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, extra...)
	}
	if d.cg != nil {
		closeFD, err := d.cg.cloneInto(cmd)
		if err != nil {
			return nil, err
		}
		defer closeFD()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local: start kernel: %w", err)
	}
	if infoR != nil {
		cmd.ExtraFiles[0].Close()
		p.pidfd, p.child = readChildPidfd(infoR)
		if d.context == nil && d.netns != nil {
			if err := d.netns.hold(p.child, p.pidfd, d.uid); err != nil {
				d.r.log.Warn().Err(err).Str("session", d.id).Msg("commands get a network namespace of their own")
			}
		}
	}
	return p, nil
}

// watch starts p's waiter (owned by the driver: Destroy waits for it)
// and, for a sandbox's first kernel, records its pid for the reconcile
// of a later runtime on this state directory: it leaves a directory
// whose kernel still runs alone. (A context lives no longer than the
// sandbox.)
func (d *driver) watch(p *process) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		p.wait()
	}()
	if d.context != nil {
		return
	}
	if err := writePidFile(d.dirs.Path(), p.cmd.Process.Pid); err != nil {
		d.r.log.Warn().Err(err).Str("session", d.id).Msg("could not record the kernel's pid")
	}
}

// Destroy implements sandbox.Driver: Base has killed the process; wait for
// the waiters to have reaped it (bounded by ctx).
func (d *driver) Destroy(ctx context.Context) error {
	if d.context == nil && d.netns != nil {
		d.netns.close()
	}
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("local: waiting for the kernel of %s to exit: %w", d.id, ctx.Err())
	}
}

// Freeze implements sandbox.DriverFreezer with the sandbox's cgroup
// freezer: every process of the sandbox stops at once.
func (d *driver) Freeze(ctx context.Context) error {
	if d.cg == nil {
		return sandbox.ErrNoFreeze
	}
	if err := d.cg.setFrozen(ctx, true); err != nil {
		if errors.Is(err, errNoFreezer) {
			return sandbox.ErrNoFreeze
		}
		return err
	}
	return nil
}

// Thaw implements sandbox.DriverFreezer.
func (d *driver) Thaw(ctx context.Context) error {
	if d.cg == nil {
		return nil
	}
	return d.cg.setFrozen(ctx, false)
}

// readChildPidfd reads bwrap's info JSON and opens a pidfd for the
// sandbox's init process, whose pid it also returns. The pidfd is -1 if
// that fails (the process group kill still applies).
func readChildPidfd(r *os.File) (int, int) {
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil || info.ChildPid <= 0 {
		return -1, 0
	}
	fd, err := unix.PidfdOpen(info.ChildPid, 0)
	if err != nil {
		return -1, 0
	}
	return fd, info.ChildPid
}

// prelude runs first, as the sandbox's uid, before anything the sandbox
// runs: it raises the whole sandbox's oom_score_adj to 500 (far above the
// gateway's -900 and the host's processes; a command's launcher raises
// itself further, to 1000, so that the OOM killer takes a command before a
// kernel) and (with cgroup v1) moves itself into the sandbox's cgroups,
// then execs the rest.
// Everything the kernel ever starts is thus confined from its first
// instruction.
func prelude(procs []string) string {
	var b strings.Builder
	b.WriteString("echo 500 > /proc/self/oom_score_adj || exit 125\n")
	for _, f := range procs {
		fmt.Fprintf(&b, "echo 0 > '%s' || exit 125\n", f)
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

// command builds sh (prelude) → prlimit → bwrap → python.
func (d *driver) command(seccomp bool) (*exec.Cmd, error) {
	py := sandbox.KernelArgv(d.r.cfg.Python, d.kernel, sandbox.ConnFile)
	return d.commandLine(d.prlimit(), py, d.env, seccomp, true)
}

// rlimits are the sandbox's rlimits (-1: unlimited).
func (d *driver) rlimits() []rlimitJSON {
	cfg := d.r.cfg
	mem := int64(d.limits.MemoryMB) << 20
	var out []rlimitJSON
	switch {
	case d.cg != nil:
		// The cgroup bounds the sandbox's memory: the address-space
		// limit is a soft one, which a kernel whose runtime reserves far
		// more than it uses (V8) may lift; the launcher does for Deno.
		out = append(out, rlimitJSON{"AS", mem, -1})
	case !needsAddressSpace(d.kernel):
		out = append(out, rlimitJSON{"AS", mem, mem})
	}
	nofile, fsize, nproc := int64(cfg.NoFile), int64(cfg.FileSizeMB)<<20, int64(d.limits.Pids)
	return append(out, rlimitJSON{"NOFILE", nofile, nofile}, rlimitJSON{"FSIZE", fsize, fsize},
		rlimitJSON{"NPROC", nproc, nproc}, rlimitJSON{"CORE", 0, 0})
}

// prlimit is the prlimit command of the sandbox's rlimits, up to "--".
func (d *driver) prlimit() []string {
	args := []string{"prlimit"}
	for _, l := range d.rlimits() {
		v := strconv.FormatInt(l.Soft, 10)
		switch {
		case l.Hard < 0:
			v += ":unlimited"
		case l.Hard != l.Soft:
			v += ":" + strconv.FormatInt(l.Hard, 10)
		}
		args = append(args, "--"+strings.ToLower(l.Name)+"="+v)
	}
	return append(args, "--")
}

// commandLine builds sh (prelude) → prlimit (args, up to "--") → bwrap →
// py, with env; the sandbox's ipc directory is bound only with bindIPC.
func (d *driver) commandLine(args, py []string, env map[string]string, seccomp, bindIPC bool) (*exec.Cmd, error) {
	var procs []string
	if d.cg != nil {
		procs = d.cg.procsFiles()
	}
	var cwd string
	if d.r.bwrap == "" {
		d.r.log.Warn().Str("session", d.id).Msg("INSECURE: starting kernel WITHOUT a sandbox (InsecureNoSandbox); code has the gateway user's full access")
		py[len(py)-1] = filepath.Join(d.dirs.IPC(), sandbox.ConnectionFileName)
		scratch, err := d.freshScratch()
		if err != nil {
			return nil, err
		}
		env = make(map[string]string, len(d.env))
		for k, v := range d.env {
			if strings.HasPrefix(v, "/tmp/") { // IPYTHONDIR, the caches: the session's, fresh
				v = filepath.Join(scratch, v[len("/tmp/"):])
			}
			env[k] = v
		}
		env["HOME"] = d.dirs.Work()
		delete(env, sandbox.EgressSocketEnv) // it has the host's network: no forwarder
		args = append(args, py...)
		cwd = d.dirs.Work() + strings.TrimPrefix(d.cwd(), sandbox.WorkDir)
	} else {
		args = append(append(args, d.bwrapArgs(env, seccomp, bindIPC)...), py...)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", prelude(procs), "glassroom-kernel"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if d.r.bwrap == "" {
		cmd.Dir = cwd
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if d.r.root {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(d.uid), Gid: uint32(d.gid), Groups: []uint32{}}
	}
	return cmd, nil
}

// freshScratch empties (creating) the session's scratch directory, which
// stands for the sandbox's /tmp in the environment of a kernel without
// bwrap (the host's /tmp is shared by every session and outlives them),
// and returns it: like a sandbox's tmpfs, each kernel start finds it
// empty, so nothing a kernel left there (IPython startup files under
// IPYTHONDIR) steers the next.
func (d *driver) freshScratch() (string, error) {
	dir := filepath.Join(d.dirs.Path(), d.scratchName())
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("local: empty scratch directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("local: scratch directory: %w", err)
	}
	if err := os.Chown(dir, d.uid, d.gid); err != nil {
		return "", fmt.Errorf("local: scratch directory: %w", err)
	}
	return dir, nil
}

// scratchName is the name, in the session directory, of the kernel's
// scratch directory (without bwrap): each kernel has its own.
func (d *driver) scratchName() string {
	if d.context != nil {
		return "tmp-ctx-" + d.context.Name
	}
	return "tmp"
}

// cwd is the kernel's working directory inside the sandbox.
func (d *driver) cwd() string {
	if d.context != nil {
		return d.context.Cwd
	}
	return sandbox.WorkDir
}

// bwrapArgs are bubblewrap's arguments, up to and including "--".
func (d *driver) bwrapArgs(env map[string]string, seccomp, bindIPC bool) []string {
	b := []string{d.r.bwrap,
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", "1000", "--gid", "1000", "--hostname", "glassroom",
		"--ro-bind", "/usr", "/usr",
	}
	if !d.joinNet { // never without a namespace joined instead (startInNetns)
		b = append(b, "--unshare-net")
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		if t, err := os.Readlink("/" + l); err == nil {
			b = append(b, "--symlink", t, "/"+l)
		}
	}
	etc := []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
		"/etc/fonts", "/etc/localtime", "/etc/mime.types"}
	for _, k := range kernels.All() { // every kernel's, whichever the sandbox starts: its contexts may start any
		etc = append(etc, k.HostConfig...)
	}
	for _, e := range etc {
		if _, err := os.Stat(e); err == nil {
			b = append(b, "--ro-bind", e, e)
		}
	}
	b = append(b,
		"--ro-bind", filepath.Join(d.dirs.Path(), "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(d.dirs.Path(), "group"), "/etc/group",
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(64<<20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--size", strconv.Itoa(256<<20), "--tmpfs", "/tmp",
		"--bind", d.dirs.Work(), sandbox.WorkDir,
		"--bind", d.dirs.Work(), sandbox.WorkspaceAlias,
		"--ro-bind", filepath.Join(d.r.cfg.StateDir, sandbox.ShimStateDir), sandbox.ShimDir,
	)
	if st, err := os.Stat(d.r.cfg.FontCache); err == nil && st.IsDir() && filepath.IsAbs(d.r.cfg.FontCache) {
		b = append(b, "--ro-bind", d.r.cfg.FontCache, sandbox.FontCacheDir)
	}
	if bindIPC {
		b = append(b, "--bind", d.dirs.IPC(), sandbox.IPCDir)
	}
	if d.egress != "" { // read-only: the sandbox can connect to the socket, not replace it
		b = append(b, "--ro-bind", filepath.Dir(d.egress), sandbox.EgressDir)
	}
	b = append(b,
		"--remount-ro", "/",
		"--chdir", d.cwd(),
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
	return append(b, "--")
}

func (p *process) wait() {
	var err error
	if p.forked != nil {
		// The kernel's end, as the template reports it; then the
		// holder's, which takes the sandbox's pid namespace with it.
		err = p.forked.end()
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
	} else {
		err = p.cmd.Wait()
	}
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
	// The cgroup is the sandbox's, shared by all its kernels: an OOM kill
	// there is this kernel's only if it died of SIGKILL (bwrap exits
	// with 128 + the signal of its child).
	switch {
	case p.cg != nil && diedOfSIGKILL(err) && p.cg.oomKills() > p.oomBefore:
		p.inc.Exit("OOMKilled: the sandbox exceeded its memory limit")
	case err != nil:
		p.inc.Exit(err.Error())
	default:
		p.inc.Exit("exited")
	}
}

// diedOfSIGKILL reports whether err, bwrap's Wait error, says that the
// kernel (bwrap's child: bwrap exits with 128 + its signal) or bwrap was
// killed by SIGKILL, as the OOM killer does.
func diedOfSIGKILL(err error) bool {
	var forked *forkedExit
	if errors.As(err, &forked) {
		return forked.status.Signaled() && forked.status.Signal() == syscall.SIGKILL
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return exit.ExitCode() == 128+int(syscall.SIGKILL) || (ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL)
}

// Kill implements sandbox.Process: it ends the whole process group (bwrap
// and, through its pid namespace and die-with-parent, everything inside).
func (p *process) Kill(context.Context) error {
	if p.forked != nil {
		p.forked.kill()
	}
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	return nil
}

// Diagnostics implements sandbox.Process.
func (p *process) Diagnostics() string { return p.stderr.String() }

// Usage implements sandbox.DriverUsage from the sandbox's cgroup.
func (d *driver) Usage(context.Context) (sandbox.Usage, error) {
	if d.cg == nil {
		return sandbox.Usage{}, sandbox.ErrNoUsage
	}
	return d.cg.usage()
}
