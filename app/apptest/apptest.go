// Package apptest starts real glassroom gateways, assembled by package app
// exactly as `glassroom serve` assembles them, on loopback listeners for
// tests: the e2e and client tests, the MCP server's, the SDKs' and the
// density suite. Local is the bubblewrap runtime, Docker the Docker
// runtime (runc); a missing engine or kernel image skips loudly, or fails
// when CI=true (testkit.Unavailable).
//
// Gateway.Call, Body and Decode send a test's raw HTTP requests and read
// the answers, for the packages whose tests talk to a gateway beside the
// Go client (gateway, gateway/jupyter).
//
// It is a test harness: only _test.go files import it.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/snapshots"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// API keys of the test gateways; each is a tenant.
const (
	KeyA = "apptest-key-a-0123456789"
	KeyB = "apptest-key-b-0123456789"
)

// Runtime configures a runtime for one test, its sandboxes on host uids
// of its own (testkit.UIDBase: no other test holds them, in this package
// or another running in parallel).
type Runtime func(t testing.TB) app.Runtime

// Local is the bubblewrap runtime, with its state in a temporary directory.
func Local(t testing.TB) app.Runtime {
	t.Helper()
	testkit.RealThing(t, "bubblewrap and ipykernel")
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o711)
	}
	return app.Runtime{Kind: app.KindLocal, Common: sandbox.Common{StateDir: dir, UIDBase: testkit.UIDBase(t)}}
}

// Docker is the Docker runtime with runc, a fresh instance name and its
// state in a temporary directory.
func Docker(t testing.TB) app.Runtime {
	t.Helper()
	return DockerWith(t, "runc")
}

// DockerWith is the Docker runtime under the OCI runtime oci (runc,
// runsc), with the sessions' usual limits (the runtime caps a gVisor
// session's pids itself).
func DockerWith(t testing.TB, oci string) app.Runtime {
	t.Helper()
	testkit.RealThing(t, "Docker")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o711)
	rt := app.Runtime{Kind: app.KindDocker, Common: sandbox.Common{StateDir: dir, UIDBase: testkit.UIDBase(t)},
		Docker: docker.Config{Instance: "apptest-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36), OCIRuntime: oci}}
	return rt
}

// Runtimes are the runtimes client tests run against.
func Runtimes() map[string]Runtime {
	return map[string]Runtime{"local": Local, "docker": Docker}
}

// Options tune a test gateway.
type Options struct {
	Sessions sessions.Config
	Gateway  gateway.Config // APIKeys default to KeyA and KeyB
	// Previews serves the preview origin on a loopback listener of its
	// own, as http://localhost:<port> (Gateway.PreviewBase is set).
	Previews bool
	// UI is the web notebook's files (nil: none).
	UI fs.FS
	// Snapshots configures the snapshot store (Dir: shared by gateways).
	Snapshots snapshots.Config
}

// Gateway is a real gateway, assembled by app.New, on a loopback listener.
type Gateway struct {
	URL string
	// PreviewAddr is the preview listener's loopback address (with
	// Options.Previews): a preview's host name, {port}-{session}.localhost,
	// resolves to it.
	PreviewAddr string
	App         *app.App
	Server      *gateway.Server
	Manager     *sessions.Manager
}

// Start assembles a gateway over rt and serves it until the test ends;
// cleanup closes the listener, then every session and the runtime. A
// Docker runtime that cannot start (no engine, no image) is Unavailable.
func Start(t testing.TB, rt app.Runtime, opts Options) *Gateway {
	t.Helper()
	gcfg := opts.Gateway
	if len(gcfg.APIKeys) == 0 {
		gcfg.APIKeys = []string{KeyA, KeyB}
	}
	var pln net.Listener
	if opts.Previews {
		var err error
		if pln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pln.Close() })
		gcfg.PreviewBase = "http://localhost:" + strconv.Itoa(pln.Addr().(*net.TCPAddr).Port)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	a, err := app.New(ctx, app.Config{Runtime: rt, Sessions: opts.Sessions, Gateway: gcfg, UI: opts.UI, Snapshots: opts.Snapshots}, zerolog.Nop())
	cancel()
	if err != nil {
		if rt.Kind == app.KindDocker {
			testkit.Unavailable(t, "Docker runtime: %v (run `make image`)", err)
		}
		t.Fatal(err)
	}
	hs := httptest.NewServer(a.Gateway.Handler())
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(rctx, nil); close(done) }()
	previewsDone := make(chan struct{})
	if pln != nil {
		go func() { _ = a.Gateway.ServePreviews(rctx, pln); close(previewsDone) }()
	} else {
		close(previewsDone)
	}
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		stop()
		<-done
		<-previewsDone
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.Close(cctx, false); err != nil {
			t.Logf("apptest: gateway close: %v", err) // what a later TempDir cleanup failure comes from
		}
	})
	g := &Gateway{URL: hs.URL, App: a, Server: a.Gateway, Manager: a.Manager}
	if pln != nil {
		g.PreviewAddr = pln.Addr().String()
	}
	return g
}

// Client returns a Go client of g with key.
func (g *Gateway) Client(t testing.TB, key string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: g.URL, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Call sends one request to g, with the header "Authorization: auth" (none
// when auth is empty), and decodes a JSON answer into out (when non-nil);
// body is as Body makes it. It returns the status code; a request that
// fails fails the test.
func (g *Gateway) Call(t testing.TB, auth, method, path string, body, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, Body(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	return Decode(t, method+" "+path, resp, err, out)
}

// Fetch sends one request to g as Call does and returns the answer's raw
// bytes, for tests that judge them strictly (schemas, unknown fields); an
// answer with another status than want fails the test.
func (g *Gateway) Fetch(t testing.TB, auth, method, path string, body any, want int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, g.URL+path, Body(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return data
}

// Body is body as a request body: nil, a string as it is (bad JSON
// included), or anything else encoded as JSON.
func Body(body any) io.Reader {
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		return bytes.NewReader(j)
	}
}

// Decode ends a request (what names it in failures): it fails the test if
// the request failed, decodes a JSON answer into out (if non-nil) and
// returns the status code.
func Decode(t testing.TB, what string, resp *http.Response, err error, out any) int {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decode %q: %v", what, data, err)
		}
	}
	return resp.StatusCode
}
