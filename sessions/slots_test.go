package sessions_test

import (
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
)

// TestFairSchedulerLeasesSlots: with one execution slot, a long cell gives
// its slot back after the lease, so another session's short cell runs
// while the long one goes on.
func TestFairSchedulerLeasesSlots(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{ExecSlots: 1, ExecSlotLease: 20 * time.Millisecond})
	long, short := fakeSession(t, m), fakeSession(t, m)
	longDone := make(chan time.Time, 1)
	go func() {
		run(t, long, "sleep:1s", 0)
		longDone <- time.Now()
	}()
	waitState(t, long, sessions.StateBusy)
	if e := run(t, short, "print:quick", 0); e.Stdout != "quick" {
		t.Fatalf("short cell: %+v", e)
	}
	select {
	case <-longDone:
		t.Fatal("the short cell waited for the long one")
	default:
	}
	<-longDone
}

// TestFairSchedulerQueuesInOrder: with one slot and cells that hold it,
// sessions get their turns in the order they asked.
func TestFairSchedulerQueuesInOrder(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{ExecSlots: 1, ExecSlotLease: time.Minute})
	var ss []*sessions.Session
	for i := 0; i < 4; i++ {
		ss = append(ss, fakeSession(t, m))
	}
	order := make(chan int, 4)
	blocker := ss[0]
	go func() { run(t, blocker, "sleep:200ms", 0) }()
	waitState(t, blocker, sessions.StateBusy)
	for i := 1; i < 4; i++ {
		go func() {
			run(t, ss[i], "sleep:10ms", 0)
			order <- i
		}()
		time.Sleep(30 * time.Millisecond) // ask in order 1, 2, 3
	}
	for want := 1; want < 4; want++ {
		if got := <-order; got != want {
			t.Fatalf("session %d ran before %d", got, want)
		}
	}
}
