package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Usage is what a sandbox uses now, as its cgroup counts it.
type Usage struct {
	CPUNanos uint64 // CPU time of the sandbox's processes since it started (cumulative)
	MemUsed  int64  // bytes of memory in use (page cache that can be dropped not counted)
	MemLimit int64  // bytes the sandbox may use (its cgroup's limit; 0: unknown)
	// Runnable is how many of the sandbox's threads are running or
	// waiting for a CPU now (state R): a kernel that computes on a busy
	// machine is runnable however little CPU it gets; a stuck one sleeps.
	Runnable int
}

// UsageReader is a sandbox that reports its resource use (Base does, when
// its driver is a DriverUsage). Usage fails with ErrNoUsage when it
// cannot. Safe for concurrent use; it reads files (or asks the engine)
// and does not block for long.
type UsageReader interface {
	Usage(ctx context.Context) (Usage, error)
}

// DriverUsage is a driver that can read its sandbox's cgroup.
type DriverUsage interface {
	Usage(ctx context.Context) (Usage, error)
}

// ErrNoUsage is returned by Usage when the runtime cannot see the sandbox's cgroup.
var ErrNoUsage = errors.New("sandbox: this runtime does not report resource use")

var _ UsageReader = (*Base)(nil)

// Usage implements UsageReader through the driver.
func (b *Base) Usage(ctx context.Context) (Usage, error) {
	u, ok := b.drv.(DriverUsage)
	if !ok {
		return Usage{}, ErrNoUsage
	}
	return u.Usage(ctx)
}

// cgroupRoot is where the host's cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// CgroupUsageOfPid reads the usage of the cgroups process pid is in (as
// this process sees them: /proc/<pid>/cgroup, cgroup v1 or v2). On v1
// without a cpuacct cgroup of its own (the root), CPU time is summed over
// the processes of its memory cgroup.
func CgroupUsageOfPid(pid int) (Usage, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return Usage{}, fmt.Errorf("%w: %w", ErrNoUsage, err)
	}
	var v2, mem, cpuacct string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		ctrls := "," + f[1] + ","
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case strings.Contains(ctrls, ",memory,"):
			mem = filepath.Join(cgroupRoot, "memory", f[2])
			if strings.Contains(ctrls, ",cpuacct,") {
				cpuacct = mem
			}
		case strings.Contains(ctrls, ",cpuacct,"):
			if f[2] != "/" {
				cpuacct = filepath.Join(cgroupRoot, strings.TrimPrefix(f[1], "name="), f[2])
			}
		}
	}
	if mem == "" && v2 != "" {
		return CgroupV2Usage(filepath.Join(cgroupRoot, v2))
	}
	if mem == "" {
		return Usage{}, ErrNoUsage
	}
	return CgroupV1Usage(mem, cpuacct)
}

// CgroupV2Usage reads a cgroup v2 directory.
func CgroupV2Usage(dir string) (Usage, error) {
	var u Usage
	cur, err := readInt(filepath.Join(dir, "memory.current"))
	if err != nil {
		return u, fmt.Errorf("%w: %w", ErrNoUsage, err)
	}
	stat := readKeyed(filepath.Join(dir, "memory.stat"))
	u.MemUsed = max(0, cur-stat["inactive_file"])
	if lim, err := readInt(filepath.Join(dir, "memory.max")); err == nil {
		u.MemLimit = lim
	}
	if usec, ok := readKeyed(filepath.Join(dir, "cpu.stat"))["usage_usec"]; ok {
		u.CPUNanos = uint64(usec) * 1000
	}
	u.Runnable = runnableThreads(filepath.Join(dir, "cgroup.threads"))
	return u, nil
}

// CgroupV1Usage reads a cgroup v1 memory directory and cpuacct directory
// ("": CPU time summed over the memory cgroup's processes).
func CgroupV1Usage(memDir, cpuacctDir string) (Usage, error) {
	var u Usage
	cur, err := readInt(filepath.Join(memDir, "memory.usage_in_bytes"))
	if err != nil {
		return u, fmt.Errorf("%w: %w", ErrNoUsage, err)
	}
	stat := readKeyed(filepath.Join(memDir, "memory.stat"))
	u.MemUsed = max(0, cur-stat["total_inactive_file"])
	if lim, err := readInt(filepath.Join(memDir, "memory.limit_in_bytes")); err == nil && lim < 1<<60 {
		u.MemLimit = lim
	}
	u.Runnable = runnableThreads(filepath.Join(memDir, "tasks"))
	if cpuacctDir != "" {
		if ns, err := readInt(filepath.Join(cpuacctDir, "cpuacct.usage")); err == nil {
			u.CPUNanos = uint64(ns)
			return u, nil
		}
	}
	u.CPUNanos = procsCPU(filepath.Join(memDir, "cgroup.procs"))
	return u, nil
}

// runnableThreads counts the threads listed in a cgroup's tasks (v1) or
// cgroup.threads (v2) file whose state is R (running, or runnable).
func runnableThreads(tasks string) int {
	b, err := os.ReadFile(tasks)
	if err != nil {
		return 0
	}
	n := 0
	for _, tid := range strings.Fields(string(b)) {
		st, err := os.ReadFile("/proc/" + tid + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(st), ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'R' {
			n++
		}
	}
	return n
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// every Linux this runs on).
const clockTick = 100

// procsCPU sums the user and system time of the processes listed in a
// cgroup.procs file, and of the children they reaped.
func procsCPU(procs string) uint64 {
	b, err := os.ReadFile(procs)
	if err != nil {
		return 0
	}
	var ticks uint64
	for _, pid := range strings.Fields(string(b)) {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		s := string(st)
		i := strings.LastIndexByte(s, ')') // the command may hold spaces
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
		if len(f) < 15 {
			continue
		}
		for _, k := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			if v, err := strconv.ParseUint(f[k], 10, 64); err == nil {
				ticks += v
			}
		}
	}
	return ticks * (1e9 / clockTick)
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, errors.New("no limit")
	}
	return strconv.ParseInt(s, 10, 64)
}

// readKeyed reads a "key value" per line file (memory.stat, cpu.stat).
func readKeyed(file string) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}
