package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// forkRuntime is a runtime whose template preloads the analysis stack.
func forkRuntime(t *testing.T) *local.Runtime {
	t.Helper()
	if syscall.Geteuid() != 0 {
		t.Skip("the fork server needs root")
	}
	return newRuntime(t, local.Config{Fork: local.ForkConfig{Preload: []string{"numpy", "pandas", "matplotlib.pyplot"}}})
}

// starts returns how many kernels r started by path and reason.
func starts(r *local.Runtime) map[string]uint64 {
	out := map[string]uint64{}
	for _, c := range r.KernelStarts() {
		out[c.Path+"/"+c.Reason] += c.N
	}
	return out
}

// probe is what a kernel reports of itself.
const probe = `import json, os, sys, re
def _glassroom_probe():
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    keep = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        fds[fd] = re.sub(r"\[\d+\]$", "", target)
    try:
        os.close(os.open("/dev/tty", os.O_RDWR))
        tty = True
    except OSError:
        tty = False
    env = {k: re.sub(r"glassroom-state-\w+", "glassroom-state-X", v) for k, v in os.environ.items()}
    print(json.dumps({"status": {k: status[k].strip() for k in keep}, "fds": fds, "env": env,
                      "environ": open("/proc/self/environ", "rb").read().replace(b"\0", b"").decode(),
                      "cmdline": open("/proc/self/cmdline", "rb").read().decode(errors="replace"),
                      "cwd": os.getcwd(), "limits": open("/proc/self/limits").read(),
                      "cgroup": open("/proc/self/cgroup").read(), "oom": open("/proc/self/oom_score_adj").read(),
                      "leader": os.getpgid(0) == os.getpid(), "tty": tty}))
_glassroom_probe()`

type probed struct {
	Status  map[string]string
	FDs     map[string]string
	Env     map[string]string
	Environ string
	Cmdline string
	Cwd     string
	Limits  string
	Cgroup  string
	OOM     string
	// Leader: the kernel leads its process group (ipykernel then
	// interrupts the whole group). TTY: it has a controlling terminal.
	Leader, TTY bool
}

func probeKernel(t *testing.T, k kern) probed {
	t.Helper()
	out, ename := k.Run(t, probe)
	var p probed
	if err := json.Unmarshal([]byte(out), &p); err != nil || ename != "" {
		t.Fatalf("probe: %v %s: %s", err, ename, out)
	}
	return p
}

// TestForkedKernelIsConfinedLikeAnExecdOne compares a forked kernel with
// an exec'd one of a runtime without the fork server: the same uid, groups,
// capabilities (none), seccomp filter, rlimits, environment and working
// directory; no descriptor of a kind the exec'd kernel lacks; nothing of
// the template's environment or arguments in /proc.
func TestForkedKernelIsConfinedLikeAnExecdOne(t *testing.T) {
	r := forkRuntime(t)
	forked := probeKernel(t, start(t, r))
	if n := starts(r); n["forked/"] != 1 {
		t.Fatalf("the kernel was not forked: %v", n)
	}
	cold := newRuntime(t, local.Config{Fork: local.ForkConfig{Disabled: true}})
	execd := probeKernel(t, start(t, cold))
	if n := starts(cold); len(n) != 0 {
		t.Fatalf("a runtime without a fork server counted starts: %v", n)
	}
	for k, v := range execd.Status {
		if forked.Status[k] != v {
			t.Errorf("%s: forked %q, exec'd %q", k, forked.Status[k], v)
		}
	}
	if forked.Status["CapEff"] != "0000000000000000" || forked.Status["Seccomp"] != "2" || forked.Status["NoNewPrivs"] != "1" {
		t.Errorf("forked kernel status %v", forked.Status)
	}
	if !mapsEqual(forked.Env, execd.Env) {
		t.Errorf("environment:\nforked %v\nexec'd %v", forked.Env, execd.Env)
	}
	if forked.Cwd != execd.Cwd || forked.Limits != execd.Limits || forked.OOM != execd.OOM {
		t.Errorf("cwd %q/%q, oom %q/%q, limits:\n%s\nexec'd:\n%s", forked.Cwd, execd.Cwd, forked.OOM, execd.OOM, forked.Limits, execd.Limits)
	}
	if forked.Leader || execd.Leader || forked.TTY || execd.TTY {
		t.Errorf("process group leader: forked %v, exec'd %v; controlling terminal: forked %v, exec'd %v", forked.Leader, execd.Leader, forked.TTY, execd.TTY)
	}
	if strings.Count(forked.Cgroup, "test-session") != strings.Count(execd.Cgroup, "test-session") {
		t.Errorf("cgroups: forked %q, exec'd %q", forked.Cgroup, execd.Cgroup)
	}
	kinds := map[string]bool{}
	for _, v := range execd.FDs {
		kinds[v] = true
	}
	for fd, v := range forked.FDs {
		if !kinds[v] {
			t.Errorf("forked kernel's fd %s is %q, which an exec'd kernel has none of (%v)", fd, v, execd.FDs)
		}
	}
	if len(forked.FDs) > len(execd.FDs) {
		t.Errorf("forked kernel holds %d descriptors, an exec'd one %d", len(forked.FDs), len(execd.FDs))
	}
	for _, leak := range []string{local.ForkServerDir, "template", "/run/glassroom/local", t.TempDir()[:5]} {
		if strings.Contains(forked.Environ, leak) || strings.Contains(forked.Cmdline, leak) {
			t.Errorf("/proc shows %q of the template: environ %q cmdline %q", leak, forked.Environ, forked.Cmdline)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestForkedKernelsDrawDifferentRandomNumbers: each forked kernel has
// random state of its own, though all share the template's memory.
func TestForkedKernelsDrawDifferentRandomNumbers(t *testing.T) {
	r := forkRuntime(t)
	const draw = `import random, secrets, uuid, numpy, json
print(json.dumps([random.random(), float(numpy.random.random()), int(numpy.random.randint(1 << 30)), secrets.token_hex(8), str(uuid.uuid4())]))`
	var draws [][]any
	for range 2 {
		k := start(t, r)
		out, ename := k.Run(t, draw)
		var d []any
		if err := json.Unmarshal([]byte(out), &d); err != nil || ename != "" {
			t.Fatalf("draw: %v %s %s", err, ename, out)
		}
		draws = append(draws, d)
	}
	if n := starts(r); n["forked/"] != 2 {
		t.Fatalf("the kernels were not forked: %v", n)
	}
	for i := range draws[0] {
		if draws[0][i] == draws[1][i] {
			t.Errorf("draw %d is the same in two forked kernels: %v", i, draws[0][i])
		}
	}
}

// TestKilledTemplateLeavesNoKernel: the kernels forked from a template die
// with it, and the next kernel restarts it.
func TestKilledTemplateLeavesNoKernel(t *testing.T) {
	r := forkRuntime(t)
	k := start(t, r)
	k.Run(t, "x = 1")
	uid := sandboxUID(t, k)
	pid := local.TemplatePID(r)
	if pid == 0 {
		t.Fatal("no template runs")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Sandbox.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the forked kernel outlived its template")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	if _, ename := k.Run(t, "x"); ename != "NameError" {
		t.Fatalf("variables survived the template's death: %q", ename)
	}
	if n := starts(r); n["forked/"] != 2 {
		t.Fatalf("the restarted kernel was not forked from a new template: %v", n)
	}
	if p := local.TemplatePID(r); p == pid || p == 0 {
		t.Fatalf("template pid %d after the restart (was %d)", p, pid)
	}
	k.Client.Close()
	if err := k.Sandbox.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if pids := livePids(uid); len(pids) > 0 {
		t.Fatalf("sandbox processes %v alive after Close", pids)
	}
}

// TestForkFallsBack: a session whose environment or memory limit the
// template cannot serve gets an exec'd kernel, counted with the reason.
func TestForkFallsBack(t *testing.T) {
	r := forkRuntime(t)
	start(t, r) // the template is up: its address space is known
	seq++
	k := runtimetest.Start(t, r, sandbox.Spec{ID: fmt.Sprintf("test-session-env%d", seq), Env: map[string]string{"OMP_NUM_THREADS": "2"}})
	if out, _ := k.Run(t, "import os; print(os.environ['OMP_NUM_THREADS'])"); strings.TrimSpace(out) != "2" {
		t.Fatalf("env: %q", out)
	}
	seq++
	runtimetest.Start(t, r, sandbox.Spec{ID: fmt.Sprintf("test-session-mem%d", seq), Limits: sandbox.Limits{MemoryMB: 512}})
	got := starts(r)
	want := map[string]uint64{"forked/": 1, "exec/env": 1, "exec/limits": 1}
	if !mapsEqual(fmtCounts(got), fmtCounts(want)) {
		t.Fatalf("starts %v, want %v", got, want)
	}
}

func fmtCounts(m map[string]uint64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = strings.Repeat("|", int(v))
	}
	return out
}
