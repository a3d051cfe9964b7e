package sandbox

import "sync"

// LiveSet is the set of session ids that have a sandbox in one runtime
// now, starting ones included: a runtime claims an id before it creates
// anything, so a second Start or Adopt of the same id is refused, and its
// reconciler leaves what is live alone. The zero value is empty and ready;
// it is safe for concurrent use and must not be copied after first use.
type LiveSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

// Claim marks id live. It fails with a *SpecError if id already is.
func (s *LiveSet) Claim(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return &SpecError{Reason: "session " + id + " already has a sandbox"}
	}
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	s.ids[id] = true
	return nil
}

// Has reports whether id is live.
func (s *LiveSet) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// Forget marks id no longer live; forgetting an id that is not is a no-op.
func (s *LiveSet) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}
