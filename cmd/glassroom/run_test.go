package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sessionstore.CheckArg { // in-process gateways check their store with this binary
		os.Exit(sessionstore.CheckMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binDir != "" {
			os.RemoveAll(binDir) // the binary the tests built
		}
		os.Exit(code)
	}))
}

// syncBuffer is a goroutine-safe stdout for run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func stateDir(t *testing.T) string {
	d := t.TempDir()
	for p := d; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	return d
}

var urlRe = regexp.MustCompile(`open (http://[^/]+)/\?token=(\w+)`)

func TestServeShutdownKillsKernels(t *testing.T) {
	state := stateDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := serveInProcess(ctx, t, "--state-dir", state, "--uid-base", strconv.Itoa(testkit.UIDBase(t)))
	base, key := srv.base, srv.key
	if !strings.Contains(srv.out.String(), "generated one") {
		t.Fatalf("generated key not announced: %q", srv.out.String())
	}
	var ids []string
	for i := 0; i < 2; i++ {
		req, _ := http.NewRequest("POST", base+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d", resp.StatusCode)
		}
		ids = append(ids, s.ID)
	}
	uids := map[uint32]bool{}
	for _, id := range ids {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(state, id, "work"), &st); err != nil {
			t.Fatalf("sandbox dir of %s: %v", id, err)
		}
		uids[st.Uid] = true
	}
	if os.Geteuid() == 0 && countProcs(uids) == 0 {
		t.Fatal("no kernel processes found before shutdown")
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/v1/sessions/"+ids[0]+"/ws?token="+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()
	cancel()
	select {
	case err := <-closed:
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("WebSocket client was not told the gateway is going away: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WebSocket not closed on shutdown")
	}
	srv.wait(t)
	if left := sessionDirs(state); len(left) != 0 { // the (now empty) session store, the keys and volumes stay
		t.Fatalf("sandbox dirs left: %v", left)
	}
	if os.Geteuid() == 0 {
		if n := countProcs(uids); n != 0 {
			t.Fatalf("%d kernel processes outlived the gateway", n)
		}
	}
}

// countProcs counts live (non-zombie) processes owned by uids.
func countProcs(uids map[uint32]bool) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var st syscall.Stat_t
		if e.Name()[0] < '0' || e.Name()[0] > '9' || syscall.Stat("/proc/"+e.Name(), &st) != nil || !uids[st.Uid] {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		n++
	}
	return n
}

func TestFlagsAndEnvironment(t *testing.T) {
	var sink bytes.Buffer
	o, err := parse([]string{"serve", "--api-key", "flag-key-0123456789"}, []string{"GLASSROOM_API_KEYS=env-a-0123456789,env-b-0123456789", "GLASSROOM_LISTEN=127.0.0.2:9999", "GLASSROOM_MAX_SESSIONS=7"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.apiKeys, ",") != "flag-key-0123456789" || o.listen != "127.0.0.2:9999" || o.sess.MaxSessions != 7 {
		t.Fatalf("flags over env: %+v", o)
	}
	o, _ = parse([]string{"serve"}, []string{"GLASSROOM_API_KEYS=env-a-0123456789,env-b-0123456789"}, &sink)
	if len(o.apiKeys) != 2 {
		t.Fatalf("env keys: %v", o.apiKeys)
	}
	if _, err := parse([]string{"serve"}, []string{"GLASSROOM_MAX_SESSIONS=many"}, &sink); err == nil {
		t.Fatal("bad env value accepted")
	}
	if _, err := parse([]string{"bogus"}, nil, &sink); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
	err = run(context.Background(), []string{"serve", "--listen", "0.0.0.0:0"}, nil, &sink)
	if err == nil || !strings.Contains(err.Error(), "non-loopback") {
		t.Fatalf("serving on all interfaces without a key: %v", err)
	}
}

// TestPoolPreloadFlag: --pool-preload defaults to the analysis stack,
// takes a comma-separated list from the flag or GLASSROOM_POOL_PRELOAD,
// and "" turns it off; a bad module name fails at startup.
func TestPoolPreloadFlag(t *testing.T) {
	var sink bytes.Buffer
	for _, c := range []struct {
		args, env []string
		want      string
	}{
		{nil, nil, "numpy,pandas,matplotlib.pyplot"},
		{[]string{"--pool-preload", ""}, nil, ""},
		{[]string{"--pool-preload", " scipy , sklearn.linear_model"}, nil, "scipy,sklearn.linear_model"},
		{nil, []string{"GLASSROOM_POOL_PRELOAD=sympy"}, "sympy"},
	} {
		o, err := parse(append([]string{"serve"}, c.args...), c.env, &sink)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(o.sess.PoolPreload, ","); got != c.want {
			t.Errorf("%q %q: preload %q, want %q", c.args, c.env, got, c.want)
		}
	}
	err := run(context.Background(), []string{"serve", "--pool-preload", "numpy;import os"}, nil, &sink)
	if err == nil || !strings.Contains(err.Error(), "module name") {
		t.Fatalf("a bad module name: %v", err)
	}
}

// TestPreviewFlags: --preview-listen alone serves previews at
// localhost:<its port>; --preview-domain names them as browsers reach
// them (http:// unless it says https://) and needs --preview-listen.
func TestPreviewFlags(t *testing.T) {
	var sink bytes.Buffer
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--preview-listen", "127.0.0.1:8890"}, "http://localhost:8890"},
		{[]string{"--preview-listen", "0.0.0.0:8890", "--preview-domain", "https://previews.example.net"}, "https://previews.example.net"},
		{[]string{"--preview-listen", "[::1]:9000", "--preview-domain", "p.test:9000"}, "http://p.test:9000"},
	} {
		o, err := parse(append([]string{"serve"}, c.args...), nil, &sink)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if o.previewListen != "" {
			got = previewBase(o.previewListen, o.previewDomain)
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
	if _, err := parse([]string{"serve", "--preview-domain", "p.test"}, nil, &sink); err == nil {
		t.Fatal("--preview-domain without --preview-listen was taken")
	}
}

// TestInsecureNoSeccompFlag: --insecure-no-seccomp (or its variable)
// reaches the local runtime's InsecureNoSeccomp; it is off by default.
func TestInsecureNoSeccompFlag(t *testing.T) {
	var sink bytes.Buffer
	for _, tc := range []struct {
		args, env []string
		want      bool
	}{
		{[]string{"serve"}, nil, false},
		{[]string{"serve", "--insecure-no-seccomp"}, nil, true},
		{[]string{"serve"}, []string{"GLASSROOM_INSECURE_NO_SECCOMP=true"}, true},
	} {
		o, err := parse(tc.args, tc.env, &sink)
		if err != nil {
			t.Fatal(err)
		}
		if o.insecureNoSeccomp != tc.want {
			t.Errorf("%v %v: insecureNoSeccomp %v", tc.args, tc.env, o.insecureNoSeccomp)
		}
	}
}

func TestEgressFlags(t *testing.T) {
	var sink bytes.Buffer
	o, err := parse([]string{"serve", "--egress-allow", "pypi.org", "--egress-allow", "*.pythonhosted.org:443", "--egress-allow-private", "10.1.2.0/24,192.168.7.9",
		"--egress-rate-kbps", "800", "--egress-max-conns", "3", "--state-dir", "/srv/gr"},
		[]string{"GLASSROOM_EGRESS_ALLOW=env.example", "GLASSROOM_EGRESS_ALLOW_PRIVATE=127.0.0.0/8"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	e := o.sess.Egress
	if strings.Join(e.Allow, " ") != "pypi.org *.pythonhosted.org:443" || len(e.AllowPrivate) != 2 || e.AllowPrivate[1].String() != "192.168.7.9/32" ||
		e.RateBytes != 100_000 || e.MaxConns != 3 || e.Dir != "/srv/gr/egress" {
		t.Fatalf("flags (over env): %+v", e)
	}
	o, err = parse([]string{"serve"}, []string{"GLASSROOM_EGRESS_ALLOW=a.example,b.example:8443", "GLASSROOM_EGRESS_ALLOW_PRIVATE=127.0.0.0/8"}, &sink)
	if err != nil || len(o.sess.Egress.Allow) != 2 || len(o.sess.Egress.AllowPrivate) != 1 || o.sess.Egress.RateBytes != 2_000_000 || o.sess.Egress.Dir != "" ||
		o.sess.Egress.IdleTimeout != 5*time.Minute || o.sess.Egress.MaxConnDuration != time.Hour || len(o.sess.Egress.AllowAddress) != 0 {
		t.Fatalf("env and defaults: %+v %v", o.sess.Egress, err)
	}
	o, err = parse([]string{"serve", "--egress-allow-address", "168.63.129.16,10.0.0.0/24", "--egress-idle-timeout", "30s", "--egress-max-conn-duration", "10m"},
		[]string{"GLASSROOM_EGRESS_ALLOW_ADDRESS=169.254.169.254"}, &sink)
	if e := o.sess.Egress; err != nil || len(e.AllowAddress) != 2 || e.AllowAddress[0].String() != "168.63.129.16/32" || e.IdleTimeout != 30*time.Second || e.MaxConnDuration != 10*time.Minute {
		t.Fatalf("address and timeout flags: %+v %v", o.sess.Egress, err)
	}
	o, err = parse([]string{"serve"}, []string{"GLASSROOM_EGRESS_ALLOW_ADDRESS=169.254.169.254"}, &sink)
	if err != nil || len(o.sess.Egress.AllowAddress) != 1 {
		t.Fatalf("--egress-allow-address from the environment: %+v %v", o.sess.Egress, err)
	}
	for _, bad := range [][]string{
		{"--egress-allow", "a..b"}, {"--egress-allow-private", "10.0.0.0/33"}, {"--egress-allow-private", "intranet"}, {"--egress-rate-kbps", "0"},
		{"--egress-allow-address", "metadata"}, {"--egress-idle-timeout", "0s"}, {"--egress-max-conn-duration", "-1s"},
		{"--egress-allow", "pypi.org", "--runtime", "k8s"}, // kernel pods cannot reach the gateway's proxy
	} {
		if _, err := parse(append([]string{"serve"}, bad...), nil, &sink); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestServeWithEgress runs the gateway with an egress ceiling: a session
// asking within it gets a proxy (its socket in <state-dir>/egress), one
// asking beyond it a 400 naming the pattern. No request leaves the machine:
// no code runs.
func TestServeWithEgress(t *testing.T) {
	state := stateDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := serveInProcess(ctx, t, "--state-dir", state, "--uid-base", strconv.Itoa(testkit.UIDBase(t)), "--egress-allow", "pypi.org,*.pythonhosted.org")
	base, key := srv.base, srv.key
	create := func(body string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	status, body := create(`{"network":{"allow":["files.pythonhosted.org:443"]}}`)
	var s struct {
		ID      string
		Network struct{ Allow []string }
	}
	json.Unmarshal([]byte(body), &s)
	if status != http.StatusCreated || len(s.Network.Allow) != 1 {
		t.Fatalf("within the ceiling: %d %s", status, body)
	}
	if _, err := os.Stat(filepath.Join(state, "egress", s.ID, "proxy.sock")); err != nil {
		t.Errorf("the session's proxy socket: %v", err)
	}
	status, body = create(`{"network":{"allow":["evil.example"]}}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `network.allow \"evil.example\": not within`) {
		t.Errorf("beyond the ceiling: %d %s", status, body)
	}
	cancel()
	srv.wait(t)
	if ents, _ := os.ReadDir(filepath.Join(state, "egress")); len(ents) != 0 {
		t.Errorf("proxy directories outlived the gateway: %v", ents)
	}
}

// served is `glassroom serve` running in this test's process.
type served struct {
	base, key string
	out       *syncBuffer
	errc      chan error // run's result, once ctx has ended
}

// serveInProcess runs `glassroom serve --listen 127.0.0.1:0 --log-level
// warn args...` until ctx ends and waits (10 s at most) for the URL with
// its key that serve prints.
func serveInProcess(ctx context.Context, t *testing.T, args ...string) *served {
	t.Helper()
	testkit.RealThing(t, "a real gateway and kernels")
	s := &served{out: &syncBuffer{}, errc: make(chan error, 1)}
	go func() {
		s.errc <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}, args...), nil, s.out)
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := urlRe.FindStringSubmatch(s.out.String()); m != nil {
			s.base, s.key = m[1], m[2]
			return s
		}
	}
	t.Fatalf("no URL printed: %q", s.out.String())
	return nil
}

// wait waits (60 s at most) for run to return after ctx's end and fails
// t if it returned an error.
func (s *served) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.errc:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not return after shutdown")
	}
}

// TestReadmeDocumentsEveryFlag: every flag of serve has a row in the
// configuration tables of docs/operations.md.
func TestReadmeDocumentsEveryFlag(t *testing.T) {
	var usage bytes.Buffer
	parse([]string{"serve", "-h"}, nil, &usage)
	readme, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1)
	if len(flags) < 30 {
		t.Fatalf("usage lists %d flags: %s", len(flags), usage.String())
	}
	for _, f := range flags {
		if !bytes.Contains(readme, []byte("`--"+f[1]+"`")) {
			t.Errorf("docs/operations.md does not document --%s", f[1])
		}
	}
}

// TestServeMetrics: --metrics-listen serves /metrics on its own address
// without auth; --metrics-token serves it on the main listener to that
// token only.
func TestServeMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	const token = "metrics-token-0123456789"
	ctx, cancel := context.WithCancel(context.Background())
	srv := serveInProcess(ctx, t, "--state-dir", stateDir(t), "--uid-base", strconv.Itoa(testkit.UIDBase(t)), "--metrics-listen", metricsAddr, "--metrics-token", token)
	defer func() { cancel(); <-srv.errc }()
	base := srv.base
	get := func(url, auth string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	var st int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, body = get("http://"+metricsAddr+"/metrics", ""); st == http.StatusOK {
			break
		}
	}
	if st != http.StatusOK || !strings.Contains(body, "glassroom_sessions{") {
		t.Fatalf("the metrics listener: %d %.300s", st, body)
	}
	if st, body = get(base+"/metrics", token); st != http.StatusOK || !strings.Contains(body, "glassroom_sessions{") {
		t.Fatalf("/metrics with the token: %d %.300s", st, body)
	}
	if st, _ = get(base+"/metrics", ""); st != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token: %d", st)
	}
}

// sessionDirs lists the session directories in a gateway's state dir:
// what is left of sandboxes (the session store, the URL signing key, the
// egress, volumes and snapshots directories are the gateway's own).
func sessionDirs(state string) []string {
	left, _ := sandbox.SessionDirs(state)
	return left
}
