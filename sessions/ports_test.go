package sessions_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// TestPortsAndConnections: a server that a command starts in a real
// sandbox is listed among its ports and answers an HTTP request through a
// relay (the sandbox's network stays closed); a port nothing listens on
// is ErrNoListener; the session's end ends an open connection.
func TestPortsAndConnections(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	cmds := s.Commands()
	ctx := context.Background()
	if _, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "echo hello > index.html; exec python3 -m http.server --bind 127.0.0.1 8765", Background: true}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		// The kernel's own listeners (ipykernel's, on ephemeral ports) are
		// listed too.
		ports, err := cmds.Ports(ctx)
		return err == nil && slices.Contains(ports, sessions.Port{Port: 8765, Address: "127.0.0.1"})
	}, "port 8765 listed")

	c, err := cmds.DialPort(ctx, 8765, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://preview/index.html", nil)
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	if resp.StatusCode != 200 || string(body) != "hello\n" {
		t.Fatalf("through the relay: %d %q", resp.StatusCode, body)
	}

	if _, err := cmds.DialPort(ctx, 8766, time.Minute); !errors.Is(err, sessions.ErrNoListener) {
		t.Fatalf("a port nothing listens on: %v", err)
	}
	if _, err := cmds.DialPort(ctx, 70000, time.Minute); !errors.Is(err, sessions.ErrBadSpec) {
		t.Fatalf("port 70000: %v", err)
	}

	// The session's end ends a connection still open.
	open, err := cmds.DialPort(ctx, 8765, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	read := make(chan error, 1)
	go func() { _, err := open.Read(make([]byte, 1)); read <- err }()
	if err := m.Delete(ctx, "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("read after the session's end: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a connection outlived its session")
	}
	if _, err := cmds.DialPort(ctx, 8765, time.Minute); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a connection after the end: %v", err)
	}
}

// BenchmarkDialPort measures a new connection to a port of a real
// sandbox (local runtime): a relay started in the sandbox, connected,
// then closed.
//
//	go test -run '^$' -bench DialPort -benchtime 100x ./sessions/
func BenchmarkDialPort(b *testing.B) {
	testkit.RealThing(b, "bubblewrap")
	m, err := sessions.New(sessions.Config{}, localRuntime(b), zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done; m.Close(context.Background()) })
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cmds := s.Commands()
	if _, err := cmds.Start(context.Background(), sessions.CommandRequest{Cmd: "exec python3 -m http.server --bind 127.0.0.1 8766", Background: true}); err != nil {
		b.Fatal(err)
	}
	for {
		c, err := cmds.DialPort(context.Background(), 8766, time.Minute)
		if err == nil {
			c.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.ResetTimer()
	for range b.N {
		c, err := cmds.DialPort(context.Background(), 8766, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
