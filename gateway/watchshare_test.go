package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
)

// spent is the share a refusal of acquire names: "session", "tenant" or
// "gateway"; it fails the test on any other error.
func spent(t *testing.T, err error) string {
	t.Helper()
	var he *httperr.Error
	if !errors.As(err, &he) || he.Status != http.StatusTooManyRequests || he.Code != "too_many_watches" {
		t.Fatalf("a refusal is %v, want 429 too_many_watches", err)
	}
	switch {
	case strings.Contains(he.Message, "a session's share"):
		return "session"
	case strings.Contains(he.Message, "a tenant's share"):
		return "tenant"
	case strings.Contains(he.Message, "open on this gateway"):
		return "gateway"
	}
	t.Fatalf("a refusal names no share: %q", he.Message)
	return ""
}

// held reports the sockets open and the map entries of w.
func held(w *watchShares) (open, tenants, sessions int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open, len(w.tenants), len(w.sessions)
}

// TestWatchSharesHostileTenant: a tenant that takes every watch it can,
// over as many sessions as it likes, gets its share and no more; another
// tenant still gets its whole share; four tenants fill the gateway and a
// fifth is refused by the gateway's cap; every release gives its socket
// back (twice is once) and leaves no map entry behind.
func TestWatchSharesHostileTenant(t *testing.T) {
	w := newWatchShares(32, 8, 4)
	var releases []func()
	take := func(tenant string, sessions int) (got int, refusals map[string]int) {
		refusals = map[string]int{}
		for s := range sessions {
			for range 10 { // more than any share
				rel, err := w.acquire(tenant, fmt.Sprintf("%s-s%d", tenant, s))
				if err != nil {
					refusals[spent(t, err)]++
					continue
				}
				got++
				releases = append(releases, rel)
			}
		}
		return got, refusals
	}

	// The hostile tenant: 100 sessions, 10 tries each.
	if got, ref := take("A", 100); got != 8 || ref["session"] != 2*6 || ref["tenant"] != 1000-8-12 || ref["gateway"] != 0 {
		t.Fatalf("tenant A took %d watches (refusals %v), want its share of 8: 4 in each of two sessions", got, ref)
	}
	// Another tenant is untouched by A.
	if got, ref := take("B", 2); got != 8 || ref["session"] != 12 {
		t.Fatalf("tenant B took %d watches beside A's (refusals %v), want its share of 8", got, ref)
	}
	take("C", 2)
	take("D", 2)
	if open, _, _ := held(w); open != 32 {
		t.Fatalf("%d open after four tenants, want the gateway's 32", open)
	}
	if got, ref := take("E", 1); got != 0 || ref["gateway"] != 10 {
		t.Fatalf("a fifth tenant took %d (refusals %v), want only the gateway's refusals", got, ref)
	}

	// A release gives back one socket, once, to its tenant and session.
	releases[0]() // A's first session
	releases[0]()
	if open, _, _ := held(w); open != 31 {
		t.Fatalf("%d open after one release (called twice), want 31", open)
	}
	relE, err := w.acquire("E", "E-s0")
	if err != nil {
		t.Fatalf("a released socket is not free for another tenant: %v", err)
	}
	if _, err := w.acquire("A", "A-s0"); err == nil || spent(t, err) != "gateway" {
		t.Fatalf("the gateway's 32nd socket taken twice: %v", err)
	}
	relE()
	rel, err := w.acquire("A", "A-s0")
	if err != nil {
		t.Fatalf("A cannot take back its released socket: %v", err)
	}
	releases[0] = rel
	for _, r := range releases {
		r()
	}
	if open, tenants, sessions := held(w); open != 0 || tenants != 0 || sessions != 0 {
		t.Fatalf("after every release: %d open, %d tenant and %d session entries left", open, tenants, sessions)
	}
}

// TestWatchSharesConcurrent: goroutines of one tenant racing for watches
// get exactly its share, the sessions theirs; all released, nothing is
// left.
func TestWatchSharesConcurrent(t *testing.T) {
	w := newWatchShares(32, 8, 4)
	var (
		mu       sync.Mutex
		got      = map[string]int{}
		releases []func()
		wg       sync.WaitGroup
	)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := fmt.Sprintf("s%d", i%5)
			rel, err := w.acquire("A", sess)
			if err != nil {
				return
			}
			mu.Lock()
			got[sess]++
			releases = append(releases, rel)
			mu.Unlock()
		}()
	}
	wg.Wait()
	total := 0
	for sess, n := range got {
		if n > 4 {
			t.Errorf("session %s holds %d watches, over its share of 4", sess, n)
		}
		total += n
	}
	if total != 8 {
		t.Errorf("the tenant holds %d watches, want its share of 8", total)
	}
	for _, r := range releases {
		wg.Add(1)
		go func() { defer wg.Done(); r(); r() }()
	}
	wg.Wait()
	if open, tenants, sessions := held(w); open != 0 || tenants != 0 || sessions != 0 {
		t.Fatalf("after every release: %d open, %d tenant and %d session entries left", open, tenants, sessions)
	}
}
