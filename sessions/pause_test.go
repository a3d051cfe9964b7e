package sessions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// freezingRuntime is the fake runtime with sandboxes that can be frozen.
// The first sandbox's freeze never completes until unstick is closed, and
// ignores its context: a runtime that does not bound its freezes.
type freezingRuntime struct {
	*sessionstest.Runtime
	stuckStarted chan struct{} // closed when the first sandbox's freeze begins
	unstick      chan struct{}

	mu          sync.Mutex
	first       string                   // the stuck sandbox's id
	stuckCalled int                      // freezes of the stuck sandbox begun
	frozen      map[string]chan struct{} // by sandbox id, closed at its first freeze
}

// froze returns a channel closed once sandbox id has been frozen.
func (r *freezingRuntime) froze(id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frozenLocked(id)
}

func (r *freezingRuntime) frozenLocked(id string) chan struct{} {
	c, ok := r.frozen[id]
	if !ok {
		c = make(chan struct{})
		r.frozen[id] = c
	}
	return c
}

func (r *freezingRuntime) markFrozen(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.frozenLocked(id)
	select {
	case <-c:
	default:
		close(c)
	}
}

func (r *freezingRuntime) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := r.Runtime.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.first == "" {
		r.first = spec.ID
	}
	r.mu.Unlock()
	return &freezableSandbox{Sandbox: sb.(*sessionstest.Sandbox), rt: r}, nil
}

type freezableSandbox struct {
	*sessionstest.Sandbox
	rt     *freezingRuntime
	mu     sync.Mutex
	frozen bool
}

func (s *freezableSandbox) Freeze(context.Context) error {
	s.rt.mu.Lock()
	stuck := s.ID() == s.rt.first
	if stuck {
		if s.rt.stuckCalled++; s.rt.stuckCalled == 1 {
			close(s.rt.stuckStarted)
		}
	}
	s.rt.mu.Unlock()
	if stuck {
		<-s.rt.unstick
		return context.DeadlineExceeded
	}
	s.mu.Lock()
	s.frozen = true
	s.mu.Unlock()
	s.rt.markFrozen(s.ID())
	return nil
}

func (s *freezableSandbox) Thaw(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = false
	return nil
}

func (s *freezableSandbox) Frozen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frozen
}

// TestStuckFreezeHoldsUpNoOtherSession: one session's freeze never ends;
// meanwhile the reaper goes on pausing the other idle sessions and
// deleting the expired ones, and starts no second freeze of the stuck one.
// Once that freeze has failed, it is tried again only after the kernel
// has been used, not at every tick.
func TestStuckFreezeHoldsUpNoOtherSession(t *testing.T) {
	t.Parallel()
	rt := &freezingRuntime{Runtime: sessionstest.NewRuntime(t.TempDir()), stuckStarted: make(chan struct{}),
		unstick: make(chan struct{}), frozen: map[string]chan struct{}{}}
	m, err := sessions.New(sessions.Config{Dial: rt.Dial, PauseAfter: 20 * time.Millisecond, ReapInterval: 5 * time.Millisecond}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { m.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
	var unstickOnce sync.Once
	unstick := func() { unstickOnce.Do(func() { close(rt.unstick) }) }
	t.Cleanup(unstick) // before Run and Close end: they wait for the freeze
	within := func(what string, c <-chan struct{}) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(20 * time.Second):
			unstick()
			t.Fatal(what)
		}
	}

	stuck := fakeSession(t, m)
	within("the first session was never paused", rt.stuckStarted)

	// Created after the stuck freeze began: their pause and expiry come
	// at later ticks.
	paused := fakeSession(t, m)
	expiring, err := m.Create(context.Background(), "t", sessions.CreateOptions{IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sub := expiring.Subscribe(0)
	defer sub.Close()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for range sub.C { // closed once the session is deleted
		}
	}()
	within("another session was not paused while one freeze hung", rt.froze(paused.ID()))
	within("a session did not expire while one freeze hung", gone)
	if !paused.Info().Paused {
		t.Error("the paused session does not say so")
	}
	if stuck.Info().Paused {
		t.Error("the session whose freeze never completed says it is paused")
	}
	stuckCalls := func() int {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.stuckCalled
	}
	if n := stuckCalls(); n != 1 {
		t.Errorf("%d freezes of the stuck session at once, want 1", n)
	}

	// The freeze fails. It is not tried again at the next ticks (two
	// sessions created later get paused meanwhile), only once the kernel
	// has been used.
	unstick()
	for _, id := range []string{fakeSession(t, m).ID(), fakeSession(t, m).ID()} {
		within("a later session was not paused", rt.froze(id))
	}
	if n := stuckCalls(); n != 1 {
		t.Errorf("the failed freeze was tried %d times more before the kernel was used again", n-1)
	}
	if x := run(t, stuck, "1", 0); x.Status != "ok" {
		t.Fatalf("%+v", x)
	}
	// Each round waits for the pause of a new session: a reaper tick that
	// has passed since the use.
	for deadline := time.Now().Add(30 * time.Second); stuckCalls() == 1; {
		if time.Now().After(deadline) {
			t.Fatal("the stuck session's freeze was never tried again within 30s of its use (later sessions were paused meanwhile)")
		}
		within("the stuck session was never tried again after its use", rt.froze(fakeSession(t, m).ID()))
	}
}
