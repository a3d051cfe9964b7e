package kernel

import (
	"sync"
	"sync/atomic"
)

// outputOrder keeps the kernel's iopub order across the two ways its
// messages leave the client: a request's events, which its caller takes
// (Execute's onEvent), and the side stream, which its consumer takes
// (Side). Each iopub message is numbered as it is routed; an event
// routed to a request is held until its caller has handled it (or the
// request ended), and a side message's consumer may wait (SideReady)
// until no event numbered before it is held, so that a comm handler's
// output never overtakes the cell's last output. Safe for concurrent use:
// the iopub read loop numbers and holds, callers release, consumers wait.
type outputOrder struct {
	last atomic.Int64 // the number of the last iopub message routed (only the iopub read loop adds)

	mu      sync.Mutex
	pending []int64        // held numbers, ascending (its front may be released already)
	held    map[int64]bool // the numbers still held
	changed chan struct{}  // closed (and replaced) when the lowest held number moves on
}

func newOutputOrder() *outputOrder {
	return &outputOrder{held: map[int64]bool{}, changed: make(chan struct{})}
}

// next numbers the next iopub message. The iopub read loop only.
func (o *outputOrder) next() int64 { return o.last.Add(1) }

// hold records that message n went to a request's caller, in the order
// next gave (the iopub read loop only); 0 (a message of another channel,
// never numbered) is ignored.
func (o *outputOrder) hold(n int64) {
	if n == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = append(o.pending, n)
	o.held[n] = true
}

// release records that message n was handled (or will never be): its
// caller took it, the request ended, or it was dropped. Idempotent; 0 (a
// message that was never numbered) is ignored.
func (o *outputOrder) release(n int64) {
	if n == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.held[n] {
		return
	}
	delete(o.held, n)
	moved := false
	for len(o.pending) > 0 && !o.held[o.pending[0]] {
		o.pending = o.pending[1:]
		moved = true
	}
	if moved {
		close(o.changed)
		o.changed = make(chan struct{})
	}
}

// blocker returns nil when no message numbered before n is held, else a
// channel closed when the lowest held number moves on (ask again then).
func (o *outputOrder) blocker(n int64) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 || o.pending[0] >= n {
		return nil
	}
	return o.changed
}
