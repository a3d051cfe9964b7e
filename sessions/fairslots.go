package sessions

import (
	"container/list"
	"context"
	"sync"
)

// fairSlots is n slots shared by tenants, work-conserving and fair: a
// free slot goes to whoever asks while nobody waits, so one tenant alone
// may hold them all; while tenants wait, a slot that frees goes to the
// waiting tenant that holds the fewest (the earliest of its waiters;
// among tenants holding as few, the one that asked first). So a tenant
// that queues many requests makes another tenant's request wait for the
// next slot to free, never behind the whole queue. Safe for concurrent
// use.
type fairSlots struct {
	mu      sync.Mutex
	free    int
	held    map[string]int // tenant → slots held; no entry at zero
	waiters list.List      // of *slotWaiter, oldest first
}

type slotWaiter struct {
	tenant  string
	granted chan struct{} // closed when the slot is this waiter's
}

func newFairSlots(n int) *fairSlots {
	return &fairSlots{free: n, held: map[string]int{}}
}

// acquire waits for a slot for tenant (or ctx's end) and returns its
// release, which must be called once.
func (f *fairSlots) acquire(ctx context.Context, tenant string) (release func(), err error) {
	f.mu.Lock()
	if f.free > 0 && f.waiters.Len() == 0 {
		f.free--
		f.held[tenant]++
		f.mu.Unlock()
		return func() { f.release(tenant) }, nil
	}
	w := &slotWaiter{tenant: tenant, granted: make(chan struct{})}
	e := f.waiters.PushBack(w)
	f.mu.Unlock()
	select {
	case <-w.granted:
		return func() { f.release(tenant) }, nil
	case <-ctx.Done():
		f.mu.Lock()
		select {
		case <-w.granted: // granted meanwhile: hand it on
			f.mu.Unlock()
			f.release(tenant)
		default:
			f.waiters.Remove(e)
			f.mu.Unlock()
		}
		return nil, ctx.Err()
	}
}

// release gives tenant's slot to the waiter next in fairness, or frees it.
func (f *fairSlots) release(tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[tenant]--; f.held[tenant] <= 0 {
		delete(f.held, tenant)
	}
	var next *list.Element
	for e := f.waiters.Front(); e != nil; e = e.Next() {
		if next == nil || f.held[e.Value.(*slotWaiter).tenant] < f.held[next.Value.(*slotWaiter).tenant] {
			next = e
		}
	}
	if next == nil {
		f.free++
		return
	}
	w := f.waiters.Remove(next).(*slotWaiter)
	f.held[w.tenant]++
	close(w.granted)
}

// active is how many slots are held now.
func (f *fairSlots) active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, h := range f.held {
		n += h
	}
	return n
}

// waiting is how many wait for a slot now.
func (f *fairSlots) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiters.Len()
}
