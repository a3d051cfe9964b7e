package mcp_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPSessionShares opens MCP sessions over the real gateway's /mcp
// with the go-sdk's client: of 80 initializes at once, one tenant gets its
// share (64) and no more, is refused a 65th with a 429 that names the share, another tenant still gets its
// own, and a session that ends gives its place back. Without the caps
// the 65th opens like the rest and MCP sessions are unbounded.
func TestHTTPSessionShares(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 2*time.Minute)
	const share = 64
	open := func(key string) (*sdk.ClientSession, error) {
		c := sdk.NewClient(&sdk.Implementation{Name: "glassroom-share-test", Version: "1"}, nil)
		return c.Connect(ctx, httpTransport(g.URL, key), nil)
	}
	var mine []*sdk.ClientSession
	t.Cleanup(func() {
		for _, cs := range mine {
			cs.Close()
		}
	})
	// More initializes than the share at once: exactly the share opens.
	var mu sync.Mutex
	var wg sync.WaitGroup
	refused := 0
	for range share + 16 {
		wg.Go(func() {
			cs, err := open(apptest.KeyA)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				mine = append(mine, cs)
			case strings.Contains(err.Error(), http.StatusText(http.StatusTooManyRequests)):
				refused++
			default:
				t.Errorf("open: %v", err)
			}
		})
	}
	wg.Wait()
	if len(mine) != share || refused != 16 {
		t.Fatalf("%d initializes at once: %d opened, %d refused; want %d and 16", share+16, len(mine), refused, share)
	}
	if _, err := open(apptest.KeyA); err == nil || !strings.Contains(err.Error(), http.StatusText(http.StatusTooManyRequests)) {
		t.Fatalf("tenant A past its share of MCP sessions: %v, want 429", err)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/mcp", strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+apptest.KeyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "a tenant's share of the gateway's 256") {
		t.Fatalf("a raw initialize past the share: %d %s", resp.StatusCode, body)
	}
	other := connect(t, ctx, httpTransport(g.URL, apptest.KeyB))
	if r := call(t, ctx, other, "list_languages", map[string]any{}); r.IsError {
		t.Fatalf("tenant B's session does not work: %q", textOf(r))
	}
	if err := mine[0].Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	mine = mine[1:]
	again, err := open(apptest.KeyA)
	if err != nil {
		t.Fatalf("tenant A after ending one session: %v", err)
	}
	mine = append(mine, again)
}
