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
// full and, on a runtime that finds orphaned sandboxes
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
	defer wg.Wait()
	t := time.NewTicker(m.cfg.ReapInterval)
	defer t.Stop()
	flush := time.NewTicker(m.cfg.FlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			m.reap(ctx, now)
		case <-flush.C:
			m.records.putAll(m.table.snapshot())
		}
	}
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
