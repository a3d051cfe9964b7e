package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// pauser freezes a session's sandbox once its kernel has gone unused for
// Config.PauseAfter (docker pause, the cgroup freezer): an idle kernel
// then costs no CPU. Whatever uses the kernel (an execution, completion,
// inspection, an interrupt) holds it awake with use, which thaws it first.
// Once frozen, the sandbox's connections through the egress proxy are
// closed (frozen, if set): a frozen kernel must not hold them open.
// Safe for concurrent use.
type pauser struct {
	fz     sandbox.Freezer // nil: this sandbox is never frozen
	after  time.Duration   // 0: never
	log    zerolog.Logger
	frozen func() // called after each freeze, before any thaw; nil: nothing to do

	mu      sync.Mutex // held across Freeze and Thaw: a use waits for a freeze in progress
	users   int
	lastUse time.Time
	off     bool // the runtime cannot freeze this sandbox
	// failed: the last freeze failed (timed out); the next is tried only
	// after the kernel has been used again, not at every reaper tick (a
	// freeze that hangs would keep the kernel half frozen).
	failed bool
	// held: a client paused the sandbox (hold) until it resumes it
	// (unhold); meanwhile use refuses with ErrPaused instead of thawing.
	// Written under mu; read without it.
	held atomic.Bool
	// atTimeout: the hold is the session's pause at its timeout
	// (holdAtTimeout), not a client's; with autoResume, a use resumes it
	// (calling woke) instead of failing. Written under mu.
	atTimeout  atomic.Bool
	autoResume bool   // Lifecycle.AutoResume
	woke       func() // called (after mu) when a use resumed a pause at the timeout; nil: nothing

	closed  bool        // thawForGood: the session closes, nothing freezes it again (under mu)
	reaping atomic.Bool // the reaper has a maybeFreeze of this sandbox in progress
	timing  atomic.Bool // the reaper has a pause at the timeout in progress (pauseAtTimeout)
}

func newPauser(sb sandbox.Sandbox, after time.Duration, log zerolog.Logger, frozen func()) *pauser {
	p := &pauser{after: after, log: log, frozen: frozen, lastUse: time.Now()}
	if fz, ok := sb.(sandbox.Freezer); ok {
		p.fz = fz // frozen by a client's pause always, when idle only if after > 0
	}
	return p
}

// use thaws the sandbox if it is frozen and keeps it awake until the
// returned release is called (exactly once). It blocks for the thaw (a
// few milliseconds) or a freeze in progress.
func (p *pauser) use(ctx context.Context) (release func(), err error) {
	resumed := false
	defer func() { // after the unlock: woke writes the session's record
		if resumed && p.woke != nil {
			p.woke()
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuses() {
		return nil, ErrPaused
	}
	if p.held.Load() { // paused at its timeout, resumed by its use
		if p.fz.Frozen() {
			if err := p.fz.Thaw(ctx); err != nil {
				return nil, err
			}
		}
		p.held.Store(false)
		p.atTimeout.Store(false)
		p.log.Info().Msg("session resumed by its use after a pause at its timeout")
		resumed = true
	}
	if p.fz != nil && p.fz.Frozen() {
		start := time.Now()
		if err := p.fz.Thaw(ctx); err != nil {
			return nil, err
		}
		p.log.Debug().Dur("thaw", time.Since(start)).Msg("kernel resumed")
	}
	p.users++
	p.failed = false
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.users--
			p.lastUse = time.Now()
			p.mu.Unlock()
		})
	}, nil
}

// claim reserves the sandbox for one maybeFreeze by the reaper: it
// returns false when the sandbox is never frozen or one is in progress
// already. The claimer calls unclaim once done. It never blocks.
func (p *pauser) claim() bool {
	return p.fz != nil && p.after > 0 && p.reaping.CompareAndSwap(false, true)
}

func (p *pauser) unclaim() { p.reaping.Store(false) }

// maybeFreeze freezes the sandbox when nothing has used its kernel for
// the pause delay; it reports whether it froze it now. It blocks for the
// freeze (bounded by ctx and the runtime's own freeze timeout), and
// meanwhile so does every use.
func (p *pauser) maybeFreeze(ctx context.Context, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fz == nil || p.after <= 0 || p.held.Load() || p.off || p.failed || p.users > 0 || now.Sub(p.lastUse) < p.after || p.fz.Frozen() {
		return false
	}
	if err := p.fz.Freeze(ctx); err != nil {
		switch {
		case errors.Is(err, sandbox.ErrNoFreeze):
			p.off = true
		case errors.Is(err, sandbox.ErrClosed) || errors.Is(ctx.Err(), context.Canceled): // closing, or the gateway stopping
		default:
			p.failed = true
			p.log.Warn().Err(err).Msg("pausing the idle kernel failed; it stays running, and is paused again only after its next use")
		}
		return false
	}
	p.log.Debug().Msg("kernel paused")
	if p.frozen != nil {
		p.frozen()
	}
	return true
}

// paused reports whether the sandbox is frozen now.
func (p *pauser) paused() bool { return p.fz != nil && p.fz.Frozen() }

// hold freezes the sandbox for a client (POST .../pause), whatever runs
// in it, until unhold: meanwhile use fails with ErrPaused. Holding a held
// sandbox does nothing. It blocks for the freeze (bounded by ctx and the
// runtime's freeze timeout); ErrNoPause when this runtime cannot freeze.
func (p *pauser) hold(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.holdLocked(ctx); err != nil {
		return err
	}
	p.atTimeout.Store(false) // a client's pause of one paused at its timeout is the client's now
	return nil
}

// holdLocked is hold with mu held.
func (p *pauser) holdLocked(ctx context.Context) error {
	if p.closed { // a pause that comes after the close's thaw would freeze what the close must end
		return ErrClosed
	}
	if p.held.Load() {
		return nil
	}
	if p.fz == nil {
		return ErrNoPause
	}
	if !p.fz.Frozen() {
		if err := p.fz.Freeze(ctx); err != nil {
			if errors.Is(err, sandbox.ErrNoFreeze) {
				return ErrNoPause
			}
			return err
		}
		if p.frozen != nil {
			p.frozen()
		}
	}
	p.held.Store(true)
	return nil
}

// holdAtTimeout is hold for the session's pause at its timeout
// (pauseAtTimeout): a use then resumes it when autoResume is set, and a
// resume starts its lifetime again. A sandbox a client holds already
// becomes paused at its timeout too. held, when not nil, is called once
// it is held, under mu (it must not block: it moves the session's end).
func (p *pauser) holdAtTimeout(ctx context.Context, held func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.holdLocked(ctx); err != nil {
		return err
	}
	p.atTimeout.Store(true)
	if held != nil {
		held()
	}
	return nil
}

// unhold thaws a sandbox a client paused (POST .../resume), or its
// timeout did (atTimeout says so); resuming one not paused by a client
// does nothing. It blocks for the thaw.
func (p *pauser) unhold(ctx context.Context) (atTimeout bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held.Load() {
		return false, nil
	}
	if p.fz.Frozen() {
		if err := p.fz.Thaw(ctx); err != nil {
			return false, err
		}
	}
	atTimeout = p.atTimeout.Load()
	p.held.Store(false)
	p.atTimeout.Store(false)
	p.lastUse = time.Now()
	return atTimeout, nil
}

// thawForGood thaws the sandbox for its session's close and keeps it
// thawed: a frozen launcher never reports its command's end (a kill
// waits for the thaw), so the commands' ends would be waited for for
// ever. Whether it was held stays as it was. A thaw that fails is
// logged; the close goes on. It blocks for the thaw.
func (p *pauser) thawForGood(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off, p.closed = true, true // no freeze from now on
	if p.fz != nil && p.fz.Frozen() {
		if err := p.fz.Thaw(ctx); err != nil {
			p.log.Warn().Err(err).Msg("thawing the sandbox for its close failed")
		}
	}
}

// refuses reports whether a use fails with ErrPaused now: a client holds
// the sandbox paused, or its timeout paused it without auto-resume. It
// never blocks.
func (p *pauser) refuses() bool {
	return p.held.Load() && (!p.atTimeout.Load() || !p.autoResume)
}

// isHeld reports whether a client holds the sandbox paused. It never
// blocks.
func (p *pauser) isHeld() bool { return p.held.Load() }

// Pause freezes the whole sandbox (every process, a running cell
// included) for a client until Resume: meanwhile executions, commands,
// completions and interrupts fail with ErrPaused, GET and the file API
// still answer, idle expiry does not run, the lifetime does. Pausing a
// paused session does nothing. ErrNoPause: the runtime cannot freeze.
func (s *Session) Pause(ctx context.Context) error {
	if err := s.pause.hold(ctx); err != nil {
		return fmt.Errorf("sessions: pause: %w", err)
	}
	return nil
}

// Resume thaws a session a client paused, or one paused at its timeout
// (Lifecycle), whose lifetime then starts again; idle expiry counts from
// now. Resuming a session not paused does nothing.
func (s *Session) Resume(ctx context.Context) error {
	atTimeout, err := s.pause.unhold(ctx)
	if err != nil {
		return fmt.Errorf("sessions: resume: %w", err)
	}
	if atTimeout { // paused at its timeout: its lifetime starts again
		resumedAfterTimeout(s, "by a client")
	}
	s.Touch()
	return nil
}
