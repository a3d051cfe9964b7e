package sessions_test

import (
	"context"
	"fmt"
	"strings"
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
		e, err := s.First().Execute(ctx, sessions.ExecRequest{Code: code})
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

// TestFairSchedulerSharesBetweenTenants: with 2 slots held by tenant a's
// long cells and 3 more of a's cells waiting, tenant b's cell, which asked
// last, gets the first slot that frees: a holds one, b none. One
// first-come line ran all of a's first.
func TestFairSchedulerSharesBetweenTenants(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{ExecSlots: 2, ExecSlotLease: time.Minute})
	open := func(tenant string) *sessions.Session {
		s, err := m.Create(context.Background(), tenant, sessions.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var a []*sessions.Session
	for range 5 {
		a = append(a, open("a"))
	}
	b := open("b")
	holders := []<-chan ran{runAsync(a[0], "loop"), runAsync(a[1], "loop")}
	waitState(t, a[0], sessions.StateBusy)
	waitState(t, a[1], sessions.StateBusy)
	var waiting []<-chan ran
	for i := 2; i < 5; i++ {
		waiting = append(waiting, runAsync(a[i], fmt.Sprintf("print:a%d", i)))
		testkit.Eventually(t, 5*time.Second, func() bool { return m.Stats().SlotWaiting == i-1 }, "a's cell %d to wait for a slot", i)
	}
	bDone := runAsync(b, "print:b")
	testkit.Eventually(t, 5*time.Second, func() bool { return m.Stats().SlotWaiting == 4 }, "b's cell to wait for a slot")
	if err := a[0].First().Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	(<-bDone).check(t, "b's cell")
	if err := a[1].First().Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(holders, waiting...) {
		<-c
	}
	var order []string
	for _, c := range rt.Executions() {
		if strings.HasPrefix(c.Code, "print:") {
			order = append(order, strings.TrimPrefix(c.Code, "print:"))
		}
	}
	if len(order) != 4 || order[0] != "b" {
		t.Fatalf("cells ran in the order %v; want b first (a already held a slot)", order)
	}
}
