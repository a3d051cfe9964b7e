package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// ErrElsewhereUnreachable is returned when the session is served by
// another gateway replica that cannot be reached now (it advertises no address, or the
// runtime cannot say where it is). Retry: a replica that died is replaced
// within its Lease.
var ErrElsewhereUnreachable = errors.New("sessions: the session's gateway cannot be reached now")

// Elsewhere is where another gateway replica serves a session: its
// instance name and the URL of its API.
type Elsewhere struct {
	Owner string
	URL   string
}

// Locate finds tenant's session id for a request this gateway received,
// on a runtime whose sessions several gateways serve (sandbox.Locator):
//   - served here: the session;
//   - served by no live gateway (its gateway was killed and its Lease
//     expired, or a previous run of this one): adopted here now, variables
//     kept, and returned: a session moves on the first request for it;
//   - served by another live gateway: where (Elsewhere), to forward to.
//
// ErrNotFound when no gateway serves it to this tenant (another tenant's
// session is not found either); ErrElsewhereUnreachable when its gateway
// advertises no address or the runtime cannot say. On other runtimes it
// is Get. It makes API calls and may adopt (seconds): ctx bounds it. Safe
// for concurrent use; concurrent callers adopt a session once.
func (m *Manager) Locate(ctx context.Context, tenant, id string) (*Session, Elsewhere, error) {
	s, err := m.Get(tenant, id)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return s, Elsewhere{}, err
	}
	locator, ok := m.rt.(sandbox.Locator)
	if !ok || tenant == "" || !sandbox.IDPattern.MatchString(id) {
		return nil, Elsewhere{}, ErrNotFound
	}
	loc, err := locator.Locate(ctx, id, tenant)
	switch {
	case errors.Is(err, sandbox.ErrNotLocated):
		return nil, Elsewhere{}, ErrNotFound
	case err != nil:
		return nil, Elsewhere{}, fmt.Errorf("%w: %w", ErrElsewhereUnreachable, err)
	case loc.Tenant != tenant:
		return nil, Elsewhere{}, ErrNotFound
	case loc.Orphan != nil:
		// The adoption is the session's, not the request's: a client that
		// gives up must not cut it short (a failed adoption closes what it
		// took over). Waiters give up with their own ctx.
		if !m.table.ifOpen(func() { m.closing.Add(1) }) { // Close and Detach wait for the adoption
			return nil, Elsewhere{}, ErrClosed
		}
		done := make(chan string, 1)
		o := *loc.Orphan
		go func() { // owned by the manager (closing); bounded by StartTimeout (restore)
			defer m.closing.Done()
			done <- m.adoptOrphan(context.WithoutCancel(ctx), o)
		}()
		select {
		case outcome := <-done:
			if outcome == "lost" {
				return nil, Elsewhere{}, fmt.Errorf("%w: %s could not be adopted", ErrElsewhereUnreachable, id)
			}
		case <-ctx.Done():
			return nil, Elsewhere{}, fmt.Errorf("%w: %s is being adopted: %w", ErrElsewhereUnreachable, id, ctx.Err())
		}
		return m.getElsewhere(ctx, tenant, id)
	case loc.Here:
		return m.getElsewhere(ctx, tenant, id)
	case loc.URL == "":
		return nil, Elsewhere{}, fmt.Errorf("%w: gateway %s serves %s and advertises no address", ErrElsewhereUnreachable, loc.Owner, id)
	}
	return nil, Elsewhere{Owner: loc.Owner, URL: loc.URL}, nil
}

// getElsewhere is Get after an adoption, once any adoption of it here has
// ended: a session that is still not here (adopted by another gateway
// first, or closing) is unreachable now.
func (m *Manager) getElsewhere(ctx context.Context, tenant, id string) (*Session, Elsewhere, error) {
	release, err := m.adoptions.claim(ctx, id)
	if err != nil {
		return nil, Elsewhere{}, fmt.Errorf("%w: %s is being adopted: %w", ErrElsewhereUnreachable, id, err)
	}
	release()
	s, err := m.Get(tenant, id)
	if errors.Is(err, ErrNotFound) {
		return nil, Elsewhere{}, fmt.Errorf("%w: %s is moving", ErrElsewhereUnreachable, id)
	}
	return s, Elsewhere{}, err
}

// keyedLock lets one holder per key at a time; the zero value is ready.
type keyedLock struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed on release
}

// claim waits until key is free (or ctx ends) and holds it; the caller
// must call release once.
func (k *keyedLock) claim(ctx context.Context, key string) (release func(), err error) {
	for {
		k.mu.Lock()
		if k.held == nil {
			k.held = map[string]chan struct{}{}
		}
		ch, busy := k.held[key]
		if !busy {
			ch = make(chan struct{})
			k.held[key] = ch
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(ch)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Peers returns the other live gateway replicas of this runtime (each an
// Elsewhere: its instance and API address), for a request that answers
// for them all (a list of every session); none on a runtime whose
// sessions one gateway serves. It makes API calls: ctx bounds it.
func (m *Manager) Peers(ctx context.Context) ([]Elsewhere, error) {
	pl, ok := m.rt.(sandbox.PeerLister)
	if !ok {
		return nil, nil
	}
	peers, err := pl.Peers(ctx)
	if err != nil {
		return nil, fmt.Errorf("sessions: peers: %w", err)
	}
	out := make([]Elsewhere, 0, len(peers))
	for _, p := range peers {
		out = append(out, Elsewhere{Owner: p.Instance, URL: p.URL})
	}
	return out, nil
}
