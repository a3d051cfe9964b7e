package k8s

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
)

// readCounter counts the bytes a server reads from its connections: any
// request that reaches it, on a new or a reused connection.
type readCounter struct {
	net.Listener
	n *atomic.Int64
}

func (l readCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{Conn: c, n: l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// TestAgentClientRefusesRedirects points the runtime's agent client at a
// hostile "agent" (what a pod's code that took the agent's port could
// serve) that answers every call with a redirect to a real agent on
// another loopback address: the client fails with the redirect's status,
// and the real agent never hears of it (no byte read, no control file
// written by a re-sent PUT).
func TestAgentClientRefusesRedirects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	for _, sub := range []string{"workspace", "control", "status"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	control := filepath.Join(dir, "control", "kernel.json")
	token := strings.Repeat("k", 40)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- ServeAgent(ctx, AgentConfig{Workspace: filepath.Join(dir, "workspace"), Token: token, Control: control,
			Status: filepath.Join(dir, "status", "kernel.json")}, readCounter{Listener: ln, n: &reads}, zerolog.Nop())
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	realBase := "http://" + ln.Addr().String()

	// The real agent answers a client of its own (not the runtime's, so
	// no connection of the runtime's pool is kept to it).
	own := &agentClient{base: realBase, token: token, http: &http.Client{Transport: newAgentTransport(nil)}}
	if _, err := own.wait(ctx, 0, "ready", 0); err != nil {
		t.Fatalf("the real agent does not answer: %v", err)
	}
	own.http.CloseIdleConnections()
	before := reads.Load()

	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, realBase+r.URL.RequestURI(), code)
		}))
		ac := &agentClient{base: hostile.URL, token: token, http: newAgentHTTP(newAgentTransport(nil))} // what every driver uses
		_, werr := ac.wait(ctx, 0, "ready", 0)
		cerr := ac.command(ctx, KernelCommand{Gen: 5, Run: true})
		hostile.Close()
		for _, err := range []error{werr, cerr} {
			if err == nil || !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(code)) {
				t.Errorf("redirect %d: %v, want the redirect refused", code, err)
			}
		}
	}
	if n := reads.Load(); n != before {
		t.Fatalf("the real agent read %d bytes through redirects", n-before)
	}
	if _, err := os.Stat(control); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a redirected PUT wrote the control file: %v", err)
	}
}
