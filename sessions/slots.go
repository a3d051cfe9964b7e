package sessions

import (
	"context"
	"sync"
	"time"
)

// execSlots is the gateway-wide fair scheduler of executions. When more
// kernels are busy than there are cores, every kernel thread waits its
// turn in the host's run queue at each step of a request, and a cell that
// takes 5 ms alone can take hundreds under load, unevenly. So at most
// `slots` executions run at once; the rest wait in one line, shared
// fairly between tenants (fairSlots: in order within a tenant; a slot
// that frees goes to the waiting tenant that holds the fewest), so a
// tenant that keeps many kernels busy makes another's execution wait for
// the next slot, not behind all of its own. A slot is a lease: an
// execution still running after `lease` gives its slot back and goes on
// unthrottled, so long cells never hold short ones up by more than the
// lease.
type execSlots struct {
	f     *fairSlots
	lease time.Duration
}

func newExecSlots(n int, lease time.Duration) *execSlots {
	if n <= 0 {
		return nil
	}
	return &execSlots{f: newFairSlots(n), lease: lease}
}

// acquire waits for a slot for tenant (or ctx's end) and returns its
// release, which is safe to call more than once; the lease timer releases
// it too.
func (e *execSlots) acquire(ctx context.Context, tenant string) (release func(), err error) {
	if e == nil {
		return func() {}, nil
	}
	rel, err := e.f.acquire(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	free := func() { once.Do(rel) }
	t := time.AfterFunc(e.lease, free)
	return func() { t.Stop(); free() }, nil
}

// Waiting is how many executions wait in the line for a slot now.
func (e *execSlots) Waiting() int {
	if e == nil {
		return 0
	}
	return e.f.waiting()
}
