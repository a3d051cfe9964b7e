package sessions

import "sync/atomic"

// Budget is a gateway-wide allowance of bytes, shared by every session's
// event backlog and by the outputs REST executions collect. It is safe for
// concurrent use.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget returns a budget of size bytes.
func NewBudget(size int64) *Budget { return &Budget{max: size} }

// TryAcquire takes n bytes if they are available.
func (b *Budget) TryAcquire(n int) bool {
	for {
		u := b.used.Load()
		if u+int64(n) > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			return true
		}
	}
}

// Release returns n bytes.
func (b *Budget) Release(n int) { b.used.Add(-int64(n)) }

// Used returns the bytes taken now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Max returns the budget's size.
func (b *Budget) Max() int64 { return b.max }
