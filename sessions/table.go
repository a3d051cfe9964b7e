package sessions

import (
	"fmt"
	"sync"
)

// table is the manager's register of sessions: the live ones by id, the
// ones being closed or whose sandbox a close left (ending: they still
// count against the caps, and the left ones are listed, dead), the
// creations under way per tenant, and whether the manager is closed to
// new sessions. Safe for concurrent use; its lock is held only inside
// its methods, and ifOpen's f must not call back into it.
type table struct {
	closing *sync.WaitGroup // the manager's: the closes it must wait for

	mu       sync.Mutex
	live     map[string]*Session
	ending   map[string]*closingSession
	starting map[string]int // tenant → sessions being created
	closed   bool
}

// closingSession is a session being closed, or whose sandbox was left (err).
type closingSession struct {
	s        *Session
	err      error // the failed close, once it failed
	retrying bool  // a retry of the sandbox's close is under way
}

func newTable(closing *sync.WaitGroup) *table {
	return &table{closing: closing, live: map[string]*Session{}, ending: map[string]*closingSession{}, starting: map[string]int{}}
}

// reserve counts a creation under way for tenant against the caps (every
// live, ending and starting session counts); unreserve ends it.
func (t *table) reserve(tenant string, maxTotal, maxPerTenant int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	total, mine := len(t.live)+len(t.ending), t.starting[tenant]
	for _, n := range t.starting {
		total += n
	}
	for _, s := range t.live {
		if s.tenant == tenant {
			mine++
		}
	}
	for _, e := range t.ending { // a sandbox still there still counts
		if e.s.tenant == tenant {
			mine++
		}
	}
	if total >= maxTotal {
		return fmt.Errorf("%w: %d sessions in total", ErrTooManySessions, maxTotal)
	}
	if mine >= maxPerTenant {
		return fmt.Errorf("%w: %d sessions per key", ErrTooManySessions, maxPerTenant)
	}
	t.starting[tenant]++
	return nil
}

func (t *table) unreserve(tenant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.starting[tenant]--; t.starting[tenant] <= 0 {
		delete(t.starting, tenant)
	}
}

// ifOpen runs f under the table's lock unless the manager is closed, and
// reports whether it ran: what must not start once Close has begun (an
// insert, a WaitGroup's Add) starts there.
func (t *table) ifOpen(f func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	f()
	return true
}

// insert adds s unless the manager is closed.
func (t *table) insert(s *Session) bool { return t.ifOpen(func() { t.live[s.id] = s }) }

// get returns live session id, or nil.
func (t *table) get(id string) *Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[id]
}

// take moves live session id (of tenant, unless tenant is "") to ending
// so that no new call finds it, and adds its close to the closing group
// (the caller calls Done).
func (t *table) take(tenant, id string) (*Session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.live[id]
	if !ok || (tenant != "" && s.tenant != tenant) {
		return nil, ErrNotFound
	}
	delete(t.live, id)
	t.ending[id] = &closingSession{s: s}
	t.closing.Add(1)
	return s, nil
}

// takeAll closes the table to new sessions and moves every live session
// to ending, for the caller to end.
func (t *table) takeAll() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	all := make([]*Session, 0, len(t.live))
	for id, s := range t.live {
		all = append(all, s)
		delete(t.live, id)
		t.ending[id] = &closingSession{s: s}
	}
	return all
}

// snapshot returns the live sessions now.
func (t *table) snapshot() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := make([]*Session, 0, len(t.live))
	for _, s := range t.live {
		all = append(all, s)
	}
	return all
}

// listed returns tenant's sessions as listed: the live ones and those
// whose sandbox a close left (dead until it is gone).
func (t *table) listed(tenant string) []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var mine []*Session
	for _, e := range t.ending {
		if e.err != nil && e.s.tenant == tenant {
			mine = append(mine, e.s)
		}
	}
	for _, s := range t.live {
		if s.tenant == tenant {
			mine = append(mine, s)
		}
	}
	return mine
}

// isClosed reports whether the manager was closed or detached.
func (t *table) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// release removes s if it is still the live session of its id (another
// gateway took it over), and reports whether it was.
func (t *table) release(s *Session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live[s.id] != s {
		return false
	}
	delete(t.live, s.id)
	return true
}

// ended records the end of s's close: err (an ErrSandboxLeft) keeps it in
// ending, left; nil forgets it.
func (t *table) ended(s *Session, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		delete(t.ending, s.id)
		return
	}
	if e := t.ending[s.id]; e != nil {
		e.err = err
	} else {
		t.ending[s.id] = &closingSession{s: s, err: err}
	}
}

// left returns the sessions whose sandbox a close left and that no retry
// is under way for, marked as retried, each added to the closing group
// (the caller calls Done after retried).
func (t *table) left() []*closingSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	var left []*closingSession
	for _, e := range t.ending {
		if e.err != nil && !e.retrying {
			e.retrying = true
			t.closing.Add(1)
			left = append(left, e)
		}
	}
	return left
}

// retried records a retry of e's sandbox close: err keeps it left; nil
// forgets it.
func (t *table) retried(e *closingSession, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.retrying = false
	if err != nil {
		e.err = fmt.Errorf("%w: %w", ErrSandboxLeft, err)
		return
	}
	delete(t.ending, e.s.id)
}
