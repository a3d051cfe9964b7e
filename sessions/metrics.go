package sessions

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
	"golang.org/x/sys/unix"
)

// Metrics is a session's resource use now (E2B's SandboxMetrics): CPU and
// memory from its sandbox's cgroup, disk from its workspace. Fields the
// runtime cannot see (the kubernetes runtime's cgroup) are zero.
type Metrics struct {
	Timestamp  time.Time `json:"timestamp"`
	CPUCount   int       `json:"cpu_count"`    // the sandbox's CPU limit, rounded up
	CPUUsedPct float64   `json:"cpu_used_pct"` // of CPUCount cores, over the last cpuWindow
	MemUsed    int64     `json:"mem_used"`     // bytes
	MemTotal   int64     `json:"mem_total"`    // bytes (the sandbox's memory limit)
	DiskUsed   int64     `json:"disk_used"`    // bytes in the workspace
	DiskTotal  int64     `json:"disk_total"`   // bytes (the workspace's size limit)
}

// cpuWindow is how long Metrics measures CPU use over.
const cpuWindow = 200 * time.Millisecond

// maxDiskWalk and maxDiskWalkTime bound the walk that counts the
// workspace's files when it is no file system of its own.
const (
	maxDiskWalk     = 100000
	maxDiskWalkTime = 2 * time.Second
)

// Metrics returns the session's resource use: now, and its history.
func (s *Session) Metrics() *MetricsLog { return s.metrics }

// Now measures the session's resource use, and keeps the sample in its
// history (History). It does not thaw a paused sandbox (a frozen one
// uses no CPU) and blocks for about cpuWindow (bounded by ctx). Safe for
// concurrent use.
func (h *MetricsLog) Now(ctx context.Context) (Metrics, error) {
	s := h.s
	lim := s.sandbox.Limits()
	m := Metrics{CPUCount: max(1, int(math.Ceil(lim.CPUs))), MemTotal: int64(lim.MemoryMB) << 20, DiskTotal: int64(lim.WorkspaceMB) << 20}
	if ur, ok := s.sandbox.(sandbox.UsageReader); ok {
		u1, err := ur.Usage(ctx)
		t1 := time.Now()
		switch {
		case errors.Is(err, sandbox.ErrNoUsage):
		case err != nil:
			return Metrics{}, usageErr(s, err)
		default:
			t := time.NewTimer(cpuWindow)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return Metrics{}, fmt.Errorf("sessions: metrics: %w", ctx.Err())
			}
			u2, err := ur.Usage(ctx)
			if err != nil {
				return Metrics{}, usageErr(s, err)
			}
			wall := time.Since(t1)
			if u2.CPUNanos >= u1.CPUNanos && wall > 0 {
				pct := 100 * float64(u2.CPUNanos-u1.CPUNanos) / float64(wall.Nanoseconds()) / float64(m.CPUCount)
				m.CPUUsedPct = math.Round(min(100, pct)*100) / 100
			}
			m.MemUsed = u2.MemUsed
			if u2.MemLimit > 0 && (m.MemTotal == 0 || u2.MemLimit < m.MemTotal) {
				m.MemTotal = u2.MemLimit
			}
		}
	}
	m.Timestamp = time.Now().UTC()
	disk, counted := h.walk.used(ctx, s.sandbox.Workspace(), s.files, m.DiskTotal)
	if counted {
		h.noteDisk(disk, m.Timestamp)
	} else { // ctx ended while another's walk ran: the last count stands
		disk = h.lastDisk()
	}
	m.DiskUsed = disk
	within := h.s.cfg.MetricsInterval // a client's samples replace one another within it
	if within <= 0 {
		within = DefaultMetricsInterval
	}
	h.add(m, within)
	return m, nil
}

// diskUsed is the bytes used in the workspace at dir: its file system's
// when it is one of its own (about its limit's size), else the sizes of
// its regular files, walked by descriptor (workspace.Root.Usage: no
// symlink the code plants or swaps in is followed) and bounded by
// maxDiskWalk entries and maxDiskWalkTime (a lower bound then). Without
// a host directory (dir ""), files counts, when it can
// (workspace.Measuring: a pod's agent walks the same way), else 0.
func diskUsed(ctx context.Context, dir string, files workspace.FS, limit int64) int64 {
	if dir == "" {
		// The workspace is not on this host (a pod's): its server counts.
		ms, ok := files.(workspace.Measuring)
		if !ok {
			return 0
		}
		ctx, cancel := context.WithTimeout(ctx, maxDiskWalkTime)
		defer cancel()
		u, _ := ms.Usage(ctx, maxDiskWalk)
		return u.Bytes
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		total := int64(st.Blocks) * st.Bsize
		if limit > 0 && total > 0 && total <= limit+limit/4+(64<<20) {
			return int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	root, err := workspace.Open(dir)
	if err != nil {
		return 0 // removed with its session
	}
	defer func() { _ = root.Close() }()
	ctx, cancel := context.WithTimeout(ctx, maxDiskWalkTime)
	defer cancel()
	u, _ := root.Usage(ctx, maxDiskWalk)
	return u.Bytes
}

// diskWalk runs one count of a session's disk use at a time: a request
// that arrives while one runs waits for it (at most maxDiskWalkTime, or
// its own ctx) and takes its figure, so a client asking for metrics in a
// loop or all at once costs the gateway one walk per session, never one
// per request. The zero value is ready; safe for concurrent use.
type diskWalk struct {
	count func(ctx context.Context, dir string, files workspace.FS, limit int64) int64 // nil: diskUsed (tests replace it)

	mu      sync.Mutex
	running *diskRun
	walks   atomic.Int64 // walks started
	waiting atomic.Int64 // requests waiting for another's walk
}

type diskRun struct {
	done  chan struct{}
	bytes int64
}

// used is diskUsed(ctx, dir, limit), shared with the walk that runs.
func (w *diskWalk) used(ctx context.Context, dir string, files workspace.FS, limit int64) (int64, bool) {
	w.mu.Lock()
	if r := w.running; r != nil {
		w.mu.Unlock()
		w.waiting.Add(1)
		defer w.waiting.Add(-1)
		select {
		case <-r.done:
			return r.bytes, true
		case <-ctx.Done():
			return 0, false
		}
	}
	r := &diskRun{done: make(chan struct{})}
	w.running = r
	w.mu.Unlock()
	w.walks.Add(1)
	// The walk is bounded by maxDiskWalkTime, not by this request's ctx:
	// those waiting for it must not get a cut-short figure.
	count := w.count
	if count == nil {
		count = diskUsed
	}
	r.bytes = count(context.WithoutCancel(ctx), dir, files, limit)
	w.mu.Lock()
	w.running = nil
	w.mu.Unlock()
	close(r.done)
	return r.bytes, true
}

// usageErr is a failed usage read of s: the session's end when it ended
// meanwhile (its sandbox's cgroup went with it), else the error.
func usageErr(s *Session, err error) error {
	select {
	case <-s.Done():
		return fmt.Errorf("sessions: metrics: %w (it ended)", ErrNotFound)
	default:
		return fmt.Errorf("sessions: metrics: %w", err)
	}
}
