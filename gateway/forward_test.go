package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// locatorRuntime serves no session itself and says where each of its
// table's sessions is (sandbox.Locator), as the k8s runtime does for the
// sessions of other replicas.
type locatorRuntime struct {
	noRuntime
	where map[string]sandbox.Location
}

func (r locatorRuntime) Locate(_ context.Context, id, tenant string) (sandbox.Location, error) {
	loc, ok := r.where[id]
	if !ok || loc.Tenant != tenant {
		return sandbox.Location{}, sandbox.ErrNotLocated
	}
	return loc, nil
}

var _ sandbox.Locator = locatorRuntime{}

func tenantOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// TestForwardToTheOwningReplica (short tier): a gateway whose runtime
// locates a session on another replica proxies its requests there, the
// path, query, body and client's credentials intact and the replica's
// answer as it is, WebSockets included; a forwarded request is not
// forwarded again, another tenant's session is not found, and an owner
// that cannot be reached is a 503 to retry. Shutdown ends a forwarded
// WebSocket.
func TestForwardToTheOwningReplica(t *testing.T) {
	const key, otherKey = "forward-test-key-0123456789", "forward-other-key-0123456789"
	var ownerCalls atomic.Int64
	upgrader := websocket.Upgrader{}
	owner := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ownerCalls.Add(1)
		if strings.HasSuffix(r.URL.Path, "/ws") {
			conn, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				mt, data, err := conn.ReadMessage()
				if err != nil {
					return
				}
				if conn.WriteMessage(mt, append([]byte("owner: "), data...)) != nil {
					return
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set(gateway.ServedByHeader, "gw-a")
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery,
			"auth": r.Header.Get("Authorization"), "by": r.Header.Get(gateway.ForwardedHeader), "body": string(body)})
	})}
	ownerLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go owner.Serve(ownerLn)
	defer owner.Close()
	deadLn, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + deadLn.Addr().String()
	deadLn.Close()

	rt := locatorRuntime{where: map[string]sandbox.Location{
		"elsewhere-0001": {Tenant: tenantOf(key), Owner: "gw-a", URL: "http://" + ownerLn.Addr().String()},
		"unreachable-01": {Tenant: tenantOf(key), Owner: "gw-dead", URL: deadURL},
		"no-address-001": {Tenant: tenantOf(key), Owner: "gw-mute"},
	}}
	mgr, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(gateway.Config{APIKeys: []string{key, otherKey}, Instance: "gw-b"}, mgr, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	do := func(key, method, path, body string, header http.Header) (*http.Response, map[string]string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]string
		data, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(data, &out)
		return resp, out
	}

	resp, got := do(key, "POST", "/v1/sessions/elsewhere-0001/execute?wait=1", `{"code":"x + 1"}`, nil)
	if resp.StatusCode != http.StatusAccepted || got["method"] != "POST" || got["path"] != "/v1/sessions/elsewhere-0001/execute" ||
		got["query"] != "wait=1" || got["auth"] != "Bearer "+key || got["by"] != "gw-b" || got["body"] != `{"code":"x + 1"}` {
		t.Fatalf("forwarded execute: %d %v", resp.StatusCode, got)
	}
	if v := resp.Header.Values("X-Content-Type-Options"); len(v) != 1 {
		t.Fatalf("the owner's headers and this replica's both: %v", v)
	}
	if v := resp.Header.Values(gateway.ServedByHeader); len(v) != 1 || v[0] != "gw-a" {
		t.Fatalf("a forwarded answer names %v as its server, want the owner gw-a only", v)
	}

	// A WebSocket is carried both ways.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/v1/sessions/elsewhere-0001/ws?token="+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, data, err := ws.ReadMessage(); err != nil || string(data) != "owner: hello" {
		t.Fatalf("through the forwarded WebSocket: %q %v", data, err)
	}

	calls := ownerCalls.Load()
	for _, c := range []struct {
		name, key, path string
		header          http.Header
		status          int
		code            string
	}{
		{"another tenant", otherKey, "/v1/sessions/elsewhere-0001", nil, http.StatusNotFound, "not_found"},
		{"unknown", key, "/v1/sessions/nowhere-000001", nil, http.StatusNotFound, "not_found"},
		{"forwarded already", key, "/v1/sessions/elsewhere-0001", http.Header{gateway.ForwardedHeader: {"gw-c"}}, http.StatusServiceUnavailable, "session_moving"},
		{"owner unreachable", key, "/v1/sessions/unreachable-01", nil, http.StatusServiceUnavailable, "session_moving"},
		{"owner without an address", key, "/v1/sessions/no-address-001", nil, http.StatusServiceUnavailable, "session_moving"},
	} {
		req, _ := http.NewRequest("GET", base+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		for k, v := range c.header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error struct{ Code string } }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || body.Error.Code != c.code {
			t.Fatalf("%s: %d %q, want %d %s", c.name, resp.StatusCode, body.Error.Code, c.status, c.code)
		}
		if c.status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: no Retry-After", c.name)
		}
	}
	if n := ownerCalls.Load(); n != calls {
		t.Fatalf("the owner was called %d more times for requests that must not reach it", n-calls)
	}

	// The gateway's shutdown ends the forwarded WebSocket.
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return with a forwarded WebSocket open")
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("the forwarded WebSocket outlived the gateway")
	}
	ws.Close()
	mgr.Close(context.Background())
}

// movingLocator says a session is on another replica until moved() is
// called, after which it is on none (adopted here, say).
type movingLocator struct {
	noRuntime
	owner, url, tenant string
	gone               atomic.Bool
}

func (r *movingLocator) Locate(_ context.Context, id, tenant string) (sandbox.Location, error) {
	if tenant != r.tenant || r.gone.Load() {
		return sandbox.Location{}, sandbox.ErrNotLocated
	}
	return sandbox.Location{Tenant: tenant, Owner: r.owner, URL: r.url}, nil
}

// TestForwardCutWhenTheOwnerMoves (short tier): a request forwarded to a
// replica that never answers (paused) is cut with 503 session_moving once
// that replica no longer serves the session, so that the client retries
// where it is now, rather than wait for ever.
func TestForwardCutWhenTheOwnerMoves(t *testing.T) {
	const key = "forward-moving-key-0123456789"
	held := make(chan struct{})
	release := make(chan struct{})
	owner := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(held)
		select { // a paused replica: no answer
		case <-release:
		case <-r.Context().Done():
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go owner.Serve(ln)
	defer owner.Close()
	defer close(release)
	rt := &movingLocator{owner: "gw-paused", url: "http://" + ln.Addr().String(), tenant: tenantOf(key)}
	mgr, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close(context.Background())
	srv, err := gateway.New(gateway.Config{APIKeys: []string{key}, Instance: "gw-b"}, mgr, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   string
		retry  string
	}
	got := make(chan answer, 1)
	go func() {
		req := httptest.NewRequest("POST", "/v1/sessions/moving-0001/execute", strings.NewReader(`{"code":"x"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		got <- answer{rec.Code, rec.Body.String(), rec.Header().Get("Retry-After")}
	}()
	<-held // forwarded, and held by the paused owner
	rt.gone.Store(true)
	select {
	case a := <-got:
		if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "session_moving") || a.retry == "" {
			t.Fatalf("a forwarded request whose owner moved: %+v", a)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a forwarded request waited on an owner that no longer serves the session")
	}
}
