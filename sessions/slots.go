package sessions

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// execSlots is the gateway-wide fair scheduler of executions. When more
// kernels are busy than there are cores, every kernel thread waits its
// turn in the host's run queue at each step of a request, and a cell that
// takes 5 ms alone can take hundreds under load, unevenly. So at most
// `slots` executions run at once; the rest wait in one first-come,
// first-served line (a channel's waiters are served in order). A slot is a
// lease: an execution still running after `lease` gives its slot back and
// goes on unthrottled, so long cells never hold short ones up by more than
// the lease.
type execSlots struct {
	c       chan struct{}
	lease   time.Duration
	waiting atomic.Int64 // executions in the line, not yet given a slot
}

func newExecSlots(n int, lease time.Duration) *execSlots {
	if n <= 0 {
		return nil
	}
	return &execSlots{c: make(chan struct{}, n), lease: lease}
}

// acquire waits for a slot (or ctx's end) and returns its release, which
// is safe to call more than once; the lease timer releases it too.
func (e *execSlots) acquire(ctx context.Context) (release func(), err error) {
	if e == nil {
		return func() {}, nil
	}
	select {
	case e.c <- struct{}{}: // a free slot: no wait, never counted
	default:
		e.waiting.Add(1)
		select {
		case e.c <- struct{}{}:
			e.waiting.Add(-1)
		case <-ctx.Done():
			e.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	free := func() { once.Do(func() { <-e.c }) }
	t := time.AfterFunc(e.lease, free)
	return func() { t.Stop(); free() }, nil
}

// Waiting is how many executions wait in the line for a slot now.
func (e *execSlots) Waiting() int {
	if e == nil {
		return 0
	}
	return int(e.waiting.Load())
}
