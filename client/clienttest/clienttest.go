// Package clienttest starts real glassroom gateways (local bubblewrap or
// Docker runtime) on loopback for the tests of clients: the Go client, the
// MCP server, the Python SDK and the MCP clients from npm. It also finds
// the external tools those tests need (Debian's python3, npm) and fails
// instead of skipping when CI=true.
//
// It is a test helper: only _test.go files import it.
package clienttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/docker"
	"github.com/glassroom/glassroom/kernel/local"
	"github.com/glassroom/glassroom/kernel/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
)

// API keys of the test gateways; each is a tenant.
const (
	KeyA = "clienttest-key-a-0123456789"
	KeyB = "clienttest-key-b-0123456789"
)

// InCI reports whether the tests run in CI (CI=true), where a missing
// Docker, python3 module or npm fails instead of skipping.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable fails the test in CI and skips it loudly elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if InCI() {
		t.Fatalf("unavailable in CI: %s", msg)
	}
	t.Skipf("\n\n*** SKIPPING: %s ***\n\n", msg)
}

// Runtime builds a runtime for one test. uidBase keeps the host uids of
// different test packages apart (they may run in parallel).
type Runtime func(t testing.TB, uidBase int) sessions.Runtime

// Local is the bubblewrap runtime.
func Local(t testing.TB, uidBase int) sessions.Runtime {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o711)
	}
	rt, err := local.New(local.Config{Common: sandbox.Common{StateDir: dir, UIDBase: uidBase}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// Docker is the Docker runtime (runc). Without an engine or the kernel
// image it skips loudly, or fails in CI.
func Docker(t testing.TB, uidBase int) sessions.Runtime {
	t.Helper()
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o711)
	cfg := docker.Config{
		Instance: "clienttest-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36), OCIRuntime: "runc",
		Common: sandbox.Common{StateDir: dir, UIDBase: uidBase + 50000},
	}
	rt, err := docker.New(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		Unavailable(t, "Docker runtime: %v (run `make image`)", err)
	}
	t.Cleanup(func() { rt.Close() })
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
}

// Gateway is a real gateway on a loopback listener.
type Gateway struct {
	URL     string
	Server  *gateway.Server
	Manager *sessions.Manager
}

// Start serves a gateway over rt until the test ends; cleanup closes the
// listener, then every session.
func Start(t testing.TB, rt sessions.Runtime, opts Options) *Gateway {
	t.Helper()
	mgr, err := sessions.New(opts.Sessions, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	gcfg := opts.Gateway
	if len(gcfg.APIKeys) == 0 {
		gcfg.APIKeys = []string{KeyA, KeyB}
	}
	srv, err := gateway.New(gcfg, mgr, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { mgr.Run(ctx); close(done) }()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		<-done
		mgr.Close(context.Background())
	})
	return &Gateway{URL: hs.URL, Server: srv, Manager: mgr}
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

// Python returns Debian's /usr/bin/python3 after checking that it imports
// modules (e.g. "websocket"); missing ones skip, or fail in CI.
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	for _, m := range modules {
		if out, err := exec.Command(py, "-c", "import "+m).CombinedOutput(); err != nil {
			Unavailable(t, "%s cannot import %s (make test-deps): %v %s", py, m, err, out)
		}
	}
	return py
}

// NPMInstall runs `npm ci` in dir (a package.json + package-lock.json)
// unless node_modules already matches the lock file, and returns the path
// of node. A file lock keeps parallel test packages from installing at once.
func NPMInstall(t testing.TB, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		Unavailable(t, "node is not installed (make test-deps)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		Unavailable(t, "npm is not installed (make test-deps)")
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	lf, err := os.OpenFile(filepath.Join(dir, ".npm-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	stamp := filepath.Join(dir, "node_modules", ".glassroom-lock-sha256")
	if got, _ := os.ReadFile(stamp); string(got) == want {
		return node
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		Unavailable(t, "npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	return node
}

// RunNode runs `node script args...` in dir (a package NPMInstall has
// installed), decodes the JSON it prints into out and returns what it
// wrote to stderr, for the caller's failure messages. Node is killed
// after four minutes; a failed run or undecodable output fails t.
func RunNode(t testing.TB, dir, script string, out any, args ...string) (stderr string) {
	t.Helper()
	node := NPMInstall(t, dir)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	timer := time.AfterFunc(4*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s in %s: %v\nstdout: %s\nstderr: %s", script, dir, err, stdout, errb.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s output %q: %v\nstderr: %s", script, stdout, err, errb.String())
	}
	return errb.String()
}
