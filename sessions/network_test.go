package sessions_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/egress/egresstest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// specRuntime records the specs it is given and can refuse to start.
type specRuntime struct {
	*sessionstest.Runtime
	mu    sync.Mutex
	specs []sandbox.Spec
	fail  bool
}

func (r *specRuntime) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	r.mu.Lock()
	r.specs = append(r.specs, spec)
	fail := r.fail
	r.mu.Unlock()
	if fail {
		return nil, errors.New("fake: cannot start")
	}
	return r.Runtime.Start(ctx, spec)
}

func (r *specRuntime) last() sandbox.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.specs[len(r.specs)-1]
}

func TestSessionNetworkLifecycle(t *testing.T) {
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	egressDir := filepath.Join(dir, "egress")
	rt := &specRuntime{Runtime: sessionstest.NewRuntime(t.TempDir())}
	m, err := sessions.New(sessions.Config{Dial: rt.Dial, Egress: egress.Config{
		Dir: egressDir, Allow: []string{"*.test:*"}, Resolver: egresstest.NewResolver(nil),
	}}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx := context.Background()

	// No list: no proxy, the zero spec field.
	plain, err := m.Create(ctx, "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rt.last().EgressSocket != "" || plain.Info().Network != nil {
		t.Errorf("a session without a list got a network: %q %+v", rt.last().EgressSocket, plain.Info().Network)
	}

	// A list within the ceiling: the proxy listens before the sandbox starts.
	s, err := m.Create(ctx, "t", sessions.CreateOptions{Network: sessions.Network{Allow: []string{"A.test:8080", "*.b.test"}}})
	if err != nil {
		t.Fatal(err)
	}
	sock := rt.last().EgressSocket
	if sock != filepath.Join(egressDir, s.ID(), egress.SocketName) {
		t.Fatalf("spec socket %q", sock)
	}
	if n := s.Info().Network; n == nil || strings.Join(n.Allow, " ") != "a.test:8080 *.b.test" {
		t.Errorf("info network %+v", n)
	}
	// A refusal is a network event of the session.
	sub := s.Subscribe(0)
	defer sub.Close()
	c, err := egresstest.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET http://c.test:8080/ HTTP/1.1\r\nHost: c.test:8080\r\n\r\n"))
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.HasPrefix(line, "HTTP/1.1 403 glassroom egress: host c.test is not in this session's network allowlist") {
		t.Errorf("refusal %q", line)
	}
	timeout := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case ev := <-sub.C:
			if ev.Type == sessions.EventNetwork {
				found = true
				if ev.Host != "c.test" || ev.Port == nil || *ev.Port != 8080 || ev.Allowed == nil || *ev.Allowed || !strings.Contains(ev.Reason, "not in this session's network allowlist") {
					t.Errorf("network event %+v", ev)
				}
			}
		case <-timeout:
			t.Fatal("no network event within 10s of the refusal")
		}
	}
	// Deleting the session stops its proxy.
	if err := m.Delete(ctx, "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("the proxy outlived its session: %v", err)
	}

	// A sandbox that fails to start takes its proxy with it.
	rt.mu.Lock()
	rt.fail = true
	rt.mu.Unlock()
	if _, err := m.Create(ctx, "t", sessions.CreateOptions{Network: sessions.Network{Allow: []string{"a.test"}}}); err == nil {
		t.Fatal("the runtime failed, yet a session exists")
	}
	if _, err := os.Stat(filepath.Dir(rt.last().EgressSocket)); !os.IsNotExist(err) {
		t.Errorf("the proxy outlived a failed create: %v", err)
	}
	rt.mu.Lock()
	rt.fail = false
	started := len(rt.specs)
	rt.mu.Unlock()

	// Beyond the ceiling, or malformed: refused before anything starts.
	for _, allow := range [][]string{{"a.test", "evil.example"}, {"a..test"}} {
		_, err := m.Create(ctx, "t", sessions.CreateOptions{Network: sessions.Network{Allow: allow}})
		var ie *sessions.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(ie.Public(), "network.allow") {
			t.Errorf("%v: %v", allow, err)
		}
	}
	rt.mu.Lock()
	if len(rt.specs) != started {
		t.Error("a refused list reached the runtime")
	}
	rt.mu.Unlock()
	if ents, _ := os.ReadDir(egressDir); len(ents) != 0 {
		t.Errorf("proxy directories left: %v", ents)
	}
}

// TestNetworkedSessionsStartCold: a warm pool's kernels have no network
// (the zero spec); a session asking for one never takes them.
func TestNetworkedSessionsStartCold(t *testing.T) {
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	rt := &specRuntime{Runtime: sessionstest.NewRuntime(t.TempDir())}
	m, err := sessions.New(sessions.Config{Dial: rt.Dial, Pool: 1, Egress: egress.Config{
		Dir: filepath.Join(dir, "egress"), Allow: []string{"*.test"}, Resolver: egresstest.NewResolver(nil),
	}}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; m.Close(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); m.Pool().Ready < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool never filled")
		}
	}
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{Network: sessions.Network{Allow: []string{"a.test"}}})
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	var mine *sandbox.Spec
	for i := range rt.specs {
		if rt.specs[i].ID == s.ID() {
			mine = &rt.specs[i]
		}
	}
	rt.mu.Unlock()
	if mine == nil || mine.EgressSocket == "" {
		t.Fatalf("the networked session took a kernel started without its network: %+v", mine)
	}
	if m.Pool().Ready != 1 {
		t.Errorf("the pooled kernel was taken: %+v", m.Pool())
	}
}
