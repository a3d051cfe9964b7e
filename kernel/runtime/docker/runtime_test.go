package docker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRuntime connects to Docker. Outside CI a missing engine or image skips
// loudly; in CI (CI=true) it fails, because these tests must run there.
func newRuntime(t *testing.T, cfg docker.Config) *docker.Runtime {
	t.Helper()
	testkit.RealThing(t, "Docker")
	if cfg.Instance == "" {
		cfg.Instance = "test-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	}
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
		os.Chmod(cfg.StateDir, 0o711)
	}
	if cfg.UIDBase == 0 {
		cfg.UIDBase = testkit.UIDBase(t) // no other test's, in this package or another
	}
	if os.Getenv("GLASSROOM_TEST_OCI_RUNTIME") != "" {
		cfg.OCIRuntime = os.Getenv("GLASSROOM_TEST_OCI_RUNTIME")
	}
	// Another image than glassroom/python-kernel:latest (a trial build).
	if cfg.Image == "" && os.Getenv("GLASSROOM_TEST_KERNEL_IMAGE") != "" {
		cfg.Image = os.Getenv("GLASSROOM_TEST_KERNEL_IMAGE")
	}
	r, err := docker.New(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker runtime unavailable in CI: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING DOCKER TESTS: %v ***\n*** run `make image` (starts dockerd, builds the kernel image) ***\n\n", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// underGVisor reports whether the tests' OCI runtime is gVisor (runsc,
// or a runtime whose binary is runsc).
func underGVisor(t *testing.T) bool {
	t.Helper()
	name := os.Getenv("GLASSROOM_TEST_OCI_RUNTIME")
	if name == "" {
		return false
	}
	out, err := exec.Command("docker", "info", "--format", "{{with index .Runtimes \""+name+"\"}}{{.Path}}{{end}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker info: %v %s", err, out)
	}
	return name == "runsc" || filepath.Base(strings.TrimSpace(string(out))) == "runsc"
}

type kern = runtimetest.Kernel

var n int

func start(t *testing.T, r *docker.Runtime, limits sandbox.Limits) kern {
	t.Helper()
	n++
	return runtimetest.Start(t, r, sandbox.Spec{ID: "docker-test-" + strconv.Itoa(n) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10), Limits: limits})
}

func inspect(t *testing.T, format, name string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", format, name).CombinedOutput()
	if err != nil {
		t.Fatalf("docker inspect %s: %v %s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestContainerIsLockedDown(t *testing.T) {
	base := testkit.UIDBase(t)
	r := newRuntime(t, docker.Config{Common: sandbox.Common{UIDBase: base}})
	k := start(t, r, sandbox.Limits{MemoryMB: 512, Pids: 64})
	k.Run(t, "x = 41")
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("x + 1 = %s", out)
	}
	id := containerOf(t, r, k)
	checks := map[string]string{
		"{{.HostConfig.NetworkMode}}":                         "none",
		"{{.HostConfig.ReadonlyRootfs}}":                      "true",
		"{{.HostConfig.CapDrop}}":                             "[ALL]",
		"{{index .HostConfig.SecurityOpt 0}}":                 "no-new-privileges",
		"{{.HostConfig.OomScoreAdj}}":                         "500",
		"{{.HostConfig.LogConfig.Type}}":                      "json-file",
		"{{index .HostConfig.LogConfig.Config \"max-size\"}}": "1048576",
		"{{.HostConfig.ShmSize}}":                             strconv.Itoa(64 << 20),
		"{{.HostConfig.PidsLimit}}":                           "64",
		"{{.HostConfig.Memory}}":                              strconv.Itoa(512 << 20),
		"{{.HostConfig.MemorySwap}}":                          strconv.Itoa(512 << 20),
		"{{.HostConfig.Runtime}}":                             "runc",
	}
	if rt := os.Getenv("GLASSROOM_TEST_OCI_RUNTIME"); rt != "" {
		checks["{{.HostConfig.Runtime}}"] = rt
	}
	nproc := `{{range .HostConfig.Ulimits}}{{if eq .Name "nproc"}}{{.Soft}} {{.Hard}}{{end}}{{end}}`
	checks[nproc] = "64 64"
	if underGVisor(t) {
		// The sentry enforces the pids, at most memory/40 MB (here 16);
		// the host's limit leaves room for the sentry's own threads.
		checks[nproc] = "16 16"
		checks["{{.HostConfig.PidsLimit}}"] = strconv.Itoa(16*16 + 512)
	}
	// The host's processes of the sandbox (the kernel's, or gVisor's
	// sentry) are far before the gateway and the host's processes in the
	// OOM killer's choice (a command, at 1000, before them).
	if b, err := os.ReadFile("/proc/" + inspect(t, "{{.State.Pid}}", id) + "/oom_score_adj"); err != nil || strings.TrimSpace(string(b)) != "500" {
		t.Errorf("host oom_score_adj of the container's process: %q %v", b, err)
	}
	for f, want := range checks {
		if got := inspect(t, f, id); got != want {
			t.Errorf("inspect %s = %q, want %q", f, got, want)
		}
	}
	if got := inspect(t, "{{index .HostConfig.SecurityOpt 1}}", id); !strings.HasPrefix(got, "seccomp=") || !strings.Contains(got, "AF_NETLINK") {
		t.Errorf("glassroom's seccomp profile not applied: %.80s", got)
	}
	// The session directory's ipc, workspace (twice: WorkDir and its
	// alias) and contexts' ipc directories, and its passwd and group files
	// and deadline directory (read-only), nothing else of the host.
	session := filepath.Dir(k.Sandbox.Workspace())
	mounts := strings.Fields(inspect(t, "{{range .Mounts}}{{.Source}}:{{.Destination}}:{{.RW}} {{end}}", id))
	slices.Sort(mounts)
	want := []string{session + "/ctx:/run/glassroom/ctx:true", session + "/deadline:/run/glassroom/deadline:false", session + "/group:/etc/group:false", session + "/ipc:/run/glassroom/ipc:true",
		session + "/passwd:/etc/passwd:false", session + "/work:/home/user:true", session + "/work:/workspace:true"}
	if !slices.Equal(mounts, want) {
		t.Errorf("host paths in the container: %q, want %q", mounts, want)
	}
	if out, _ := k.Run(t, "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])"); strings.TrimSpace(out) != "0000000000000000" {
		t.Errorf("CapEff = %q", out)
	}
	user := inspect(t, "{{.Config.User}}", id)
	uid, _ := strconv.Atoi(strings.Split(user, ":")[0])
	if uid < base || uid >= base+sandbox.DefaultMaxSandboxes || user != strconv.Itoa(uid)+":"+strconv.Itoa(uid) {
		t.Errorf("container user %q: want a per-session unprivileged uid", user)
	}
	if out, _ := k.Run(t, "import os; print(os.getuid(), os.getcwd())"); strings.TrimSpace(out) != strconv.Itoa(uid)+" /home/user" {
		t.Errorf("uid/cwd = %q", out)
	}
}

func containerOf(t *testing.T, r *docker.Runtime, k kern) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-q", "--no-trunc", "--filter", "label=io.glassroom.managed=true").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range strings.Fields(string(out)) {
		if strings.Contains(inspect(t, "{{range .Mounts}}{{.Source}} {{end}}", id), k.Sandbox.Workspace()) {
			return id
		}
	}
	t.Fatal("container not found")
	return ""
}

func TestNoNetwork(t *testing.T) {
	runtimetest.NoNetwork(t, start(t, newRuntime(t, docker.Config{}), sandbox.Limits{}))
}

func TestContainment(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	bystander := start(t, r, sandbox.Limits{})
	bystander.Run(t, "alive = 1")
	mem := 256
	if underGVisor(t) {
		// Each forked kernel costs gVisor about 20 MB: with 256 MB the fork
		// bomb below would meet the memory limit before its 16 pids.
		mem = 512
	}
	k := start(t, r, sandbox.Limits{MemoryMB: mem, Pids: 48, WorkspaceMB: 16})

	t.Run("writes outside workspace and tmp fail", func(t *testing.T) {
		for _, p := range []string{"/etc/x", "/usr/x", "/x", "/run/glassroom/x", "/home/x"} {
			if out, ename := k.Run(t, "open('"+p+"', 'w').write('x')"); ename == "" {
				t.Errorf("write to %s succeeded: %s", p, out)
			}
		}
		if _, ename := k.Run(t, "open('/tmp/ok','w').write('x'); open('ok','w').write('y')"); ename != "" {
			t.Errorf("workspace or /tmp not writable")
		}
	})
	t.Run("fork bomb hits the pids limit", func(t *testing.T) {
		out, _ := k.Run(t, `import os, time
kids = 0
try:
    for i in range(500):
        pid = os.fork()
        if pid == 0:
            time.sleep(3); os._exit(0)
        kids += 1
except OSError as e:
    print("stopped", kids, e.errno)`)
		if !strings.Contains(out, "stopped") {
			t.Fatalf("fork bomb not stopped: %s", out)
		}
		time.Sleep(3500 * time.Millisecond)
		k.Run(t, "import os\ntry:\n    while os.waitpid(-1, 0): pass\nexcept ChildProcessError: pass")
	})
	t.Run("filling the workspace stops at its size", func(t *testing.T) {
		out, ename := k.Run(t, "f = open('fill', 'wb')\ntry:\n    for i in range(64): f.write(b'x' * (1 << 20)); f.flush()\nfinally:\n    import os; print(os.path.getsize('fill') >> 20)")
		if ename != "OSError" || !strings.Contains(out, "No space left") {
			t.Fatalf("workspace not limited: %s %s", ename, out)
		}
		k.Run(t, "import os; os.remove('fill')")
	})
	t.Run("memory past the limit dies with OOM", func(t *testing.T) {
		runtimetest.Dies(t, k, "b = []\nwhile True: b.append(bytearray(16 << 20))", "OOMKilled")
	})
	if out, _ := bystander.Run(t, "alive + 1"); out != `"2"` {
		t.Fatalf("bystander session hurt: %s", out)
	}
}

func TestRestartKeepsWorkspaceAndCloseRemovesContainer(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	k := start(t, r, sandbox.Limits{})
	id := containerOf(t, r, k)
	k.Run(t, "v = 1; open('kept.txt','w').write('k')")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k.Client.Close()
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k2 := k
	k2.Reconnect(t)
	if _, ename := k2.Run(t, "v"); ename != "NameError" {
		t.Fatal("variables survived restart")
	}
	if out, _ := k2.Run(t, "print(open('kept.txt').read())"); strings.TrimSpace(out) != "k" {
		t.Fatalf("workspace lost: %q", out)
	}
	if err := k.Sandbox.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cli, _ := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	defer cli.Close()
	if _, err := cli.ContainerInspect(ctx, id); !cerrdefs.IsNotFound(err) {
		t.Fatalf("container still exists after Close: %v", err)
	}
	if _, err := os.Stat(k.Sandbox.Workspace()); !os.IsNotExist(err) {
		t.Fatalf("workspace dir left behind: %v", err)
	}
}

func TestOrphansAreReconciled(t *testing.T) {
	state := t.TempDir()
	os.Chmod(state, 0o711)
	cfg := docker.Config{Instance: "orphan-test-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10), Common: sandbox.Common{StateDir: state}}
	first := newRuntime(t, cfg)
	k := start(t, first, sandbox.Limits{})
	id := containerOf(t, first, k)
	// The first gateway dies (its state dir's lock goes with it); the
	// next one, same instance and state dir, is a restarted gateway: the
	// first one's container has no owner any more.
	first.Close()
	newRuntime(t, cfg)
	cli, _ := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	defer cli.Close()
	if _, err := cli.ContainerInspect(context.Background(), id); !cerrdefs.IsNotFound(err) {
		t.Fatalf("orphan not removed: %v", err)
	}
}

// TestGatewaysOfOneInstance: gateways of one instance with different state
// directories (`glassroom serve` and `glassroom mcp --embedded`, both
// instance "default") leave each other's containers alone; one on the
// state directory of a live one refuses to start.
func TestGatewaysOfOneInstance(t *testing.T) {
	cfg := docker.Config{Instance: "shared-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)}
	first := newRuntime(t, cfg)
	k := start(t, first, sandbox.Limits{})
	k.Run(t, "x = 41")
	id := containerOf(t, first, k)
	if got, want := inspect(t, `{{index .Config.Labels "io.glassroom.state-dir"}}`, id), first.StateDir(); got != want {
		t.Fatalf("state-dir label %q, want %q", got, want)
	}
	// Same instance and state dir, while the first lives: refused.
	same := cfg
	same.StateDir, same.UIDBase = first.StateDir(), testkit.UIDBase(t)
	_, err := docker.New(context.Background(), same, zerolog.Nop())
	var inUse *sandbox.StateDirInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("a second runtime on a held state dir: %v", err)
	}
	// Same instance, a state dir of its own: it reconciles at start (not
	// adopting) and again on demand, and leaves the first one's alone.
	second := newRuntime(t, cfg)
	if err := second.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if state := inspect(t, "{{.State.Status}}", id); state != "running" {
		t.Fatalf("the other gateway's container: %s", state)
	}
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("the other gateway's kernel: x + 1 = %s", out)
	}
	if _, err := os.Stat(k.Sandbox.Workspace()); err != nil {
		t.Fatalf("the other gateway's session directory: %v", err)
	}
}

// TestUIDRangeIsHeldByOneRuntime: a runtime claims its uid range
// host-wide (containers run as those uids whoever runs the gateway): a
// second runtime with a state dir of its own on an overlapping range
// refuses to start, naming the holder and --uid-base; once the first is
// closed, the range is free.
func TestUIDRangeIsHeldByOneRuntime(t *testing.T) {
	base := testkit.UIDBase(t)
	first := newRuntime(t, docker.Config{Common: sandbox.Common{UIDBase: base}})
	state := t.TempDir()
	os.Chmod(state, 0o711)
	// The second range overlaps the first inside the test's own block
	// (base+512, 256 sandboxes): past it, it would overlap the next
	// block, which another test may hold.
	cfg := docker.Config{Instance: "uids-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10),
		Common: sandbox.Common{StateDir: state, UIDBase: base + 512, MaxSandboxes: 256}}
	second, err := docker.New(context.Background(), cfg, zerolog.Nop())
	var inUse *sandbox.UIDRangeInUseError
	switch {
	case err == nil && os.Geteuid() != 0:
		second.Close()
		t.Log("not root: the claim directory is root's, so the first runtime claimed nothing (it warned)")
	case !errors.As(err, &inUse) || inUse.OtherBase != base || inUse.StateDir != first.StateDir() || !strings.Contains(err.Error(), "--uid-base"):
		t.Fatalf("a second runtime on uids %d+ over %d+: %v, want a UIDRangeInUseError naming the first and --uid-base", base+512, base, err)
	}
	first.Close()
	newRuntime(t, cfg)
}

func TestCloseWithCancelledContextStillRemoves(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	k := start(t, r, sandbox.Limits{})
	id := containerOf(t, r, k)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the DELETE's client went away
	done := make(chan error, 1)
	go func() { done <- k.Sandbox.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung")
	}
	cli, _ := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	defer cli.Close()
	if _, err := cli.ContainerInspect(context.Background(), id); !cerrdefs.IsNotFound(err) {
		t.Fatalf("container left behind: %v", err)
	}
}

// TestCapabilities exercises the Docker runtime's optional capabilities:
// a state directory, sandboxes that freeze (docker pause) and outlive the
// gateway, adopted by the next one (same instance and state directory).
func TestCapabilities(t *testing.T) {
	state := t.TempDir()
	os.Chmod(state, 0o711)
	// The successor adopts on the same uids (a sandbox is adopted only on
	// the uids it started on).
	cfg := docker.Config{Instance: "capability-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10), Common: sandbox.Common{StateDir: state, UIDBase: testkit.UIDBase(t)}}
	first := newRuntime(t, cfg)
	n := 0
	runtimetest.Capabilities(t, first, runtimetest.CapabilityOptions{
		NewID: func() string {
			n++
			return "capability-" + strconv.Itoa(n) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		},
		Successor: func(t *testing.T) sandbox.Adopter {
			first.Close() // the gateway goes away (its sandbox detached) and the next one starts
			next := cfg
			next.Adopting = true
			return newRuntime(t, next)
		},
	})
}

var hardeningSeq int

func TestHardening(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	opts := runtimetest.HardeningOptions{DeniedSocketErrno: int(syscall.EPERM), OwnProc: underGVisor(t)}
	runtimetest.Hardening(t, r, opts, func() string {
		hardeningSeq++
		return "hardening-" + strconv.Itoa(hardeningSeq) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	})
}

// TestRestartStartsClean: nothing the code planted in its start-up or
// scratch state (IPYTHONDIR under /tmp, the caches, /dev/shm, the ipc
// directory) survives a restart of its container.
func TestRestartStartsClean(t *testing.T) {
	k := start(t, newRuntime(t, docker.Config{}), sandbox.Limits{})
	runtimetest.RestartStartsClean(t, &k, "/dev/shm")
}

// forkBomb is `while True: os.fork()`, whose processes, once a fork
// fails, hold their place a moment and leave (the cell's own process
// raises the error to the client).
const forkBomb = `import os, time
top = os.getpid()
try:
    while True:
        os.fork()
finally:
    if os.getpid() != top:
        time.sleep(1)
        os._exit(0)`

// TestForkBombStopsAtThePidsLimit: a fork bomb stops at the session's
// pids limit with BlockingIOError (EAGAIN), and the kernel lives on with
// its variables and can start processes again; under gVisor as under
// runc (gVisor's sentry enforces the limit; the host's leaves room for
// the sentry's own threads).
func TestForkBombStopsAtThePidsLimit(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	k := start(t, r, sandbox.Limits{}) // 128 pids and 2048 MB; 48 pids under gVisor
	k.Run(t, "x = 41")
	began := time.Now()
	out, ename := k.Run(t, forkBomb)
	t.Logf("the fork bomb stopped after %v: %s", time.Since(began).Round(time.Millisecond), out)
	if ename != "BlockingIOError" || !strings.Contains(out, "Resource temporarily unavailable") {
		t.Fatalf("want BlockingIOError (EAGAIN), got %s: %s", ename, out)
	}
	if out, _ := k.Run(t, "x + 1"); out != `"42"` {
		t.Fatalf("x + 1 = %s after the fork bomb", out)
	}
	// Once the bomb's processes have left (the cell's children are waited
	// for; their children go to init), the kernel starts processes again.
	out, ename = k.Run(t, `import os, subprocess, time
try:
    while True: os.waitpid(-1, 0)
except ChildProcessError:
    pass
for attempt in range(300):
    try:
        print(subprocess.run(["echo", "forks again"], capture_output=True, text=True).stdout.strip()); break
    except BlockingIOError:
        time.sleep(0.1)`)
	if ename != "" || strings.TrimSpace(out) != "forks again" {
		t.Fatalf("after the fork bomb: %s %s", ename, out)
	}
}

// TestGVisorSandboxDeathIsExplained: what a client sees when a gVisor
// sandbox dies anyway (its sentry cannot create a host task: here the
// test lowers the host's pids limit of the running sandbox below what a
// few forks need; a kernel whose forks outgrow the host's limit or its
// memory ends so too): the kernel is dead, and the exit reason says that
// the gVisor sandbox stopped, not just "exit code 2".
func TestGVisorSandboxDeathIsExplained(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	if !underGVisor(t) {
		t.Skip("gVisor only: run with GLASSROOM_TEST_OCI_RUNTIME=runsc")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the test lowers the sandbox's host pids limit in its cgroup: run it as root")
	}
	k := start(t, r, sandbox.Limits{})
	k.Run(t, "x = 1")
	dir := hostCgroupDir(t, inspect(t, "{{.State.Pid}}", containerOf(t, r, k)), "pids")
	cur, err := os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		t.Fatalf("the sandbox's pids cgroup (%s): %v", dir, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(cur)))
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(n+4)), 0o644); err != nil {
		t.Fatal(err)
	}
	runtimetest.Dies(t, k, "import os, time\nfor i in range(40):\n    if os.fork() == 0:\n        time.sleep(30); os._exit(0)", "the gVisor sandbox stopped")
}

// TestLanguages runs the language table (runtimetest.Languages) on the
// kernel image's kernels. The runtime does not list its kernels yet: every
// kernel but python3 skips outside CI and fails in CI, until the image has
// R and Deno and the runtime says so (sandbox.KernelLister).
func TestLanguages(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	n := 0
	runtimetest.RunLanguages(t, r, func() string {
		n++
		return "language-" + strconv.Itoa(n) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	})
}

var contextSeq int

// TestContexts: contexts of a docker sandbox (runtimetest.Contexts): each
// a docker exec into the session's container, so in its cgroup; they end
// with the container when its first kernel restarts, and say so. Under
// gVisor too (GLASSROOM_TEST_OCI_RUNTIME=runsc).
func TestContexts(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	runtimetest.Contexts(t, r, runtimetest.ContextOptions{
		NewID: func() string {
			contextSeq++
			return "contexts-" + strconv.Itoa(contextSeq) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		},
		FirstRestartEndsContexts: true,
		OOMReason:                "OOMKilled",
		// gVisor: the host's OOM killer ends the sandbox's sentry, so
		// every kernel (under runc it picks the largest process).
		OOMEndsSandbox: underGVisor(t),
	})
}

// TestContextEgress: a context reaches the session's egress proxy through
// the first kernel's forwarder, on the container's loopback they share.
func TestContextEgress(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	runtimetest.ContextEgress(t, r, "context-egress-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestContextsAndAdoption: detaching a sandbox ends its contexts (no other
// gateway could reach them) and refuses new ones; the next gateway adopts
// the first kernel, variables intact, and starts contexts in it again.
func TestContextsAndAdoption(t *testing.T) {
	state := t.TempDir()
	os.Chmod(state, 0o711)
	cfg := docker.Config{Instance: "ctx-adopt-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10), Common: sandbox.Common{StateDir: state, UIDBase: testkit.UIDBase(t)}}
	first := newRuntime(t, cfg)
	k := runtimetest.Start(t, first, sandbox.Spec{ID: "ctx-adopt-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)})
	k.Run(t, "x = 41")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	spec := sandbox.ContextSpec{Name: "a", Kernel: sandbox.DefaultKernel}
	c, err := k.Sandbox.(sandbox.ContextStarter).StartContext(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	p := k.Sandbox.(sandbox.Persistent)
	st := p.State()
	if err := p.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	default:
		t.Fatal("a context outlived its sandbox's detach")
	}
	if _, err := k.Sandbox.(sandbox.ContextStarter).StartContext(ctx, spec); !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("StartContext after Detach: %v, want ErrClosed", err)
	}
	first.Close()
	next := cfg
	next.Adopting = true
	sb, err := newRuntime(t, next).Adopt(ctx, st)
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	adopted := runtimetest.Kernel{Sandbox: sb}
	adopted.Reconnect(t)
	if out, _ := adopted.Run(t, "print(x + 1)"); strings.TrimSpace(out) != "42" {
		t.Fatalf("the adopted kernel: %q", out)
	}
	c, err = sb.(sandbox.ContextStarter).StartContext(ctx, spec)
	if err != nil {
		t.Fatalf("a context in the adopted sandbox: %v", err)
	}
	again := runtimetest.Kernel{Sandbox: c}
	again.Reconnect(t)
	if out, _ := again.Run(t, "print('glassroom sandbox init' in open('/proc/1/cmdline').read())"); strings.TrimSpace(out) != "True" {
		t.Fatalf("the context of the adopted sandbox is not in its container: %q", out)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !sandbox.IsDone(c.Exited()) {
		t.Fatal("a context outlived its adopted sandbox")
	}
}

// TestRichOutput: the python3 kernel's structured rich output (charts of
// matplotlib figures, DataFrames as JSON) on the kernel image's
// matplotlib and pandas (runtimetest.RichCells).
func TestRichOutput(t *testing.T) {
	runtimetest.RichOutput(t, newRuntime(t, docker.Config{}), "rich-output-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestFlushInFlight: a cell's output comes before its end while the
// kernel's I/O thread is still sending it (runtimetest.FlushInFlight).
func TestFlushInFlight(t *testing.T) {
	runtimetest.FlushInFlight(t, newRuntime(t, docker.Config{}), "flush-in-flight-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestEarlyInterrupt: an interrupt between the kernel's busy status and
// the cell's code ends the cell (runtimetest.EarlyInterrupt).
func TestEarlyInterrupt(t *testing.T) {
	runtimetest.EarlyInterrupt(t, newRuntime(t, docker.Config{}), "early-interrupt-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestDebugger: JupyterLab's debugger in a container (debugpy on the
// container's own loopback under --network none, the cell dumped to its
// tmpfs /tmp), through the runtime's kernel connection, under runc or
// gVisor (runtimetest.Debugger).
func TestDebugger(t *testing.T) {
	runtimetest.Debugger(t, newRuntime(t, docker.Config{}), "debugger-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestLibraries: the kernel image has every library of
// images/python/libraries.txt, a seaborn plot is a PNG, a Chinese title
// draws with its glyphs, ipywidgets is 8 (images/python/trixie.txt) and
// its widgets and tqdm.notebook bars open comms, and ipykernel's debugger
// starts debugpy in the container (runtimetest.RunLibraries).
func TestLibraries(t *testing.T) {
	runtimetest.RunLibraries(t, newRuntime(t, docker.Config{}), "libraries-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}

// TestCommands: commands in a docker sandbox (runtimetest.Commands): each
// a docker exec into the session's container.
func TestCommands(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	n := 0
	runtimetest.Commands(t, r, runtimetest.CommandsOptions{OwnProc: underGVisor(t)}, func() string {
		n++
		return "commands-" + strconv.Itoa(n) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	})
}

// TestQuickMessageHandling: the launcher's date-parsing and cell_id
// shortcuts are installed and answer what ipykernel answers without them
// (runtimetest.QuickMessageHandling).
func TestQuickMessageHandling(t *testing.T) {
	runtimetest.QuickMessageHandling(t, newRuntime(t, docker.Config{}), "quick-handling-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10))
}
