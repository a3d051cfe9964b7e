package sandbox

import (
	"fmt"
	"sync"
)

// Slots hands out small integers, one per live sandbox: runtimes derive a
// sandbox's host uid from its slot. It is safe for concurrent use.
type Slots struct {
	mu   sync.Mutex
	used []bool
	next int // where the search for a free slot starts
}

// NewSlots returns n free slots.
func NewSlots(n int) *Slots { return &Slots{used: make([]bool, n)} }

// Take reserves a free slot; the caller must Release it. It fails with
// ErrUnavailable when every slot is in use.
func (s *Slots) Take() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.used {
		i := (s.next + k) % len(s.used)
		if !s.used[i] {
			s.used[i] = true
			// Round-robin: a uid just released is reused last, so nothing a
			// dying sandbox left behind meets the next one.
			s.next = i + 1
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: all %d sandbox slots in use", ErrUnavailable, len(s.used))
}

// Release frees slot i. Releasing a free slot does nothing.
func (s *Slots) Release(i int) {
	s.mu.Lock()
	if i >= 0 && i < len(s.used) {
		s.used[i] = false
	}
	s.mu.Unlock()
}

// Mark reserves slot i (for a sandbox found at start-up); it reports
// whether it was free.
func (s *Slots) Mark(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.used) || s.used[i] {
		return false
	}
	s.used[i] = true
	return true
}

// InUse returns how many slots are taken.
func (s *Slots) InUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.used {
		if u {
			n++
		}
	}
	return n
}
