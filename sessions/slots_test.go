package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// ran is what a cell run from another goroutine reports back to the test's
// own goroutine, which alone may fail the test.
type ran struct {
	e   *sessions.Execution
	err error
}

// runAsync executes code in its own goroutine and reports on the returned
// channel; the test reads it (within the fake kernel's 10 s).
func runAsync(s *sessions.Session, code string) <-chan ran {
	c := make(chan ran, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e, err := s.Execute(ctx, sessions.ExecRequest{Code: code})
		c <- ran{e, err}
	}()
	return c
}

func (r ran) check(t *testing.T, what string) {
	t.Helper()
	if r.err != nil || r.e.Status != "ok" {
		t.Fatalf("%s: %+v %v", what, r.e, r.err)
	}
}

// TestFairSchedulerLeasesSlots: with one execution slot, a long cell gives
// its slot back after the lease, so another session's short cell runs
// while the long one goes on.
func TestFairSchedulerLeasesSlots(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{ExecSlots: 1, ExecSlotLease: 20 * time.Millisecond})
	long, short := fakeSession(t, m), fakeSession(t, m)
	longDone := runAsync(long, "sleep:1s")
	waitState(t, long, sessions.StateBusy)
	if e := run(t, short, "print:quick", 0); e.Stdout != "quick" {
		t.Fatalf("short cell: %+v", e)
	}
	select {
	case r := <-longDone:
		t.Fatalf("the short cell waited for the long one: %+v", r.e)
	default:
	}
	(<-longDone).check(t, "long cell")
}

// TestFairSchedulerQueuesInOrder: with one slot and cells that hold it,
// sessions get their turns in the order they asked. Each asks only once
// the one before it waits in the line (the scheduler's waiting count).
func TestFairSchedulerQueuesInOrder(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{ExecSlots: 1, ExecSlotLease: time.Minute})
	var ss []*sessions.Session
	for i := 0; i < 4; i++ {
		ss = append(ss, fakeSession(t, m))
	}
	blocker := runAsync(ss[0], "sleep:200ms")
	waitState(t, ss[0], sessions.StateBusy)
	order := make(chan int, 3)
	results := make([]<-chan ran, 4)
	for i := 1; i < 4; i++ {
		c := runAsync(ss[i], "sleep:10ms")
		results[i] = c
		testkit.Eventually(t, 5*time.Second, func() bool { return m.Stats().SlotWaiting == i },
			"session %d never waited for the slot", i)
	}
	// Each reports the moment its cell ends: the slot serves them one at a time.
	for i := 1; i < 4; i++ {
		go func() {
			r := <-results[i]
			if r.err == nil && r.e.Status == "ok" {
				order <- i
			} else {
				order <- -i
			}
		}()
	}
	(<-blocker).check(t, "blocker")
	for want := 1; want < 4; want++ {
		if got := <-order; got != want {
			t.Fatalf("session %d ended before %d (negative: it failed)", got, want)
		}
	}
	if w := m.Stats().SlotWaiting; w != 0 {
		t.Fatalf("%d still waiting", w)
	}
}
