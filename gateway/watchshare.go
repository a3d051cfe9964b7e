package gateway

import (
	"net/http"
	"sync"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
)

// watchShares bounds the files-watch sockets open at once: total
// gateway-wide, of which one tenant holds at most perTenant and one
// session at most perSession, so that one tenant (or one session) cannot
// take every watch and leave the others a 429. Safe for concurrent use.
type watchShares struct {
	total, perTenant, perSession int

	mu       sync.Mutex
	open     int                     // sockets open gateway-wide
	tenants  map[string]int          // sockets open per tenant; no entry at zero
	sessions map[watchSessionKey]int // sockets open per session; no entry at zero
}

// watchSessionKey is a session, with its tenant: session ids are unique,
// but a key that names both cannot mix two tenants' counts even if they
// were not.
type watchSessionKey struct{ tenant, session string }

// newWatchShares returns shares of total sockets: perTenant for each
// tenant, perSession for each session (each at least one and at most the
// one above it).
func newWatchShares(total, perTenant, perSession int) *watchShares {
	total = max(total, 1)
	perTenant = min(max(perTenant, 1), total)
	perSession = min(max(perSession, 1), perTenant)
	return &watchShares{
		total: total, perTenant: perTenant, perSession: perSession,
		tenants: map[string]int{}, sessions: map[watchSessionKey]int{},
	}
}

// acquire takes one socket for session of tenant, or returns a 429
// too_many_watches whose message names the share that is spent (the
// session's, then the tenant's, then the gateway's). release gives the
// socket back; calling it again does nothing.
func (w *watchShares) acquire(tenant, session string) (release func(), err error) {
	k := watchSessionKey{tenant, session}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.sessions[k] >= w.perSession:
		return nil, httperr.New(http.StatusTooManyRequests, "too_many_watches",
			"this session has %d file watches open, a session's share of the gateway's %d; close one first", w.perSession, w.total)
	case w.tenants[tenant] >= w.perTenant:
		return nil, httperr.New(http.StatusTooManyRequests, "too_many_watches",
			"this tenant (API key) has %d file watches open, a tenant's share of the gateway's %d; close one first", w.perTenant, w.total)
	case w.open >= w.total:
		return nil, httperr.New(http.StatusTooManyRequests, "too_many_watches",
			"%d file watches are open on this gateway; retry later", w.total)
	}
	w.open++
	w.tenants[tenant]++
	w.sessions[k]++
	var once sync.Once
	return func() { once.Do(func() { w.release(k) }) }, nil
}

func (w *watchShares) release(k watchSessionKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open--
	if w.tenants[k.tenant]--; w.tenants[k.tenant] <= 0 {
		delete(w.tenants, k.tenant)
	}
	if w.sessions[k]--; w.sessions[k] <= 0 {
		delete(w.sessions, k)
	}
}
