package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// retryLeft tries again to remove the sandboxes that closes left, each in
// a goroutine of its own (one at a time per session) that the manager's
// closing group waits for.
func (m *Manager) retryLeft(ctx context.Context) {
	for _, e := range m.table.left() {
		go func() {
			defer m.closing.Done()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err := e.s.sandbox.Close(cctx)
			m.table.retried(e, err)
			if err == nil {
				m.records.forget(e.s.id)
				m.log.Info().Str("session", e.s.id).Msg("a left sandbox is gone at last")
			}
		}()
	}
}

// Run deletes expired sessions, pauses idle ones, keeps the warm pool
// full, samples the sessions' metrics (Config.MetricsInterval) and, on a runtime that finds orphaned sandboxes
// (sandbox.OrphanFinder), adopts them, until ctx ends; it returns once its
// loops and the freezes it started have stopped.
func (m *Manager) Run(ctx context.Context) error {
	defer m.pausing.Wait() // its freezes end with ctx
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the warm pool's refills, owned by Run
		defer wg.Done()
		m.pool.run(ctx)
	}()
	if finder, ok := m.rt.(sandbox.OrphanFinder); ok {
		wg.Add(1)
		go func() { // adoption of other gateways' sessions, owned by Run
			defer wg.Done()
			t := time.NewTicker(m.cfg.AdoptInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					m.adoptOrphans(ctx, finder)
				}
			}
		}()
	}
	if m.cfg.MetricsInterval > 0 {
		wg.Add(1)
		go func() { // the metrics history's sampler, owned by Run
			defer wg.Done()
			t := time.NewTicker(m.cfg.MetricsInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					sampleSessions(ctx, m.table.snapshot(), now, m.cfg.MetricsInterval)
				}
			}
		}()
	}
	defer wg.Wait()
	t := time.NewTimer(m.cfg.ReapInterval)
	defer t.Stop()
	flush := time.NewTicker(m.cfg.FlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			m.reap(ctx, now)
			t.Reset(m.hibernated.until(time.Now(), m.clock.next(time.Now(), m.table.snapshot())))
		case <-m.clock.poke:
			t.Reset(m.hibernated.until(time.Now(), m.clock.next(time.Now(), m.table.snapshot())))
		case <-flush.C:
			m.records.putAll(m.table.snapshot())
		}
	}
}

// reapClock says when the reaper runs next: every interval, and at the
// first session deadline (a lifetime's end, an idle expiry) that comes
// sooner, so that a session ends on time rather than up to an interval
// late. Sessions poke it when a deadline moves. Safe for concurrent use.
type reapClock struct {
	every time.Duration
	poke  chan struct{} // one pending poke is enough
}

func newReapClock(every time.Duration) *reapClock {
	return &reapClock{every: every, poke: make(chan struct{}, 1)}
}

// wake tells the reaper to look at the deadlines again. It never blocks.
func (c *reapClock) wake() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// reapSlack is how long after a deadline the reaper runs (expired checks
// "after" the deadline).
const reapSlack = 5 * time.Millisecond

// next is how long from now the reaper waits: until the first future
// deadline of sessions (plus reapSlack), at most the interval. A
// deadline already past is the interval's (a busy session past its idle
// time is not expired: looking again at once would spin).
func (c *reapClock) next(now time.Time, sessions []*Session) time.Duration {
	wait := c.every
	for _, s := range sessions {
		for _, d := range deadlines(s) {
			if in := d.Sub(now) + reapSlack; d.After(now) && in < wait {
				wait = in
			}
		}
	}
	return wait
}

// deadlines are when s expires unless it is used meanwhile: its
// lifetime's end and, unless a client paused it, its idle expiry.
func deadlines(s *Session) []time.Time {
	held := s.pause.isHeld()
	s.mu.Lock()
	defer s.mu.Unlock()
	if held {
		return []time.Time{s.endAt}
	}
	return []time.Time{s.endAt, s.lastActive.Add(s.idle)}
}

// reap deletes the expired sessions and pauses the idle ones. It never
// waits for a session: each close and each freeze runs in a goroutine of
// its own, so that one slow or stuck sandbox holds up neither the next
// tick nor any other session.
func (m *Manager) reap(ctx context.Context, now time.Time) {
	for _, s := range m.table.snapshot() {
		reason := s.expired(now)
		if reason == "" {
			m.pauseIdle(ctx, s, now)
			continue
		}
		if pausesAtTimeout(s, now) { // its lifecycle says pause, not end
			pauseAtTimeout(ctx, m, s, reason)
			continue
		}
		if _, err := m.table.take("", s.id); err != nil {
			continue
		}
		m.log.Info().Str("session", s.id).Str("reason", reason).Msg("session expired")
		go func() { // one slow sandbox must not hold up the others' expiry
			defer m.closing.Done()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = m.end(cctx, s, reason) // end logs a failure
		}()
	}
	for _, rec := range m.hibernated.due(now) {
		forgetHibernated(m, rec, "its lifetime ended while it was hibernated")
	}
	m.retryLeft(ctx)
}

// pauseTimeout bounds a freeze the reaper starts, whatever the runtime's
// own bound (the local runtime's FreezeTimeout, docker's call timeout).
const pauseTimeout = 30 * time.Second

// pauseIdle freezes s if its kernel has gone unused for PauseAfter, in a
// goroutine owned by the manager (Run, Close and Detach wait for it). It
// does not block: a session with a freeze still in progress is skipped,
// so there is at most one per session. The freeze ends with ctx, with
// the session's close, or after pauseTimeout.
func (m *Manager) pauseIdle(ctx context.Context, s *Session, now time.Time) {
	if !s.pause.claim() {
		return
	}
	if !m.table.ifOpen(func() { m.pausing.Add(1) }) {
		s.pause.unclaim()
		return
	}
	go func() {
		defer m.pausing.Done()
		defer s.pause.unclaim()
		pctx, cancel := context.WithTimeout(ctx, pauseTimeout)
		defer cancel()
		stop := context.AfterFunc(s.ctx, cancel) // the session closes: stop freezing it
		defer stop()
		s.pause.maybeFreeze(pctx, now)
	}()
}
