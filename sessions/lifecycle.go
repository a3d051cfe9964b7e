package sessions

// What a session does at its timeout (E2B's lifecycle): end, or pause
// (freeze its whole sandbox, memory kept) and wait to be resumed, by a
// client's resume or, with AutoResume, by its next use.

import (
	"context"
	"errors"
	"time"
)

// What a session does when its lifetime or idle timeout ends
// (Lifecycle.OnTimeout).
const (
	OnTimeoutKill  = "kill"
	OnTimeoutPause = "pause"
)

// Lifecycle is what a session does at its timeout. The zero value ends it.
type Lifecycle struct {
	// OnTimeout: OnTimeoutKill ("" too) ends the session; OnTimeoutPause
	// freezes its sandbox instead (its kernels keep their variables and
	// memory), as a client's pause does, until it is resumed. A paused
	// session still ends at the gateway's maximum lifetime after its
	// creation.
	OnTimeout string `json:"on_timeout,omitempty"`
	// AutoResume (with OnTimeoutPause): the session's next use (an
	// execution, a command, a preview's connection) resumes it; without
	// it, uses fail with ErrPaused until a client resumes it.
	AutoResume bool `json:"auto_resume,omitempty"`
	// KeepMemory false (with OnTimeoutPause) hibernates the session at
	// its timeout instead of freezing it (hibernate.go); nil or true
	// keeps its memory.
	KeepMemory *bool `json:"keep_memory,omitempty"`
}

// hibernates reports whether the lifecycle hibernates at the timeout.
func (l Lifecycle) hibernates() bool {
	return l.OnTimeout == OnTimeoutPause && l.KeepMemory != nil && !*l.KeepMemory
}

// validate checks the lifecycle's values.
func (l Lifecycle) validate() error {
	switch {
	case l.OnTimeout != "" && l.OnTimeout != OnTimeoutKill && l.OnTimeout != OnTimeoutPause:
		return invalid("lifecycle on_timeout %q: kill or pause", l.OnTimeout)
	case l.AutoResume && l.OnTimeout != OnTimeoutPause:
		return invalid("lifecycle auto_resume needs on_timeout pause")
	case l.KeepMemory != nil && l.OnTimeout != OnTimeoutPause:
		return invalid("lifecycle keep_memory needs on_timeout pause")
	}
	return nil
}

// pausesAtTimeout reports whether s, past a deadline at now, pauses
// rather than ends: its lifecycle says pause and the gateway's maximum
// lifetime since its creation has not come.
func pausesAtTimeout(s *Session, now time.Time) bool {
	return s.lifecycle.OnTimeout == OnTimeoutPause && now.Before(s.created.Add(s.cfg.MaxLifetime))
}

// pauseAtTimeout pauses s at its timeout (pausesAtTimeout), in a goroutine
// the manager owns (Run, Close and Detach wait for it): its sandbox is
// frozen and held as a client's pause holds it, its lifetime then runs to
// the gateway's maximum. A runtime that cannot freeze ends the session
// instead. It does not block; a pause of s still in progress is not
// started twice.
func pauseAtTimeout(ctx context.Context, m *Manager, s *Session, reason string) {
	if !s.pause.timing.CompareAndSwap(false, true) {
		return
	}
	if !m.table.ifOpen(func() { m.pausing.Add(1) }) {
		s.pause.timing.Store(false)
		return
	}
	go func() {
		defer m.pausing.Done()
		defer s.pause.timing.Store(false)
		pctx, cancel := context.WithTimeout(ctx, pauseTimeout)
		defer cancel()
		stop := context.AfterFunc(s.ctx, cancel) // the session closes: stop pausing it
		defer stop()
		if s.lifecycle.hibernates() && m.snaps != nil {
			hctx, hcancel := context.WithTimeout(ctx, m.cfg.SnapshotTimeout)
			err := hibernate(hctx, m, s, reason, true)
			hcancel()
			if err == nil || errors.Is(err, errUsedMeanwhile) || ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Msg("hibernating the session at its timeout failed: it is paused with its memory instead")
		}
		end := s.created.Add(s.cfg.MaxLifetime)
		err := s.pause.holdAtTimeout(pctx, func() { // under the pauser's lock: a resume cannot come in between
			s.mu.Lock()
			s.endAt = end
			s.mu.Unlock()
		})
		if err == nil {
			s.tellEnd(end)
			s.persist()
			s.log.Info().Str("reason", reason).Msg("session paused at its timeout")
			s.first.publish(Event{Type: EventKernel, State: string(s.first.State()), Reason: "paused at its timeout (" + reason + "): resume it to go on"})
			return
		}
		if errors.Is(pctx.Err(), context.Canceled) && ctx.Err() != nil { // the gateway stops: the next one decides
			return
		}
		s.log.Warn().Err(err).Msg("pausing the session at its timeout failed: it ends instead")
		if _, err := m.table.take("", s.id); err != nil {
			return
		}
		defer m.closing.Done()
		cctx, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel2()
		_ = m.end(cctx, s, reason+" (it could not be paused)")
	}()
}

// resumedLifetime is the end of the lifetime of a session resumed from a
// pause at its timeout: its lifetime again from now (the gateway's
// maximum when it had none), never past the maximum since its creation.
func resumedLifetime(s *Session, now time.Time) time.Time {
	return resumedEnd(s.created, s.lifetime, s.cfg.MaxLifetime, now)
}

// resumedEnd is resumedLifetime of a session created at created that
// asked for lifetime (0: none), under the gateway's maximum maxLifetime.
func resumedEnd(created time.Time, lifetime, maxLifetime time.Duration, now time.Time) time.Time {
	limit := created.Add(maxLifetime)
	if lifetime <= 0 || now.Add(lifetime).After(limit) {
		return limit
	}
	return now.Add(lifetime)
}

// resumedAfterTimeout starts the lifetime of s again once it is resumed
// from a pause at its timeout (resumedLifetime), and says so on its
// stream: how names what resumed it.
func resumedAfterTimeout(s *Session, how string) {
	moveEnd(s, resumedLifetime(s, time.Now()))
	s.first.publish(Event{Type: EventKernel, State: string(s.first.State()), Reason: "resumed " + how + " after a pause at its timeout"})
}

// moveEnd makes s end at end: its sandbox is told, its record written
// and the reaper woken. It takes s.mu.
func moveEnd(s *Session, end time.Time) {
	s.mu.Lock()
	s.endAt = end
	s.mu.Unlock()
	s.tellEnd(end)
	s.persist()
	s.wake()
}
