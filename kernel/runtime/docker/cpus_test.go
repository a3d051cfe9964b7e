package docker_test

import (
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
)

// hostCgroupDir returns the host directory of the cgroup that process pid
// is in for controller (cgroup v1: its hierarchy, such as "pids" or
// "cpuacct"; v2: the unified one).
func hostCgroupDir(t *testing.T, pid, controller string) string {
	t.Helper()
	cg, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var v1, v2 string
	for _, line := range strings.Split(string(cg), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == controller {
				v1 = "/sys/fs/cgroup/" + f[1] + f[2]
			}
		}
		if f[0] == "0" && f[1] == "" {
			v2 = "/sys/fs/cgroup" + f[2]
		}
	}
	return cmp.Or(v1, v2)
}

// cpuUsage returns the CPU time the cgroup dir's processes used.
func cpuUsage(t *testing.T, dir string) time.Duration {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil { // v1: nanoseconds
		ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat")) // v2: usage_usec
	if err != nil {
		t.Fatalf("the sandbox's CPU accounting (%s): %v", dir, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, _ := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond
		}
	}
	t.Fatalf("no usage_usec in %s/cpu.stat", dir)
	return 0
}

// throttled returns how many periods the cgroup dir (of the cpu
// controller) was throttled in: its quota was spent.
func throttled(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		t.Fatalf("the sandbox's CPU controller (%s): %v", dir, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "nr_throttled "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no nr_throttled in %s/cpu.stat", dir)
	return 0
}

// TestCPUsHoldFromTheHost: a session asking for half a CPU gets no more,
// as the host measures it (its cgroup's CPU time over the host's clock:
// under gVisor the sandbox's own clock and probes may differ), while
// its code keeps two processes busy.
func TestCPUsHoldFromTheHost(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	if os.Geteuid() != 0 {
		t.Fatal("the test reads the sandbox's cgroup on the host: run it as root")
	}
	k := start(t, r, sandbox.Limits{CPUs: 0.5})
	k.Run(t, "import subprocess\nburners = [subprocess.Popen(['sh', '-c', 'while :; do :; done']) for _ in range(2)]")
	pid := inspect(t, "{{.State.Pid}}", containerOf(t, r, k))
	dir, cpu := hostCgroupDir(t, pid, "cpuacct"), hostCgroupDir(t, pid, "cpu")
	// The events waited for: the burners used 1.5 s of CPU time (3 s of
	// the host's at half a CPU), and the quota stopped them a few times
	// (with no quota, never).
	const target, periods = 1500 * time.Millisecond, 5
	u0, th0, w0 := cpuUsage(t, dir), throttled(t, cpu), time.Now()
	var used time.Duration
	testkit.Eventually(t, 2*time.Minute, func() bool { used = cpuUsage(t, dir) - u0; return used >= target },
		"the burners to use %v of CPU time", target)
	testkit.Eventually(t, time.Minute, func() bool { return throttled(t, cpu)-th0 >= periods },
		"the sandbox's CPU quota to throttle it %d times", periods)
	wall := time.Since(w0)
	cores := used.Seconds() / wall.Seconds()
	t.Logf("asked for 0.5 CPUs; the host measured %.2f cores over %v (gVisor: %v)", cores, wall.Round(time.Millisecond), underGVisor(t))
	if cores > 0.5*1.2 {
		t.Fatalf("asked for 0.5 CPUs, the host measured %.2f cores (%v of CPU time in %v)", cores, used, wall)
	}
	k.Run(t, "for b in burners: b.kill()")
}
