package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestFilesWatchTenantShare: through the real gateway, a tenant that
// opens every files-watch socket it can, over four sessions (40 tries,
// more than the gateway's 32), holds its share (8: 4 per session) and is
// refused with 429 too_many_watches naming the share it spent; another
// tenant still opens watches, its own whole share; a closed watch gives
// its socket back. (Before, the first tenant took all 32 and the other
// got 429.)
func TestFilesWatchTenantShare(t *testing.T) {
	e := newEnv(t, e2bLocal(t), sessions.Config{})
	ctx := context.Background()
	a, b := e.client(keyA), e.client(keyB)

	var held []*glclient.Watch
	defer func() {
		for _, w := range held {
			w.Close()
		}
	}()
	// open takes every watch c can get over sessions, 10 tries each, and
	// returns how many it got and the shares its refusals named.
	open := func(c *glclient.Client, sessions []string) (got int, refused map[string]int) {
		t.Helper()
		refused = map[string]int{}
		for _, id := range sessions {
			for range 10 {
				w, err := c.WatchDir(ctx, id, "", false)
				if err != nil {
					refused[watchRefusal(t, err)]++
					continue
				}
				held = append(held, w)
				got++
			}
		}
		return got, refused
	}

	var as, bs []string
	for range 4 {
		as = append(as, e.create(keyA, nil).ID)
	}
	for range 2 {
		bs = append(bs, e.create(keyB, nil).ID)
	}

	got, refused := open(a, as)
	gotB, refusedB := open(b, bs)
	if gotB != 8 || refusedB["session"] != 2*6 {
		t.Errorf("with tenant A holding %d watches, tenant B opened %d (refusals by share: %v), want its own share of 8", got, gotB, refusedB)
	}
	if got != 8 || refused["session"] != 2*6 || refused["tenant"] != 20 {
		t.Fatalf("tenant A opened %d watches over 4 sessions (refusals by share: %v), want its share of 8: 4 in each of two sessions, then the tenant's share refuses", got, refused)
	}

	// A watch closed gives its socket back: A opens one again, in the
	// session whose watch it closed.
	held[0].Close()
	testkit.Eventually(t, 30*time.Second, func() bool {
		w, err := a.WatchDir(ctx, as[0], "", false)
		if err != nil {
			if r := watchRefusal(t, err); r != "session" {
				t.Errorf("reopening in A's first session: refused by the %s share", r)
			}
			return false
		}
		held[0] = w
		return true
	}, "tenant A's closed watch was not given back")
}

// watchRefusal is the share a files-watch 429 names ("session", "tenant"
// or "gateway"); it fails the test on any other error.
func watchRefusal(t *testing.T, err error) string {
	t.Helper()
	var ae *glclient.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests || ae.Code != "too_many_watches" {
		t.Fatalf("opening a watch: %v, want 429 too_many_watches", err)
	}
	switch {
	case strings.Contains(ae.Message, "a session's share"):
		return "session"
	case strings.Contains(ae.Message, "a tenant's share"):
		return "tenant"
	case strings.Contains(ae.Message, "open on this gateway"):
		return "gateway"
	}
	t.Fatalf("the refusal names no share: %q", ae.Message)
	return ""
}
