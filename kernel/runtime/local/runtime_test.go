package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRuntime(t *testing.T, cfg local.Config) *local.Runtime {
	t.Helper()
	testkit.RealThing(t, "bubblewrap and ipykernel")
	if cfg.UIDBase == 0 {
		cfg.UIDBase = testkit.UIDBase(t) // no other test's, in this package or another
	}
	if cfg.StateDir == "" {
		cfg.StateDir = stateDir(t)
	}
	r, err := local.New(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// stateDir returns a temp dir whose parents sandbox uids can traverse.
func stateDir(t *testing.T) string {
	d := t.TempDir()
	for p := d; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	return d
}

type kern = runtimetest.Kernel

var seq int

func start(t *testing.T, r *local.Runtime) kern {
	t.Helper()
	seq++
	return runtimetest.Start(t, r, sandbox.Spec{ID: fmt.Sprintf("test-session-%04d", seq)})
}

func TestSandboxedKernelRuns(t *testing.T) {
	k := start(t, newRuntime(t, local.Config{}))
	k.Run(t, "x = 41")
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("x + 1 = %s", out)
	}
	out, _ := k.Run(t, "import os, numpy, pandas, matplotlib; print(os.getcwd(), os.getuid())")
	if strings.TrimSpace(out) != "/home/user 1000" {
		t.Fatalf("cwd/uid: %q", out)
	}
	// Caches and history go to /tmp: the workspace holds only user files.
	k.Run(t, "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show(); get_ipython().system('true')")
	if ents, _ := os.ReadDir(k.Sandbox.Workspace()); len(ents) != 0 {
		t.Fatalf("workspace not empty after a plot: %v", ents)
	}
}

func TestNoNetwork(t *testing.T) {
	runtimetest.NoNetwork(t, start(t, newRuntime(t, local.Config{})))
}

func TestReadOnlySystem(t *testing.T) {
	home, _ := os.UserHomeDir()
	k := start(t, newRuntime(t, local.Config{}))
	for _, p := range []string{"/usr/glassroom-probe", "/etc/glassroom-probe", filepath.Join(home, "glassroom-probe"), "/glassroom-probe"} {
		out, ename := k.Run(t, "open("+quote(p)+", 'w').write('x')")
		if ename == "" {
			t.Errorf("write to %s succeeded: %s", p, out)
		}
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s appeared on the host", p)
		}
	}
	out, _ := k.Run(t, "import os; print(sorted(os.listdir('/etc')))")
	if strings.Contains(out, "shadow") || strings.Contains(out, "ssh") {
		t.Fatalf("host /etc exposed: %s", out)
	}
	out, _ = k.Run(t, "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])")
	if strings.TrimSpace(out) != "0000000000000000" {
		t.Fatalf("CapEff = %s", out)
	}
	// The workspace and /tmp are writable.
	if out, ename := k.Run(t, "open('/tmp/a','w').write('x'); open('w.txt','w').write('y')"); ename != "" {
		t.Fatalf("workspace not writable: %s", out)
	}
	if b, err := os.ReadFile(filepath.Join(k.Sandbox.Workspace(), "w.txt")); err != nil || string(b) != "y" {
		t.Fatalf("workspace file not on host side: %v %q", err, b)
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func TestSessionsAreIsolated(t *testing.T) {
	r := newRuntime(t, local.Config{})
	a, b := start(t, r), start(t, r)
	a.Run(t, "open('secret.txt','w').write('a-only')")
	out, _ := b.Run(t, `import os
print(os.listdir('.'))
hits = []
for root in ['/run', '/tmp', '/workspace', '/proc']:
    for dp, dn, fn in os.walk(root):
        if 'secret.txt' in fn: hits.append(dp)
        if dp.count('/') > 4: dn[:] = []
print(hits)`)
	if strings.Contains(out, "secret.txt") || strings.Contains(out, "a-only") || !strings.HasSuffix(out, "\n[]\n") {
		t.Fatalf("session b sees a's workspace: %s", out)
	}
	// Variables are not shared either.
	a.Run(t, "shared = 1")
	if _, ename := b.Run(t, "shared"); ename != "NameError" {
		t.Fatalf("variable leaked across sessions")
	}
}

func TestLimits(t *testing.T) {
	k := start(t, newRuntime(t, local.Config{Common: sandbox.Common{Defaults: sandbox.Limits{MemoryMB: 1024, Pids: 64, WorkspaceMB: 16}}}))
	out, _ := k.Run(t, "import resource as r; print(r.getrlimit(r.RLIMIT_AS)[0]>>20, r.getrlimit(r.RLIMIT_NPROC)[0], r.getrlimit(r.RLIMIT_NOFILE)[0], r.getrlimit(r.RLIMIT_FSIZE)[0]>>20)")
	if strings.TrimSpace(out) != "1024 64 1024 1024" {
		t.Fatalf("rlimits: %q", out)
	}
	if _, ename := k.Run(t, "b = bytearray(2 << 30)"); ename != "MemoryError" {
		t.Fatalf("allocating past the address-space limit gave %q", ename)
	}
	if os.Geteuid() == 0 {
		out, ename := k.Run(t, "open('big','wb').write(b'x' * (32 << 20))")
		if ename != "OSError" || !strings.Contains(out, "No space left") {
			t.Fatalf("workspace quota not enforced: %s %s", ename, out)
		}
	}
	// A fork bomb is stopped by the process limit and the kernel survives.
	out, _ = k.Run(t, `import os
n = 0
try:
    for i in range(500):
        if os.fork() == 0:
            import time; time.sleep(5); os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)`)
	if !strings.Contains(out, "stopped") {
		t.Fatalf("fork bomb not stopped: %s", out)
	}
	if out, _ := k.Run(t, "1+1"); out != `"2"` {
		t.Fatalf("kernel unusable after fork bomb: %s", out)
	}
}

func TestSymlinkInSocketDirIsRefused(t *testing.T) {
	k := start(t, newRuntime(t, local.Config{}))
	// The code replaces its shell socket with a symlink to a socket of the
	// host (here: a listener the test owns).
	dir := t.TempDir()
	hostSock := filepath.Join(dir, "host.sock")
	_, accepted := runtimetest.HostListener(t, "unix", hostSock)
	k.Run(t, "import os; os.unlink('/run/glassroom/ipc/k-1'); os.symlink("+quote(hostSock)+", '/run/glassroom/ipc/k-1')")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := kernel.Dial(ctx, k.Sandbox.Connection(), kernel.Config{}, zerolog.Nop())
	if !errors.Is(err, kernel.ErrSymlink) {
		t.Fatalf("dial through planted symlink: want ErrSymlink, got %v", err)
	}
	runtimetest.NeverAccepted(t, accepted)
}

func TestDeathAndRestart(t *testing.T) {
	k := start(t, newRuntime(t, local.Config{}))
	k.Run(t, "v = 1")
	runtimetest.Dies(t, k, "import os; os._exit(3)", "exit status 3")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os.WriteFile(filepath.Join(k.Sandbox.Workspace(), "kept.txt"), []byte("k"), 0o644)
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k2 := k
	k2.Reconnect(t)
	if _, ename := k2.Run(t, "v"); ename != "NameError" {
		t.Fatal("variables survived restart")
	}
	if out, _ := k2.Run(t, "print(open('kept.txt').read())"); strings.TrimSpace(out) != "k" {
		t.Fatalf("workspace lost on restart: %q", out)
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	state := stateDir(t)
	r := newRuntime(t, local.Config{Common: sandbox.Common{StateDir: state}})
	k := start(t, r)
	k.Client.Close()
	uid := sandboxUID(t, k)
	if len(livePids(uid)) == 0 {
		t.Fatal("no kernel process found before close")
	}
	if err := k.Sandbox.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Nothing of the sandbox is left; the runtime's own shims stay.
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		if e.Name() != sandbox.ShimStateDir && e.Name() != local.ForkServerDir {
			t.Fatalf("state dir not empty after close: %v", entries)
		}
	}
	if pids := livePids(uid); len(pids) > 0 {
		t.Fatalf("sandbox processes %v still alive after Close", pids)
	}
}

// sandboxUID returns the host uid of a sandbox: as root every sandbox runs
// as its own uid, the owner of its workspace.
func sandboxUID(t *testing.T, k kern) uint32 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("per-sandbox uids need root")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(k.Sandbox.Workspace(), &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid
}

// livePids lists processes of uid that are not zombies (a zombie has no
// memory or code left; reaping it is up to the host's init).
func livePids(uid uint32) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) != nil || st.Uid != uid {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, e.Name())
	}
	return pids
}

func TestMissingBwrap(t *testing.T) {
	r := newRuntime(t, local.Config{Bwrap: "/nonexistent/bwrap"})
	_, err := r.Start(context.Background(), sandbox.Spec{ID: "nobwrap-session"})
	if !errors.Is(err, local.ErrNoBwrap) || !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("want ErrNoBwrap, got %v", err)
	}
}

func TestKernelAttackSurfaceIsClosed(t *testing.T) {
	k := start(t, newRuntime(t, local.Config{}))
	out, _ := k.Run(t, `import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(nr, *args):
    r = libc.syscall(nr, *args)
    return 0 if r >= 0 else ctypes.get_errno()
# bpf, io_uring_setup, perf_event_open, keyctl, unshare(CLONE_NEWNS), ptrace(PTRACE_TRACEME)
print("bpf", errno_of(321, 0, 0, 0), "io_uring", errno_of(425, 1, 0), "perf", errno_of(298, 0, 0, -1, -1, 0),
      "keyctl", errno_of(250, 0), "unshare", errno_of(272, 0x00020000), "ptrace", errno_of(101, 0, 0, 0, 0))
r = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
print("nested userns", r.returncode)
for p in ["/dev/x", "/dev/shm/ok"]:
    try:
        open(p, "w").write("x"); print("write", p, "ok")
    except OSError as e:
        print("write", p, "errno", e.errno)
try:
    open("/dev/shm/big", "wb").write(b"x" * (100 << 20)); print("shm unbounded")
except OSError as e:
    print("shm bounded", e.errno)
os.remove("/dev/shm/big")
import multiprocessing; multiprocessing.Lock(); print("multiprocessing ok")`)
	for _, want := range []string{"bpf 1 ", "io_uring 1 ", "perf 1 ", "keyctl 1 ", "unshare 1 ", "ptrace 1", "nested userns 1", "write /dev/x errno 30", "write /dev/shm/ok ok", "shm bounded 28", "multiprocessing ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
}

// TestSandboxMemoryIsLimitedAsAWhole: several processes, each under the
// per-process address-space limit, together exceed the sandbox's memory:
// the cgroup's OOM killer stops them, and the kernel lives on.
func TestSandboxMemoryIsLimitedAsAWhole(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	k := start(t, newRuntime(t, local.Config{Common: sandbox.Common{Defaults: sandbox.Limits{MemoryMB: 1536, Pids: 64, WorkspaceMB: 16}}}))
	out, _ := k.Run(t, `import multiprocessing as mp
def hog():
    b = bytearray(450 << 20)
    for i in range(0, len(b), 4096): b[i] = 1
    import time; time.sleep(5)
ps = [mp.Process(target=hog) for _ in range(4)]
for p in ps: p.start()
for p in ps: p.join()
print(sorted(p.exitcode for p in ps))`)
	if !strings.Contains(out, "-9") {
		t.Fatalf("no process was OOM-killed, so the sandbox used more than its memory:\n%s", out)
	}
	if out, _ := k.Run(t, "1 + 1"); out != `"2"` {
		t.Fatalf("kernel unusable: %s", out)
	}
}

var hardeningSeq int

func TestHardening(t *testing.T) {
	r := newRuntime(t, local.Config{})
	runtimetest.Hardening(t, r, runtimetest.HardeningOptions{DeniedSocketErrno: int(syscall.EAFNOSUPPORT)}, func() string {
		hardeningSeq++
		return "hardening-" + strconv.Itoa(hardeningSeq) + "-local"
	})
}

// TestCapabilities exercises the local runtime's optional capabilities (a
// state directory; sandboxes that freeze, with cgroups, so as root).
func TestCapabilities(t *testing.T) {
	n := 0
	runtimetest.Capabilities(t, newRuntime(t, local.Config{}), runtimetest.CapabilityOptions{
		NewID:    func() string { n++; return "capability-" + strconv.Itoa(n) + "-local" },
		NoFreeze: os.Geteuid() != 0,
	})
}

// TestCgroupFromTheFirstInstruction: every process of the sandbox, bwrap
// included, is in the sandbox's memory, pids and cpu cgroups (the prelude
// moved itself in before exec, nothing was moved after start), and the
// cpus limit is enforced.
func TestCgroupFromTheFirstInstruction(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	k := start(t, newRuntime(t, local.Config{Common: sandbox.Common{Defaults: sandbox.Limits{CPUs: 0.25}}}))
	id := filepath.Base(filepath.Dir(k.Sandbox.Workspace()))
	pids := livePids(sandboxUID(t, k))
	if len(pids) < 2 {
		t.Fatalf("want bwrap and the kernel, found %v", pids)
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if err != nil {
			continue
		}
		for _, ctrl := range []string{"memory", "pids", "cpu"} {
			// glassroom/<uid base>-<id>: the runtime's own (cgroupLayout.leaf)
			re := regexp.MustCompile(`:` + ctrl + `:/glassroom/\d+-` + regexp.QuoteMeta(id) + `\n`)
			if ctrl == "cpu" {
				re = regexp.MustCompile(`cpu:/glassroom/\d+-` + regexp.QuoteMeta(id) + `\n`)
			}
			if !re.Match(b) {
				comm, _ := os.ReadFile("/proc/" + pid + "/comm")
				t.Errorf("process %s (%s) not in its %s cgroup:\n%s", pid, strings.TrimSpace(string(comm)), ctrl, b)
			}
		}
	}
	quota, _ := filepath.Glob("/sys/fs/cgroup/cpu/glassroom/*-" + id + "/cpu.cfs_quota_us")
	if len(quota) != 1 {
		t.Fatalf("cpu cgroups of %s: %v", id, quota)
	}
	if q, _ := os.ReadFile(quota[0]); strings.TrimSpace(string(q)) != "25000" {
		t.Fatalf("cpu quota %q, want 25000 (0.25 of a 100000 µs period)", q)
	}
	// A busy loop for 2 s of wall time gets about 0.5 s of CPU.
	out, _ := k.Run(t, `import time
w, c = time.monotonic(), time.process_time()
while time.monotonic() - w < 2: pass
print(round(time.process_time() - c, 2))`)
	used, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if err != nil || used > 1.0 {
		t.Fatalf("CPU used in 2 s with cpus=0.25: %q", out)
	}
}

// TestStateDirIsHeldByOneRuntime: a second runtime on the state directory
// of a live one refuses to start, naming it, and touches nothing: the live
// sandbox's directory and kernel are whole. Once the first is closed, the
// directory is free.
func TestStateDirIsHeldByOneRuntime(t *testing.T) {
	state := stateDir(t)
	first := newRuntime(t, local.Config{Common: sandbox.Common{StateDir: state}})
	k := start(t, first)
	k.Run(t, "x = 41")
	_, err := local.New(local.Config{Common: sandbox.Common{StateDir: state, UIDBase: testkit.UIDBase(t)}}, zerolog.Nop())
	var inUse *sandbox.StateDirInUseError
	if !errors.As(err, &inUse) || inUse.Dir != state {
		t.Fatalf("second runtime on a held state dir: %v, want a StateDirInUseError for %s", err, state)
	}
	if _, err := os.Stat(k.Sandbox.Workspace()); err != nil {
		t.Fatalf("the live sandbox's directory: %v", err)
	}
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("the live kernel: x + 1 = %s", out)
	}
	if err := k.Sandbox.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.Close()
	newRuntime(t, local.Config{Common: sandbox.Common{StateDir: state}})
}

// TestUIDRangeIsHeldByOneRuntime: as root, a runtime claims its uid range
// host-wide: a second runtime (another gateway: its own state directory)
// on the same range, or one overlapping it, refuses to start, naming the
// holder and --uid-base, and leaves its state directory free; the live
// sandbox runs on. Once the first is closed, the range is free.
func TestUIDRangeIsHeldByOneRuntime(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("per-sandbox uids need root (otherwise sandboxes run as the gateway's uid and no range is claimed)")
	}
	base := testkit.UIDBase(t)
	first := newRuntime(t, local.Config{Common: sandbox.Common{UIDBase: base, MaxSandboxes: 512}})
	k := start(t, first)
	k.Run(t, "x = 41")
	second := stateDir(t)
	for _, b := range []int{base, base + 511} {
		_, err := local.New(local.Config{Common: sandbox.Common{StateDir: second, UIDBase: b, MaxSandboxes: 512}}, zerolog.Nop())
		var inUse *sandbox.UIDRangeInUseError
		if !errors.As(err, &inUse) || inUse.OtherBase != base || inUse.OtherSize != 512 || inUse.StateDir != first.StateDir() ||
			inUse.PID != os.Getpid() || inUse.Free != base+512 {
			t.Fatalf("a second runtime on uids %d+512 over %d+512: %v, want a UIDRangeInUseError naming the first", b, base, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "--uid-base "+strconv.Itoa(base+512)) || !strings.Contains(msg, first.StateDir()) {
			t.Fatalf("the refusal %q names neither a free --uid-base nor the holder", msg)
		}
		l, err := sandbox.LockStateDir(second) // a refused runtime keeps nothing
		if err != nil {
			t.Fatalf("the refused runtime kept its state dir: %v", err)
		}
		l.Release()
	}
	// Its neighbour's range is free.
	newRuntime(t, local.Config{Common: sandbox.Common{StateDir: second, UIDBase: base + 512, MaxSandboxes: 512}}).Close()
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("the live kernel: x + 1 = %s", out)
	}
	if err := k.Sandbox.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.Close()
	newRuntime(t, local.Config{Common: sandbox.Common{StateDir: second, UIDBase: base, MaxSandboxes: 512}})
}

// TestReconcileLeavesLiveKernelsAlone: should a runtime take a state
// directory whose previous holder still has a running kernel (the lock
// lost), its reconcile leaves that sandbox's directory alone; a directory
// whose recorded kernel is gone (or whose pid now names another process)
// is removed.
func TestReconcileLeavesLiveKernelsAlone(t *testing.T) {
	state := stateDir(t)
	// Exec'd: a forked kernel dies with its template, which dies with the
	// runtime's Close.
	first := newRuntime(t, local.Config{Common: sandbox.Common{StateDir: state}, Fork: local.ForkConfig{Disabled: true}})
	k := start(t, first)
	k.Run(t, "x = 41")
	stale := filepath.Join(state, "stale-session-0001")
	if err := os.MkdirAll(filepath.Join(stale, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	// pid 1 runs, but did not start at tick 1: a reused pid, not the kernel.
	if err := os.WriteFile(filepath.Join(stale, "kernel.pid"), []byte("1 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first.Close() // lets the next runtime in while the kernel runs
	newRuntime(t, local.Config{Common: sandbox.Common{StateDir: state}})
	if _, err := os.Stat(k.Sandbox.Workspace()); err != nil {
		t.Fatalf("the running kernel's directory was removed: %v", err)
	}
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("the running kernel: x + 1 = %s", out)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the directory of a dead kernel was left: %v", err)
	}
}

// seccompMode is the Seccomp line of the kernel's /proc/self/status:
// 2 under a filter, 0 without.
func seccompMode(t *testing.T, k kern) string {
	t.Helper()
	out, _ := k.Run(t, "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])")
	return strings.TrimSpace(out)
}

// TestRefusesAnArchitectureWithoutSeccomp: on an architecture glassroom
// has no seccomp filter for, the runtime refuses to start, unless
// InsecureNoSeccomp says to run kernels without one (and they then run
// with none); on this machine's own architecture the kernel runs under
// the filter.
func TestRefusesAnArchitectureWithoutSeccomp(t *testing.T) {
	cfg := local.Config{Common: sandbox.Common{StateDir: stateDir(t), UIDBase: testkit.UIDBase(t)}, Arch: "riscv64"}
	if err := cfg.Validate(); !errors.Is(err, local.ErrNoSeccomp) || !strings.Contains(err.Error(), "riscv64") {
		t.Fatalf("Validate: %v, want ErrNoSeccomp naming the architecture", err)
	}
	if r, err := local.New(cfg, zerolog.New(zerolog.NewTestWriter(t))); !errors.Is(err, local.ErrNoSeccomp) || r != nil {
		t.Fatalf("New: %v, want ErrNoSeccomp", err)
	}
	if got := seccompMode(t, start(t, newRuntime(t, local.Config{}))); got != "2" {
		t.Fatalf("the kernel runs with Seccomp: %s, want 2 (a filter)", got)
	}
	cfg.InsecureNoSeccomp = true
	if got := seccompMode(t, start(t, newRuntime(t, cfg))); got != "0" {
		t.Fatalf("InsecureNoSeccomp: Seccomp: %s, want 0", got)
	}
}

// TestForeignSeccompFilterKillsTheKernel: the filter checks the
// architecture first: another architecture's (arm64's on amd64) kills the
// kernel at its first system call, in the real kernel's seccomp.
func TestForeignSeccompFilterKillsTheKernel(t *testing.T) {
	foreign := "arm64"
	if runtime.GOARCH == "arm64" {
		foreign = "amd64"
	}
	r := newRuntime(t, local.Config{Arch: foreign})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := r.Start(ctx, sandbox.Spec{ID: "foreign-seccomp"})
	if err == nil {
		sb.Close(context.Background())
		t.Fatalf("a kernel started under the %s filter", foreign)
	}
	// bwrap reports its child's death by a signal as 128 + the signal.
	if sigsys := "exit status " + strconv.Itoa(128+int(syscall.SIGSYS)); !strings.Contains(err.Error(), sigsys) {
		t.Fatalf("want the kernel killed by seccomp (SIGSYS, %s), got %v", sigsys, err)
	}
}

// TestStuckFreezeIsBoundedAndUndone: a freeze the cgroup never reports
// done (a v1 freezer left FREEZING by a task it cannot stop, simulated by
// a poll that never sees FROZEN) fails after FreezeTimeout instead of
// blocking its caller for ever, and is undone: the cgroup is thawed, the
// sandbox not frozen, and the kernel answers. Once the poll sees the truth
// again, the same sandbox freezes and thaws.
func TestStuckFreezeIsBoundedAndUndone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	r := newRuntime(t, local.Config{FreezeTimeout: 300 * time.Millisecond})
	var stuck, frozenSeen atomic.Bool
	stuck.Store(true)
	local.SetFreezerStateReader(r, func(name string) ([]byte, error) {
		b, err := os.ReadFile(name)
		if !stuck.Load() {
			return b, err
		}
		switch s := string(b); {
		case strings.TrimSpace(s) == "FROZEN": // v1
			frozenSeen.Store(true)
			return []byte("FREEZING\n"), err
		case strings.Contains(s, "frozen 1"): // v2
			frozenSeen.Store(true)
			return []byte(strings.ReplaceAll(s, "frozen 1", "frozen 0")), err
		}
		return b, err
	})
	k := start(t, r)
	fz := k.Sandbox.(sandbox.Freezer)
	done := make(chan error, 1)
	go func() { done <- fz.Freeze(context.Background()) }() // no deadline of its own
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		stuck.Store(false) // let it end, so that Close can thaw it
		<-done
		t.Fatal("a freeze that never completes blocked its caller (no FreezeTimeout)")
	}
	if !errors.Is(err, sandbox.ErrFreezeTimeout) {
		t.Fatalf("Freeze: %v, want ErrFreezeTimeout", err)
	}
	if !frozenSeen.Load() {
		t.Fatal("the cgroup never froze: the test did not simulate a stuck freeze")
	}
	if fz.Frozen() {
		t.Fatal("the sandbox is still frozen after the failed freeze")
	}
	id := filepath.Base(filepath.Dir(k.Sandbox.Workspace()))
	states, _ := filepath.Glob("/sys/fs/cgroup/freezer/glassroom/*-" + id + "/freezer.state")
	if len(states) != 1 {
		t.Fatalf("freezer cgroups of %s: %v", id, states)
	}
	if b, err := os.ReadFile(states[0]); err != nil || strings.TrimSpace(string(b)) != "THAWED" {
		t.Fatalf("the cgroup was left %s", b)
	}
	if out, _ := k.Run(t, "1 + 1"); out != `"2"` {
		t.Fatalf("the kernel does not answer after the failed freeze: %s", out)
	}
	stuck.Store(false)
	if err := fz.Freeze(context.Background()); err != nil || !fz.Frozen() {
		t.Fatalf("a freeze that completes: %v (frozen %v)", err, fz.Frozen())
	}
	if err := fz.Thaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, _ := k.Run(t, "1 + 2"); out != `"3"` {
		t.Fatalf("the kernel does not answer after a thaw: %s", out)
	}
}

// TestRestartStartsClean: nothing the code planted in its start-up or
// scratch state (IPYTHONDIR under /tmp, the caches, /dev/shm, the ipc
// directory) survives a restart, sandboxed or not: without bwrap, the
// kernel's /tmp paths are a directory of the session that each start
// empties (the host's /tmp is shared by every session and lasts).
func TestRestartStartsClean(t *testing.T) {
	t.Run("bwrap", func(t *testing.T) {
		k := start(t, newRuntime(t, local.Config{}))
		runtimetest.RestartStartsClean(t, &k, "/dev/shm")
	})
	t.Run("insecure", func(t *testing.T) {
		k := start(t, newRuntime(t, local.Config{Bwrap: "/nonexistent/bwrap", InsecureNoSandbox: true}))
		out, _ := k.Run(t, "import os; print(os.environ['IPYTHONDIR'])")
		if !strings.HasPrefix(strings.TrimSpace(out), k.Sandbox.Workspace()[:len(k.Sandbox.Workspace())-len("work")]) {
			t.Fatalf("IPYTHONDIR %q is not the session's", out)
		}
		runtimetest.RestartStartsClean(t, &k)
	})
}

// TestLanguages runs the language table (runtimetest.Languages) on every
// kernel: R, JavaScript and TypeScript (Deno) as installed on this host
// by scripts/install-deps.sh, and Python.
func TestLanguages(t *testing.T) {
	n := 0
	runtimetest.RunLanguages(t, newRuntime(t, local.Config{}), func() string { n++; return "language-" + strconv.Itoa(n) + "-local" })
}

// TestKernelsInstalled: the runtime lists the kernels this host has, the
// default first, and refuses one it has not with a SpecError naming it.
func TestKernelsInstalled(t *testing.T) {
	r := newRuntime(t, local.Config{})
	var names []string
	for _, k := range r.Installed() {
		names = append(names, k.Name)
	}
	if len(names) == 0 || names[0] != sandbox.DefaultKernel || !slices.Contains(names, "bash") {
		t.Fatalf("installed: %v", names)
	}
	t.Logf("installed: %v", names)
	_, err := r.Start(context.Background(), sandbox.Spec{ID: "kernel-cobol-local", Kernel: "cobol"})
	var se *sandbox.SpecError
	if !errors.As(err, &se) || !strings.Contains(se.Public(), `unknown kernel "cobol"`) {
		t.Fatalf("start cobol: %v", err)
	}
	// What the registry's probe does not find on this host is not listed,
	// and is refused with a reason.
	for _, k := range kernels.All() {
		if k.Name == sandbox.DefaultKernel || k.Probe.Found("/") {
			if !slices.Contains(names, k.Name) {
				t.Errorf("%s is on the host but not listed", k.Name)
			}
			continue
		}
		if slices.Contains(names, k.Name) {
			t.Errorf("%s is listed but its files are not on the host", k.Name)
		}
		_, err := r.Start(context.Background(), sandbox.Spec{ID: "kernel-" + k.Name + "-local", Kernel: k.Name})
		if !errors.As(err, &se) || se.Public() != "kernel "+k.Name+" is not installed" {
			t.Errorf("start %s: %v", k.Name, err)
		}
	}
}

// kernelsInOneSandbox is run by the sandbox's Python kernel: it starts two
// JavaScript kernels next to itself with the launcher it was started with
// (as the sandbox's contexts are), has each fetch through the egress proxy,
// then kills its own egress forwarder and waits until the others' has
// taken the port over. It prints what it saw.
const kernelsInOneSandbox = `import json, os, signal, subprocess, time
from jupyter_client.blocking.client import BlockingKernelClient
argv = open("/proc/self/cmdline", "rb").read().split(b"\0")[:-1]
launcher = argv[argv.index(b"-c") + 1]
def conn(n):
    d = "/tmp/js%d" % n
    os.makedirs(d)
    f = d + "/kernel.json"
    json.dump({"transport": "ipc", "ip": d + "/k", "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": "key%d" % n, "signature_scheme": "hmac-sha256"}, open(f, "w"))
    return f
profile = __PROFILE__.encode()
procs = [subprocess.Popen([argv[0], b"-I", b"-B", b"-c", launcher, b"--kernel", b"javascript", b"--bridge", profile, b"-f", conn(n)]) for n in (1, 2)]
clients = []
for n in (1, 2):
    kc = BlockingKernelClient(connection_file="/tmp/js%d/kernel.json" % n)
    kc.load_connection_file()
    kc.start_channels()
    # jupyter_client calls a kernel dead when its first heartbeats go
    # unanswered, which a Deno starting on a loaded machine can miss: asked
    # again while the launcher runs.
    end = time.monotonic() + 120
    while True:
        try:
            kc.wait_for_ready(timeout=60)
            break
        except RuntimeError:
            if time.monotonic() > end or procs[n - 1].poll() is not None:
                raise
            kc.stop_channels()
            time.sleep(1)
            kc.start_channels()
    clients.append(kc)
def fetch(kc):
    out = []
    kc.execute_interactive("console.log(Deno.env.get('HTTP_PROXY'), await (await fetch('http://glassroom.invalid/')).text())", timeout=60,
        output_hook=lambda m: out.append(m["content"].get("text", m["content"].get("evalue", ""))) if m["msg_type"] in ("stream", "error") else None)
    return "".join(out).strip()
for kc in clients:
    print("fetch:", fetch(kc))
me = os.getpid()
mine = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me and open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")[:-1] == argv]
for p in mine:
    os.kill(p, signal.SIGKILL)
print("killed forwarders:", len(mine))
deadline = time.monotonic() + 30
got = ""
while time.monotonic() < deadline:
    got = fetch(clients[1])
    if got.endswith("proxied"):
        break
print("after:", got)
for p in procs:
    p.terminate()
print("exits:", [p.wait(timeout=30) for p in procs])`

// TestKernelsShareTheSandboxNetwork: more kernels' launchers in one
// sandbox (as its contexts start them) share its network namespace: two
// JavaScript kernels in a Python sandbox each get ports of their own, all
// three reach the egress proxy through one forwarder, and when that
// forwarder is gone another launcher's takes its port over.
func TestKernelsShareTheSandboxNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a JavaScript kernel in a Python sandbox needs the sandbox's cgroup (its address-space limit is then soft)")
	}
	// Exec'd: the test starts the launcher again from the kernel's
	// command line, which a forked kernel's does not hold.
	r := newRuntime(t, local.Config{Fork: local.ForkConfig{Disabled: true}})
	if !slices.ContainsFunc(r.Installed(), func(k sandbox.KernelSpec) bool { return k.Name == "javascript" }) {
		testkit.Unavailable(t, "Deno is not installed (scripts/install-deps.sh)")
	}
	dir := stateDir(t)
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	go func() { // the egress proxy: ends when the listener closes
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 4096))
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nproxied"))
			}()
		}
	}()
	k := runtimetest.Start(t, r, sandbox.Spec{ID: "shared-network-local", EgressSocket: sock})
	profile, err := json.Marshal(mustKernel(t, "javascript").Launch.Bridge)
	if err != nil {
		t.Fatal(err)
	}
	out, ename := k.Run(t, strings.Replace(kernelsInOneSandbox, "__PROFILE__", strconv.Quote(string(profile)), 1))
	want := "fetch: http://127.0.0.1:3128 proxied\nfetch: http://127.0.0.1:3128 proxied\nkilled forwarders: 1\nafter: http://127.0.0.1:3128 proxied\nexits: [-15, -15]\n"
	if ename != "" || out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
}

var contextSeq int

// TestContexts: contexts of a local sandbox (runtimetest.Contexts): each
// another bwrap in the sandbox's cgroup, on an ipc directory of its own
// that the first kernel's restart leaves alone.
func TestContexts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the shared memory limit needs cgroups, so root")
	}
	runtimetest.Contexts(t, newRuntime(t, local.Config{}), runtimetest.ContextOptions{
		NewID: func() string {
			contextSeq++
			return "contexts-" + strconv.Itoa(contextSeq) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		},
		OOMReason: "OOMKilled",
	})
}

// TestContextEgress: a context reaches the session's egress proxy through
// a forwarder of its own, in its own network namespace.
func TestContextEgress(t *testing.T) {
	r := newRuntime(t, local.Config{})
	runtimetest.ContextEgress(t, r, "context-egress-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestRichOutput: the python3 kernel's structured rich output (charts of
// matplotlib figures, DataFrames as JSON) on the host's matplotlib and
// pandas (runtimetest.RichCells).
func TestRichOutput(t *testing.T) {
	runtimetest.RichOutput(t, newRuntime(t, local.Config{}), "rich-output-local")
}

// TestFlushInFlight: a cell's output comes before its end while the
// kernel's I/O thread is still sending it (runtimetest.FlushInFlight).
func TestFlushInFlight(t *testing.T) {
	runtimetest.FlushInFlight(t, newRuntime(t, local.Config{}), "flush-in-flight-local")
}

// TestEarlyInterrupt: an interrupt between the kernel's busy status and
// the cell's code ends the cell (runtimetest.EarlyInterrupt).
func TestEarlyInterrupt(t *testing.T) {
	runtimetest.EarlyInterrupt(t, newRuntime(t, local.Config{}), "early-interrupt-local")
}

// TestDebugger: JupyterLab's debugger in a local sandbox (debugpy on the
// sandbox's own loopback, the cell dumped to its private /tmp), through
// the runtime's kernel connection (runtimetest.Debugger).
func TestDebugger(t *testing.T) {
	runtimetest.Debugger(t, newRuntime(t, local.Config{}), "debugger-local")
}

// TestLibraries: the python3 kernel on this host has every library of
// images/python/libraries.txt (scripts/install-deps.sh installs them), a
// seaborn plot is a PNG, a Chinese title draws with its glyphs, ipywidgets
// is 8 (images/python/trixie.txt) and its widgets and tqdm.notebook bars
// open comms, and ipykernel's debugger starts debugpy in the sandbox
// (runtimetest.RunLibraries).
func TestLibraries(t *testing.T) {
	runtimetest.RunLibraries(t, newRuntime(t, local.Config{}), "libraries-local")
}

// TestCommands: commands in a local sandbox (runtimetest.Commands): each
// another bwrap in the sandbox's cgroup, killed from the host.
func TestCommands(t *testing.T) {
	n := 0
	runtimetest.Commands(t, newRuntime(t, local.Config{}), runtimetest.CommandsOptions{OwnPIDs: true}, func() string {
		n++
		return "commands-" + strconv.Itoa(n) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	})
}

// TestFontCacheSeedsMatplotlib: a kernel's fresh matplotlib directory
// starts with the font list of Config.FontCache (built outside the
// sandbox, bound read-only), so its first plot does not scan the host's
// fonts: a probe entry planted in the cache is in the font manager the
// kernel loads.
func TestFontCacheSeedsMatplotlib(t *testing.T) {
	parent := t.TempDir()
	cache := filepath.Join(parent, "mpl")
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("/usr/bin/python3", "-I", "-c", `import json, os, matplotlib.font_manager as fm
d = os.environ["MPLCONFIGDIR"]
p = [os.path.join(d, n) for n in os.listdir(d) if n.startswith("fontlist-v")][0]
j = json.load(open(p))
probe = dict(j["ttflist"][0]); probe["name"] = "GlassroomCacheProbe"
j["ttflist"].append(probe)
json.dump(j, open(p, "w"))`)
	build.Env = append(os.Environ(), "MPLCONFIGDIR="+cache)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a font list: %v %s", err, out)
	}
	for _, d := range []string{parent, filepath.Dir(parent)} { // the sandbox's uid binds it
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	k := runtimetest.Start(t, newRuntime(t, local.Config{FontCache: cache}), sandbox.Spec{ID: "font-cache-local"})
	out, ename := k.Run(t, "import matplotlib.font_manager as fm; print(any(f.name == 'GlassroomCacheProbe' for f in fm.fontManager.ttflist))")
	if ename != "" || strings.TrimSpace(out) != "True" {
		t.Fatalf("the kernel's font manager does not come from the cache: %q %s", out, ename)
	}
}

// TestQuickMessageHandling: the launcher's date-parsing and cell_id
// shortcuts are installed and answer what ipykernel answers without them
// (runtimetest.QuickMessageHandling).
func TestQuickMessageHandling(t *testing.T) {
	runtimetest.QuickMessageHandling(t, newRuntime(t, local.Config{}), "quick-handling-local")
}

func mustKernel(t *testing.T, name string) kernels.Kernel {
	t.Helper()
	k, ok := kernels.Lookup(name)
	if !ok {
		t.Fatalf("no kernel %s in the registry", name)
	}
	return k
}
