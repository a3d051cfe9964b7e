package sessions

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Defaults of the metrics history (Config.MetricsInterval,
// Config.MetricsHistory): E2B's collection interval, and ten minutes of it.
const (
	DefaultMetricsInterval = 5 * time.Second
	DefaultMetricsHistory  = 120
	// MaxMetricsHistory bounds Config.MetricsHistory: a sample is about
	// 80 bytes, kept for every session.
	MaxMetricsHistory = 4096
	// metricsWorkers is how many sessions the sampler reads at once.
	metricsWorkers = 4
	// sampleWait bounds one session's sample (within the interval): a
	// sandbox slow to answer holds one worker that long, not the tick.
	sampleWait = 2 * time.Second
	// diskRefresh is how often a sample counts the workspace's disk use
	// again; the samples between repeat the last count.
	diskRefresh = time.Minute
)

// MetricsLog is a session's resource use (Session.Metrics): Now measures
// it, History returns its last samples, a ring of Config.MetricsHistory
// that the sampler (sampleSessions) and every Now add to. Safe for
// concurrent use.
type MetricsLog struct {
	s    *Session
	walk diskWalk // one walk of the workspace's disk use at a time (metrics.go)

	limit int // Config.MetricsHistory: the ring's size once full

	mu      sync.Mutex
	ring    []Metrics // grows to limit as samples come
	next    int       // where the next sample goes (the oldest, once full)
	cpu     uint64
	cpuAt   time.Time // the sampler's last CPU reading, to measure the next against
	disk    int64
	diskAt  time.Time // when disk was counted
	sampled bool      // the sampler has read this session once
	lastNow bool      // the newest sample is Now's
}

func newMetricsLog(s *Session, n int) *MetricsLog {
	return &MetricsLog{s: s, limit: max(n, 1)}
}

// add keeps m, forgetting the oldest sample once the ring is full. A
// sample older than the newest kept (a slow Metrics call that ends after
// a tick) is dropped: the history stays in time order. With within > 0
// (a sample Now took), m replaces the newest sample instead when that one
// was also Now's and less than within older: a client that polls cannot
// push the sampler's history out.
func (h *MetricsLog) add(m Metrics, within time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.ring); n > 0 {
		i := (h.next - 1 + n) % n
		last := h.ring[i]
		if m.Timestamp.Before(last.Timestamp) {
			return
		}
		if within > 0 && h.lastNow && m.Timestamp.Sub(last.Timestamp) < within {
			h.ring[i] = m
			return
		}
	}
	h.lastNow = within > 0
	if len(h.ring) < h.limit {
		h.ring = append(h.ring, m)
		h.next = len(h.ring) % h.limit
		return
	}
	h.ring[h.next] = m
	h.next = (h.next + 1) % len(h.ring)
}

// between returns the samples taken within start..end (a zero bound is
// open), oldest first.
func (h *MetricsLog) between(start, end time.Time) []Metrics {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Metrics, 0, len(h.ring))
	for i := range len(h.ring) {
		m := h.ring[(h.next+i)%len(h.ring)] // next is 0 or len until the ring is full
		if (start.IsZero() || !m.Timestamp.Before(start)) && (end.IsZero() || !m.Timestamp.After(end)) {
			out = append(out, m)
		}
	}
	return out
}

// History returns the session's samples taken within start..end (a zero
// bound is open), oldest first: one every Config.MetricsInterval while it
// runs (none while its sandbox is paused) and one per Now, the last
// Config.MetricsHistory of them. When end is zero or not yet past, a
// sample of now is taken first (Now: about cpuWindow), so that the
// history reaches the present. Safe for concurrent use.
func (h *MetricsLog) History(ctx context.Context, start, end time.Time) ([]Metrics, error) {
	if end.IsZero() || !end.Before(time.Now()) {
		if _, err := h.Now(ctx); err != nil {
			return nil, err
		}
	}
	return h.between(start, end), nil
}

// sample adds one sample of the session to its history, its CPU use
// measured since the last sample the sampler took (none the first time:
// 0). A paused sandbox is not read (a pod's frozen supervisor would not
// answer).
func (h *MetricsLog) sample(ctx context.Context, now time.Time) {
	s := h.s
	if s.pause.paused() {
		return
	}
	lim := s.sandbox.Limits()
	m := Metrics{Timestamp: now.UTC(), CPUCount: max(1, int(math.Ceil(lim.CPUs))), MemTotal: int64(lim.MemoryMB) << 20, DiskTotal: int64(lim.WorkspaceMB) << 20}
	if ur, ok := s.sandbox.(sandbox.UsageReader); ok {
		u, err := ur.Usage(ctx)
		switch {
		case errors.Is(err, sandbox.ErrNoUsage):
		case err != nil:
			return // gone or going: the next tick, or its end, tells
		default:
			h.mu.Lock()
			if h.sampled && u.CPUNanos >= h.cpu {
				if wall := now.Sub(h.cpuAt); wall > 0 {
					pct := 100 * float64(u.CPUNanos-h.cpu) / float64(wall.Nanoseconds()) / float64(m.CPUCount)
					m.CPUUsedPct = math.Round(min(100, pct)*100) / 100
				}
			}
			h.cpu, h.cpuAt, h.sampled = u.CPUNanos, now, true
			h.mu.Unlock()
			m.MemUsed = u.MemUsed
			if u.MemLimit > 0 && (m.MemTotal == 0 || u.MemLimit < m.MemTotal) {
				m.MemTotal = u.MemLimit
			}
		}
	}
	h.mu.Lock()
	stale := h.diskAt.IsZero() || now.Sub(h.diskAt) >= diskRefresh
	disk := h.disk
	h.mu.Unlock()
	if stale {
		if counted, ok := h.walk.used(ctx, s.sandbox.Workspace(), s.files, m.DiskTotal); ok {
			disk = counted
			h.noteDisk(disk, now)
		} // else cut short: the last count stands, and the next sample counts again
	}
	m.DiskUsed = disk
	h.add(m, 0)
}

// lastDisk is the last count of the workspace's disk use (0 before one).
func (h *MetricsLog) lastDisk() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.disk
}

// noteDisk records a count of the workspace's disk use, made at t.
func (h *MetricsLog) noteDisk(bytes int64, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t.After(h.diskAt) {
		h.disk, h.diskAt = bytes, t
	}
}

// sampleSessions adds a sample to the history of each of list, at most
// metricsWorkers at a time; it returns once all are taken, or after
// within (the interval), leaving the rest for the next tick.
func sampleSessions(ctx context.Context, list []*Session, now time.Time, within time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	work := make(chan *Session)
	var wg sync.WaitGroup
	for range metricsWorkers {
		wg.Add(1)
		go func() { // owned by sampleMetrics: ends when work is closed
			defer wg.Done()
			for s := range work {
				sctx, cancel := context.WithTimeout(ctx, sampleWait)
				s.metrics.sample(sctx, now)
				cancel()
			}
		}()
	}
	defer wg.Wait()
	defer close(work)
	for _, s := range list {
		select {
		case work <- s:
		case <-ctx.Done():
			return
		}
	}
}
