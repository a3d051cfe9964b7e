package sessions

import (
	"context"
	"errors"
	"testing"
)

// fakeFreezer is a sandbox.Freezer that only remembers.
type fakeFreezer struct{ frozen bool }

func (f *fakeFreezer) Freeze(context.Context) error { f.frozen = true; return nil }
func (f *fakeFreezer) Thaw(context.Context) error   { f.frozen = false; return nil }
func (f *fakeFreezer) Frozen() bool                 { return f.frozen }

// TestPauserAtTimeout: a pause at the timeout with auto-resume is thawed
// by the next use (woke tells the session); a client's pause of it is the
// client's; without auto-resume uses fail with ErrPaused until the
// resume, which says the pause was at the timeout; a client's pause that
// the timeout finds becomes a pause at the timeout; once the session's
// close has thawed it, nothing freezes it again.
func TestPauserAtTimeout(t *testing.T) {
	ctx := context.Background()
	fz := &fakeFreezer{}
	woke, moved := 0, 0
	p := &pauser{fz: fz, autoResume: true, woke: func() { woke++ }}
	held := func() { moved++ }
	if err := p.holdAtTimeout(ctx, held); err != nil || !fz.frozen || !p.isHeld() || !p.atTimeout.Load() || p.refuses() || moved != 1 {
		t.Fatalf("paused at the timeout: %v frozen %v held %v moved %d", err, fz.frozen, p.isHeld(), moved)
	}
	release, err := p.use(ctx)
	if err != nil || fz.frozen || p.isHeld() || p.atTimeout.Load() || woke != 1 {
		t.Fatalf("a use resumes it: %v frozen %v held %v woke %d", err, fz.frozen, p.isHeld(), woke)
	}
	release()

	// A client's pause of a session paused at its timeout is the client's.
	if err := p.holdAtTimeout(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := p.hold(ctx); err != nil || p.atTimeout.Load() || !p.refuses() {
		t.Fatalf("the client's pause: %v", err)
	}
	if _, err := p.use(ctx); !errors.Is(err, ErrPaused) || !fz.frozen || woke != 1 {
		t.Fatalf("a use of the client's pause: %v", err)
	}
	if atTimeout, err := p.unhold(ctx); err != nil || atTimeout || fz.frozen || p.isHeld() {
		t.Fatalf("resume of the client's pause: %v %v", atTimeout, err)
	}

	// Without auto-resume a use fails until the resume.
	p.autoResume = false
	if err := p.holdAtTimeout(ctx, held); err != nil || !p.refuses() {
		t.Fatalf("paused at the timeout without auto-resume: %v", err)
	}
	if _, err := p.use(ctx); !errors.Is(err, ErrPaused) || !fz.frozen {
		t.Fatalf("a use without auto-resume: %v", err)
	}
	if atTimeout, err := p.unhold(ctx); err != nil || !atTimeout || p.atTimeout.Load() || p.refuses() {
		t.Fatalf("resume: %v %v", atTimeout, err)
	}

	// A client's pause that the timeout finds is paused at the timeout:
	// its resume starts the lifetime again.
	if err := p.hold(ctx); err != nil {
		t.Fatal(err)
	}
	before := moved
	if err := p.holdAtTimeout(ctx, held); err != nil || !p.atTimeout.Load() || moved != before+1 {
		t.Fatalf("the timeout of a client's pause: %v", err)
	}
	if atTimeout, err := p.unhold(ctx); err != nil || !atTimeout {
		t.Fatalf("resume: %v %v", atTimeout, err)
	}

	// The close thaws it for good.
	if err := p.hold(ctx); err != nil {
		t.Fatal(err)
	}
	p.thawForGood(ctx)
	if fz.frozen {
		t.Fatal("the close's thaw left it frozen")
	}
	if err := p.holdAtTimeout(ctx, held); !errors.Is(err, ErrClosed) || fz.frozen {
		t.Fatalf("a pause at the timeout after the close: %v frozen %v", err, fz.frozen)
	}
	if err := p.hold(ctx); !errors.Is(err, ErrClosed) || fz.frozen {
		t.Fatalf("a client's pause after the close: %v frozen %v", err, fz.frozen)
	}
}
