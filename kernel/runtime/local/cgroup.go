package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"golang.org/x/sys/unix"
)

// A cgroup confines one sandbox's processes together: memory for the
// sandbox as a whole (RLIMIT_AS is per process, and tmpfs pages in /tmp and
// /dev/shm count against no rlimit), pids, and the CPU quota. The kernel
// starts inside it (cgroup v2: cloned into it; v1: the prelude moves
// itself in before exec), so nothing of the sandbox ever runs outside.
// Only root can create cgroups; without them the rlimits still apply.

const cgroupRoot = "/sys/fs/cgroup"

// cgroupLayout is where this host's controllers are. The zero value means
// no cgroups.
type cgroupLayout struct {
	v2 bool
	// v1 hierarchies ("" when absent); cpu and freezer are optional.
	memory, pids, cpu, freezer string
	// owner prefixes each sandbox's cgroup name: the runtime's UID base,
	// claimed host-wide, so that two gateways' sessions of the same id
	// (tests' fixed ids) never share, or remove, one cgroup.
	owner string
}

// leaf is the name of id's cgroup under glassroom/.
func (l cgroupLayout) leaf(id string) string {
	if l.owner == "" {
		return id
	}
	return l.owner + "-" + id
}

func detectCgroups() cgroupLayout {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return cgroupLayout{v2: true}
	}
	l := cgroupLayout{}
	has := func(dir, file string) string {
		if _, err := os.Stat(filepath.Join(cgroupRoot, dir, file)); err == nil {
			return filepath.Join(cgroupRoot, dir)
		}
		return ""
	}
	l.memory = has("memory", "memory.limit_in_bytes")
	l.pids = has("pids", "cgroup.procs") // the root has no pids.max
	l.cpu = has("cpu", "cpu.cfs_quota_us")
	l.freezer = has("freezer", "cgroup.procs")
	if l.memory == "" || l.pids == "" {
		return cgroupLayout{}
	}
	return l
}

func (l cgroupLayout) usable() bool { return l.v2 || l.memory != "" }

// dirs lists where id's cgroups are.
func (l cgroupLayout) dirs(id string) []string {
	if l.v2 {
		return []string{filepath.Join(cgroupRoot, "glassroom", l.leaf(id))}
	}
	var out []string
	for _, h := range []string{l.memory, l.pids, l.cpu, l.freezer} {
		if h != "" {
			out = append(out, filepath.Join(h, "glassroom", l.leaf(id)))
		}
	}
	return out
}

// remove deletes id's (empty) cgroups, if any.
func (l cgroupLayout) remove(id string) {
	for _, d := range l.dirs(id) {
		_ = os.Remove(d)
	}
}

type cgroup struct {
	layout cgroupLayout
	dirs   []string // memory first
	// readState reads the file a freeze in progress is polled on (nil:
	// os.ReadFile). Tests replace it with one that never sees it done.
	readState func(name string) ([]byte, error)
}

// create makes id's cgroups with the sandbox's limits; with v1 it gives
// their cgroup.procs files to uid, so the prelude can move itself in.
func (l cgroupLayout) create(id string, lim sandbox.Limits, uid int) (_ *cgroup, err error) {
	cg := &cgroup{layout: l, dirs: l.dirs(id)}
	defer func() {
		if err != nil {
			cg.remove() // the local: the result is nil on failure
		}
	}()
	mem := strconv.FormatInt(int64(lim.MemoryMB)<<20, 10)
	period := 100000
	quota := strconv.Itoa(max(1000, int(lim.CPUs*float64(period))))
	type setting struct {
		file, value string
		optional    bool
	}
	var settings []setting
	if l.v2 {
		parent := filepath.Join(cgroupRoot, "glassroom")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, err
		}
		_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
		d := cg.dirs[0]
		settings = []setting{
			{filepath.Join(d, "memory.max"), mem, false},
			{filepath.Join(d, "memory.swap.max"), "0", true},
			{filepath.Join(d, "pids.max"), strconv.Itoa(lim.Pids), false},
			{filepath.Join(d, "cpu.max"), quota + " " + strconv.Itoa(period), lim.CPUs == 0},
		}
	} else {
		settings = []setting{
			{filepath.Join(l.memory, "glassroom", l.leaf(id), "memory.limit_in_bytes"), mem, false},
			{filepath.Join(l.memory, "glassroom", l.leaf(id), "memory.memsw.limit_in_bytes"), mem, true}, // absent without swap accounting
			{filepath.Join(l.pids, "glassroom", l.leaf(id), "pids.max"), strconv.Itoa(lim.Pids), false},
		}
		if l.cpu != "" && lim.CPUs > 0 {
			settings = append(settings,
				setting{filepath.Join(l.cpu, "glassroom", l.leaf(id), "cpu.cfs_period_us"), strconv.Itoa(period), false},
				setting{filepath.Join(l.cpu, "glassroom", l.leaf(id), "cpu.cfs_quota_us"), quota, false})
		}
	}
	for _, d := range cg.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for _, s := range settings {
		if err := os.WriteFile(s.file, []byte(s.value), 0); err != nil && !s.optional {
			return nil, fmt.Errorf("local: cgroup %s: %w", filepath.Base(s.file), err)
		}
	}
	if !l.v2 {
		for _, f := range cg.procsFiles() {
			if err := os.Chown(f, uid, uid); err != nil {
				return nil, fmt.Errorf("local: cgroup: %w", err)
			}
		}
	}
	return cg, nil
}

// procsFiles are the cgroup.procs files the v1 prelude writes itself into
// (none with v2, where the kernel is cloned into its cgroup).
func (cg *cgroup) procsFiles() []string {
	if cg.layout.v2 {
		return nil
	}
	out := make([]string, len(cg.dirs))
	for i, d := range cg.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}

// cloneInto makes cmd start inside the cgroup (v2: CLONE_INTO_CGROUP).
// The returned function closes the descriptor once cmd has started.
func (cg *cgroup) cloneInto(cmd *exec.Cmd) (func(), error) {
	if !cg.layout.v2 {
		return func() {}, nil
	}
	fd, err := unix.Open(cg.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("local: cgroup: %w", err)
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	return func() { unix.Close(fd) }, nil
}

// oomKills returns how many processes of the cgroup the OOM killer killed.
func (cg *cgroup) oomKills() int {
	name := "memory.events"
	if !cg.layout.v2 {
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

// errNoFreezer: this host's cgroups have no freezer.
var errNoFreezer = errors.New("local: no cgroup freezer")

// freezePoll is how often a freeze in progress is checked.
const freezePoll = 2 * time.Millisecond

// setFrozen freezes (or thaws) every process of the cgroup and waits
// until the kernel reports it done: v2 cgroup.freeze and the "frozen"
// line of cgroup.events; v1 freezer.state, FREEZING until FROZEN. The
// wait ends with ctx (the caller bounds it: a process the kernel cannot
// stop leaves a v1 cgroup FREEZING for good).
func (cg *cgroup) setFrozen(ctx context.Context, frozen bool) error {
	read := cg.readState
	if read == nil {
		read = os.ReadFile
	}
	var file, value, doneFile string
	var done func(string) bool
	switch {
	case cg.layout.v2:
		file, doneFile = filepath.Join(cg.dirs[0], "cgroup.freeze"), filepath.Join(cg.dirs[0], "cgroup.events")
		value, want := "0", "frozen 0"
		if frozen {
			value, want = "1", "frozen 1"
		}
		done = func(events string) bool { return strings.Contains(events, want) }
		if err := os.WriteFile(file, []byte(value), 0); err != nil {
			return fmt.Errorf("local: freeze: %w", err)
		}
	case cg.layout.freezer != "":
		dir := cg.dirs[len(cg.dirs)-1] // the freezer hierarchy is listed last
		file, doneFile = filepath.Join(dir, "freezer.state"), filepath.Join(dir, "freezer.state")
		value = "THAWED"
		if frozen {
			value = "FROZEN"
		}
		done = func(state string) bool { return strings.TrimSpace(state) == value }
		if err := os.WriteFile(file, []byte(value), 0); err != nil {
			return fmt.Errorf("local: freeze: %w", err)
		}
	default:
		return errNoFreezer
	}
	for {
		b, err := read(doneFile)
		if err != nil {
			return fmt.Errorf("local: freeze: %w", err)
		}
		if done(string(b)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("local: freeze: %w", ctx.Err())
		case <-time.After(freezePoll):
		}
	}
}

// remove deletes the cgroups; they are empty once the sandbox's pid
// namespace is gone (a leftover is removed by the next start's reconcile).
func (cg *cgroup) remove() {
	for _, d := range cg.dirs {
		_ = os.Remove(d)
	}
}

// usage reads the sandbox's memory and CPU use from its cgroups (v1: the
// memory cgroup, CPU time summed over its processes).
func (cg *cgroup) usage() (sandbox.Usage, error) {
	if cg.layout.v2 {
		return sandbox.CgroupV2Usage(cg.dirs[0])
	}
	return sandbox.CgroupV1Usage(cg.dirs[0], "")
}

// memberFiles are the cgroup.procs files a process writes "0" to, as
// root, to join the sandbox's cgroups (every hierarchy's, with v1).
func (cg *cgroup) memberFiles() []string {
	out := make([]string, len(cg.dirs))
	for i, d := range cg.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}
