package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
)

// peersRuntime serves no session itself and names other replicas
// (sandbox.PeerLister), as the k8s runtime does.
type peersRuntime struct {
	noRuntime
	peers []sandbox.Peer
}

func (r peersRuntime) Peers(context.Context) ([]sandbox.Peer, error) { return r.peers, nil }

var _ sandbox.PeerLister = peersRuntime{}

// fakeReplica answers GET /v1/sessions with its own sessions (ids and
// creation times), paged as a gateway pages them, and records what it
// was asked.
type fakeReplica struct {
	tokens   *sync.Map // token -> [created_at, id], of every replica's sessions
	sessions []struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	mu    sync.Mutex
	asked []*http.Request
}

func (f *fakeReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.asked = append(f.asked, r.Clone(context.Background()))
	f.mu.Unlock()
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit == 0 {
		limit = 100
	}
	var after struct {
		at time.Time
		id string
	}
	if tok := r.URL.Query().Get("next_token"); tok != "" {
		// The same token every replica pages by (sessions.PageToken),
		// perhaps of another replica's session.
		if v, ok := f.tokens.Load(tok); ok {
			k := v.([2]any)
			after.at, after.id = k[0].(time.Time), k[1].(string)
		}
	}
	out := struct {
		Sessions  []any   `json:"sessions"`
		NextToken *string `json:"next_token"`
	}{Sessions: []any{}}
	for _, s := range f.sessions {
		if after.id != "" && (s.CreatedAt.Before(after.at) || (s.CreatedAt.Equal(after.at) && s.ID <= after.id)) {
			continue
		}
		if len(out.Sessions) == limit {
			tok := "more"
			out.NextToken = &tok
			break
		}
		out.Sessions = append(out.Sessions, map[string]any{"id": s.ID, "created_at": s.CreatedAt, "state": "idle"})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// TestListAcrossReplicas (short tier): on a runtime whose replicas share
// sessions, GET /v1/sessions answers every replica's, merged in the
// list's order (creation, then id) and paged across them with one token;
// each replica is asked with the client's credentials, marked forwarded
// (and a forwarded list is not asked further); a replica that does not
// answer is named in Glassroom-Partial and the others still listed.
func TestListAcrossReplicas(t *testing.T) {
	const key = "list-across-key-0123456789"
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	tokens := &sync.Map{}
	a, b := &fakeReplica{tokens: tokens}, &fakeReplica{tokens: tokens}
	// Interleaved creation times: a has 0, 2, 4, ...; b has 1, 3, 5, ...
	for i := range 10 {
		r := a
		if i%2 == 1 {
			r = b
		}
		s := struct {
			ID        string    `json:"id"`
			CreatedAt time.Time `json:"created_at"`
		}{ID: "sess-" + strconv.Itoa(i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		r.sessions = append(r.sessions, s)
		tokens.Store(sessions.PageToken(s.CreatedAt, s.ID), [2]any{s.CreatedAt, s.ID})
	}
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	defer sa.Close()
	defer sb.Close()
	deadLn, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + deadLn.Addr().String()
	deadLn.Close()

	rt := peersRuntime{peers: []sandbox.Peer{{Instance: "gw-a", URL: sa.URL}, {Instance: "gw-b", URL: sb.URL}, {Instance: "gw-dead", URL: dead}}}
	mgr, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close(context.Background())
	srv, err := gateway.New(gateway.Config{APIKeys: []string{key}, Instance: "gw-c"}, mgr, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	list := func(query string, header http.Header) (ids []string, next string, partial string) {
		t.Helper()
		req := httptest.NewRequest("GET", "/v1/sessions?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		for k, v := range header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, rec.Code, rec.Body)
		}
		var page struct {
			Sessions  []struct{ ID string }
			NextToken *string `json:"next_token"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if page.NextToken != nil {
			next = *page.NextToken
		}
		return ids, next, rec.Header().Get(gateway.PartialHeader)
	}

	var all []string
	next := ""
	for pages := 0; ; pages++ {
		q := "limit=4&metadata.team=x"
		if next != "" {
			q += "&next_token=" + url.QueryEscape(next)
		}
		ids, n, partial := list(q, nil)
		if partial != "gw-dead" {
			t.Fatalf("partial %q, want the dead replica named", partial)
		}
		all = append(all, ids...)
		if next = n; next == "" || pages > 5 {
			break
		}
	}
	want := []string{"sess-0", "sess-1", "sess-2", "sess-3", "sess-4", "sess-5", "sess-6", "sess-7", "sess-8", "sess-9"}
	if strings.Join(all, " ") != strings.Join(want, " ") {
		t.Fatalf("across the replicas, paged by 4: %v, want %v", all, want)
	}
	a.mu.Lock()
	first := a.asked[0]
	a.mu.Unlock()
	if first.Header.Get("Authorization") != "Bearer "+key || first.Header.Get(gateway.ForwardedHeader) != "gw-c" ||
		first.URL.Query().Get("metadata.team") != "x" || first.URL.Query().Get("limit") != "4" {
		t.Fatalf("a replica was asked %v %v", first.URL, first.Header)
	}

	// A replica asking for this one's part gets this one's only.
	a.mu.Lock()
	before := len(a.asked)
	a.mu.Unlock()
	if ids, _, _ := list("", http.Header{gateway.ForwardedHeader: {"gw-a"}}); len(ids) != 0 {
		t.Fatalf("a forwarded list: %v", ids)
	}
	a.mu.Lock()
	after := len(a.asked)
	a.mu.Unlock()
	if after != before {
		t.Fatal("a forwarded list asked the other replicas again")
	}
}
