package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cgroup confines one sandbox's processes together: a memory limit for the
// sandbox as a whole (RLIMIT_AS is per process, and tmpfs pages in /tmp
// and /dev/shm count against no rlimit) and a pids limit. It supports
// cgroup v2 and the v1 memory and pids hierarchies. Only root can create
// cgroups; without them the rlimits still apply.
type cgroup struct {
	dirs []string // one per hierarchy (v2: one)
	v2   bool
}

const cgroupRoot = "/sys/fs/cgroup"

// newCgroup creates glassroom/<id> cgroups with the given limits.
func newCgroup(id string, memoryMB, pids int) (*cgroup, error) {
	mem := strconv.FormatInt(int64(memoryMB)<<20, 10)
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		parent := filepath.Join(cgroupRoot, "glassroom")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, err
		}
		_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +pids"), 0)
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +pids"), 0)
		cg := &cgroup{dirs: []string{filepath.Join(parent, id)}, v2: true}
		if err := os.Mkdir(cg.dirs[0], 0o755); err != nil {
			return nil, err
		}
		for file, v := range map[string]string{"memory.max": mem, "memory.swap.max": "0", "pids.max": strconv.Itoa(pids)} {
			if err := os.WriteFile(filepath.Join(cg.dirs[0], file), []byte(v), 0); err != nil && file != "memory.swap.max" {
				cg.remove()
				return nil, fmt.Errorf("local: cgroup %s: %w", file, err)
			}
		}
		return cg, nil
	}
	cg := &cgroup{}
	for _, h := range []string{"memory", "pids"} {
		dir := filepath.Join(cgroupRoot, h, "glassroom", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cg.remove()
			return nil, err
		}
		cg.dirs = append(cg.dirs, dir)
	}
	writes := []struct{ file, v string }{
		{filepath.Join(cg.dirs[0], "memory.limit_in_bytes"), mem},
		{filepath.Join(cg.dirs[0], "memory.memsw.limit_in_bytes"), mem}, // absent without swap accounting
		{filepath.Join(cg.dirs[1], "pids.max"), strconv.Itoa(pids)},
	}
	for i, w := range writes {
		if err := os.WriteFile(w.file, []byte(w.v), 0); err != nil && i != 1 {
			cg.remove()
			return nil, fmt.Errorf("local: cgroup %s: %w", filepath.Base(w.file), err)
		}
	}
	return cg, nil
}

// adopt moves every process of host uid into the cgroup. It is called once
// the kernel is up and before any user code runs, so everything the code
// later starts is created inside.
func (cg *cgroup) adopt(uid int) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) != nil || int(st.Uid) != uid {
			continue
		}
		for _, dir := range cg.dirs {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// oomKills returns how many processes of the cgroup the OOM killer killed.
func (cg *cgroup) oomKills() int {
	name := "memory.events"
	if !cg.v2 {
		name = "memory.oom_control"
	}
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], name))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// cgroupDirs lists where newCgroup puts id's cgroups, in both layouts.
func cgroupDirs(id string) []string {
	return []string{
		filepath.Join(cgroupRoot, "glassroom", id),
		filepath.Join(cgroupRoot, "memory", "glassroom", id),
		filepath.Join(cgroupRoot, "pids", "glassroom", id),
	}
}

// remove deletes the (empty) cgroups.
func (cg *cgroup) remove() {
	for _, dir := range cg.dirs {
		_ = os.Remove(dir)
	}
}
