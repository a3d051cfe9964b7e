package jupyter

import (
	"container/list"
	"sync"
	"time"
)

// Where each Jupyter client's channels stopped, so that a client that
// reconnects gets the messages it missed from the session's backlog, as
// jupyter_server buffers them for a client that comes back. A position is
// saved when a channels connection with a session_id ends and taken (once)
// by the next connection of the same tenant, kernel and session_id.
//
// The positions are kept per tenant, and bounded per kernel and per
// tenant: a tenant that opens and closes many connections evicts only its
// own positions (the oldest first), never another tenant's.

// resumeLimits bounds a resumeMap.
type resumeLimits struct {
	perKernel int           // positions kept per kernel (its clients' session_ids)
	perTenant int           // positions kept per tenant, over all its kernels
	ttl       time.Duration // how long a position is kept
}

// The limits the gateway keeps positions within: a kernel rarely has more
// than a few browser tabs attached, and a position is about a hundred
// bytes.
const (
	resumePerKernel = 64
	resumePerTenant = 1024
	resumeFor       = 10 * time.Minute
)

func defaultResumeLimits() resumeLimits {
	return resumeLimits{perKernel: resumePerKernel, perTenant: resumePerTenant, ttl: resumeFor}
}

// resumeMap holds the saved positions. Safe for concurrent use; its
// methods never block on anything but its mutex.
type resumeMap struct {
	lim     resumeLimits
	mu      sync.Mutex
	tenants map[string]*tenantResume
}

// tenantResume is one tenant's positions.
type tenantResume struct {
	order   *list.List                          // of *resumeEntry, oldest first
	kernels map[string]map[string]*list.Element // kernel → client → its entry in order
}

type resumeEntry struct {
	kernel, client string
	seq            int64
	at             time.Time
}

func newResumeMap(lim resumeLimits) *resumeMap {
	return &resumeMap{lim: lim, tenants: map[string]*tenantResume{}}
}

// put saves where client's channels to kernel stopped (seq: the last event
// it was sent), evicting the oldest position of the kernel, then of the
// tenant, when either is full.
func (r *resumeMap) put(tenant, kernel, client string, seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	t := r.tenants[tenant]
	if t == nil {
		t = &tenantResume{order: list.New(), kernels: map[string]map[string]*list.Element{}}
		r.tenants[tenant] = t
	}
	r.expire(t, now)
	if el := t.kernels[kernel][client]; el != nil {
		e := el.Value.(*resumeEntry)
		e.seq, e.at = seq, now
		t.order.MoveToBack(el)
		return
	}
	if k := t.kernels[kernel]; len(k) >= r.lim.perKernel {
		var oldest *list.Element
		for _, el := range k {
			if oldest == nil || el.Value.(*resumeEntry).at.Before(oldest.Value.(*resumeEntry).at) {
				oldest = el
			}
		}
		t.remove(oldest)
	}
	if t.order.Len() >= r.lim.perTenant {
		t.remove(t.order.Front())
	}
	k := t.kernels[kernel]
	if k == nil {
		k = map[string]*list.Element{}
		t.kernels[kernel] = k
	}
	k[client] = t.order.PushBack(&resumeEntry{kernel: kernel, client: client, seq: seq, at: now})
}

// take returns and forgets the position saved for client's channels to
// kernel, if there is one that has not expired.
func (r *resumeMap) take(tenant, kernel, client string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tenants[tenant]
	if t == nil {
		return 0, false
	}
	now := time.Now()
	r.expire(t, now)
	el := t.kernels[kernel][client]
	if el == nil {
		r.dropIfEmpty(tenant, t)
		return 0, false
	}
	seq := el.Value.(*resumeEntry).seq
	t.remove(el)
	r.dropIfEmpty(tenant, t)
	return seq, true
}

// count is how many positions are kept for tenant (for tests).
func (r *resumeMap) count(tenant string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tenants[tenant]; t != nil {
		return t.order.Len()
	}
	return 0
}

// expire drops t's positions older than the limit (the oldest are first).
func (r *resumeMap) expire(t *tenantResume, now time.Time) {
	for el := t.order.Front(); el != nil && now.Sub(el.Value.(*resumeEntry).at) > r.lim.ttl; el = t.order.Front() {
		t.remove(el)
	}
}

func (r *resumeMap) dropIfEmpty(tenant string, t *tenantResume) {
	if t.order.Len() == 0 {
		delete(r.tenants, tenant)
	}
}

func (t *tenantResume) remove(el *list.Element) {
	e := t.order.Remove(el).(*resumeEntry)
	k := t.kernels[e.kernel]
	delete(k, e.client)
	if len(k) == 0 {
		delete(t.kernels, e.kernel)
	}
}
