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
// by the next use (woke tells the session); without auto-resume, or once
// a client pauses it too, uses fail with ErrPaused until it is resumed.
func TestPauserAtTimeout(t *testing.T) {
	ctx := context.Background()
	fz := &fakeFreezer{}
	woke := 0
	p := &pauser{fz: fz, autoResume: true, woke: func() { woke++ }}
	if err := p.holdAtTimeout(ctx); err != nil || !fz.frozen || !p.isHeld() || !p.atTimeout.Load() || p.refuses() {
		t.Fatalf("paused at the timeout: %v frozen %v held %v", err, fz.frozen, p.isHeld())
	}
	release, err := p.use(ctx)
	if err != nil || fz.frozen || p.isHeld() || p.atTimeout.Load() || woke != 1 {
		t.Fatalf("a use resumes it: %v frozen %v held %v woke %d", err, fz.frozen, p.isHeld(), woke)
	}
	release()

	// A client's pause of a session paused at its timeout is the client's.
	if err := p.holdAtTimeout(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.hold(ctx); err != nil || p.atTimeout.Load() || !p.refuses() {
		t.Fatalf("the client's pause: %v", err)
	}
	if _, err := p.use(ctx); !errors.Is(err, ErrPaused) || !fz.frozen || woke != 1 {
		t.Fatalf("a use of the client's pause: %v", err)
	}
	if err := p.unhold(ctx); err != nil || fz.frozen || p.isHeld() {
		t.Fatalf("resume: %v", err)
	}

	// Without auto-resume a use fails until the resume.
	p.autoResume = false
	if err := p.holdAtTimeout(ctx); err != nil || !p.refuses() {
		t.Fatalf("paused at the timeout without auto-resume: %v", err)
	}
	if _, err := p.use(ctx); !errors.Is(err, ErrPaused) || !fz.frozen {
		t.Fatalf("a use without auto-resume: %v", err)
	}
	if err := p.unhold(ctx); err != nil || p.atTimeout.Load() || p.refuses() {
		t.Fatalf("resume: %v", err)
	}
}
