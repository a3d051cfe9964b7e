package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/egress/egresstest"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// upstream is a real HTTP server on host loopback that counts its hits.
type upstream struct {
	srv  *httptest.Server
	port int
	hits atomic.Int64
}

func newUpstream(t testing.TB, tlsNames ...string) (*upstream, *x509.CertPool) {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		if n, err := strconv.Atoi(r.URL.Query().Get("bytes")); err == nil {
			w.Write(make([]byte, n))
			return
		}
		fmt.Fprintf(w, "hello from upstream: host=%s uri=%s proxy-conn=%q", r.Host, r.RequestURI, r.Header.Get("Proxy-Connection"))
	}))
	var pool *x509.CertPool
	if len(tlsNames) > 0 {
		cert, ca, err := egresstest.Certificate(tlsNames...)
		if err != nil {
			t.Fatal(err)
		}
		pool = x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		u.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		u.srv.StartTLS()
	} else {
		u.srv.Start()
	}
	t.Cleanup(u.srv.Close)
	u.port = u.srv.Listener.Addr().(*net.TCPAddr).Port
	return u, pool
}

// harness is one session's proxy with what it decided.
type harness struct {
	proxy *egress.Proxy
	res   *egresstest.Resolver
	mu    sync.Mutex
	seen  []egress.Decision
}

func (h *harness) decisions() []egress.Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]egress.Decision(nil), h.seen...)
}

// loopback is what tests must pass as AllowPrivate to reach upstreams on
// host loopback; without it, 127.0.0.1 is refused like any private address.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// egressDir is a fresh directory for proxies whose parents sandbox uids
// can traverse (as root, Start checks that they can).
func egressDir(t testing.TB) string {
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	return filepath.Join(dir, "egress")
}

func startProxy(t testing.TB, cfg egress.Config, allow ...string) *harness {
	t.Helper()
	h := &harness{res: egresstest.NewResolver(map[string]string{
		"internal.test": "10.0.0.1",
		"any.wild.test": "10.0.0.1",
		"meta.test":     "169.254.169.254",
		"v6local.test":  "fd00::1",
		"mixed.test":    "10.0.0.1,127.0.0.1",
	})}
	if cfg.Dir == "" { // longer than a socket path may be: the proxy binds through a descriptor
		cfg.Dir = filepath.Join(egressDir(t), strings.Repeat("long-", 20))
	}
	if cfg.Allow == nil {
		cfg.Allow = []string{"*.test:*", "127.0.0.1:*", "10.0.0.1:*"}
	}
	cfg.Resolver = h.res
	log := zerolog.New(zerolog.NewTestWriter(t))
	if _, bench := t.(*testing.B); bench {
		log = zerolog.Nop()
	}
	svc, err := egress.NewService(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := svc.Admit(allow)
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Start("session-"+strconv.FormatInt(time.Now().UnixNano(), 36), pol, func(d egress.Decision) {
		h.mu.Lock()
		h.seen = append(h.seen, d)
		h.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	h.proxy = p
	return h
}

// client is an HTTP client whose proxy is the harness's socket: plain
// http:// requests go as absolute URIs, https:// ones through CONNECT.
func (h *harness) client(roots *x509.CertPool) *http.Client {
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:3128"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return egresstest.Dial(ctx, h.proxy.Socket())
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		DisableKeepAlives: true,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestAllowedNameOverHTTPAndCONNECT(t *testing.T) {
	plain, _ := newUpstream(t)
	secure, roots := newUpstream(t, "allowed.test")
	h := startProxy(t, egress.Config{AllowPrivate: loopback}, "allowed.test:"+strconv.Itoa(plain.port), "allowed.test:"+strconv.Itoa(secure.port))
	c := h.client(roots)

	status, body, err := get(t, c, fmt.Sprintf("http://allowed.test:%d/path?q=1", plain.port))
	if err != nil || status != 200 {
		t.Fatalf("plain http: %d %q %v", status, body, err)
	}
	// The destination gets origin form, its own Host, no proxy headers.
	if want := fmt.Sprintf("host=allowed.test:%d uri=/path?q=1 proxy-conn=\"\"", plain.port); !strings.Contains(body, want) {
		t.Errorf("upstream saw %q, want %q", body, want)
	}
	status, body, err = get(t, c, fmt.Sprintf("https://allowed.test:%d/tls", secure.port))
	if err != nil || status != 200 || !strings.Contains(body, "uri=/tls") {
		t.Fatalf("https through CONNECT: %d %q %v", status, body, err)
	}
	if plain.hits.Load() != 1 || secure.hits.Load() != 1 {
		t.Errorf("hits %d %d", plain.hits.Load(), secure.hits.Load())
	}
	ds := h.decisions()
	if len(ds) != 2 || !ds[0].Allowed || ds[0].Method != "GET" || ds[1].Method != "CONNECT" || ds[1].Host != "allowed.test" || ds[1].Port != secure.port {
		t.Errorf("decisions %+v", ds)
	}
	if ds[0].Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("dialed %v", ds[0].Addr)
	}
	// One resolution per connection: the proxy dials what it checked, never the name again.
	if n := h.res.Lookups("allowed.test"); n != 2 {
		t.Errorf("allowed.test looked up %d times for 2 connections", n)
	}
	st := h.proxy.Stats()
	if st.Allowed != 2 || st.Refused != 0 || st.BytesUp == 0 || st.BytesDown == 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestRefusals(t *testing.T) {
	plain, _ := newUpstream(t)
	port := strconv.Itoa(plain.port)
	h := startProxy(t, egress.Config{AllowPrivate: loopback},
		"allowed.test:"+port, "*.wild.test:"+port, "internal.test:"+port, "meta.test:"+port, "v6local.test:"+port,
		"10.0.0.1:"+port)
	c := h.client(nil)
	cases := []struct {
		url, host, want string
	}{
		{"http://denied.test:" + port + "/", "denied.test", "host denied.test is not in this session's network allowlist"},
		{"https://denied.test:" + port + "/", "denied.test", "host denied.test is not in this session's network allowlist"},
		{"http://wild.test:" + port + "/", "wild.test", "host wild.test is not in this session's network allowlist"},
		{"http://127.0.0.1:" + port + "/", "127.0.0.1", "IP address 127.0.0.1 is not in this session's network allowlist"},
		{"https://127.0.0.1:" + port + "/", "127.0.0.1", "IP address 127.0.0.1 is not in this session's network allowlist"},
		{"http://[::1]:" + port + "/", "::1", "IP address ::1 is not in this session's network allowlist"},
		{"http://2130706433:" + port + "/", "2130706433", "not a host name or IP address"},
		{"http://allowed.test:1/", "allowed.test", "port 1 is not allowed for allowed.test"},
		{"http://allowed.test/", "allowed.test", "port 80 is not allowed for allowed.test"},
		// Why, never which address: the session must not learn what internal names resolve to.
		{"http://internal.test:" + port + "/", "internal.test", "internal.test resolves to a forbidden address (private)"},
		{"https://meta.test:" + port + "/", "meta.test", "meta.test resolves to a forbidden address (cloud metadata service)"},
		{"http://v6local.test:" + port + "/", "v6local.test", "v6local.test resolves to a forbidden address (unique local (private))"},
		{"http://any.wild.test:" + port + "/", "any.wild.test", "any.wild.test resolves to a forbidden address (private)"},
		{"http://10.0.0.1:" + port + "/", "10.0.0.1", "10.0.0.1 is a forbidden address (private)"},
	}
	for i, tc := range cases {
		status, body, err := get(t, c, tc.url)
		for _, resolved := range []string{"10.0.0.1", "169.254.169.254", "fd00::1"} {
			if !strings.Contains(tc.url, resolved) && (strings.Contains(body, resolved) || err != nil && strings.Contains(err.Error(), resolved)) {
				t.Errorf("%s: the refusal names the resolved address %s: %q %v", tc.url, resolved, body, err)
			}
		}
		if strings.HasPrefix(tc.url, "https") {
			// CONNECT refused: the client reports the status line.
			if err == nil || !strings.Contains(err.Error(), "glassroom egress: "+tc.want) {
				t.Errorf("%s: want an error naming %q, got %v", tc.url, tc.want, err)
			}
		} else if status != http.StatusForbidden || !strings.Contains(body, "glassroom egress: "+tc.want) {
			t.Errorf("%s: %d %q %v, want 403 %q", tc.url, status, body, err, tc.want)
		}
		ds := h.decisions()
		if len(ds) != i+1 {
			t.Fatalf("%s: %d decisions after %d requests", tc.url, len(ds), i+1)
		}
		if d := ds[i]; d.Allowed || d.Status != http.StatusForbidden || d.Host != tc.host || !strings.Contains(d.Reason, tc.want) {
			t.Errorf("%s: decision %+v", tc.url, d)
		} else if d.Addr.IsValid() || strings.Contains(d.Reason, "10.0.0.1") && !strings.Contains(tc.url, "10.0.0.1") {
			t.Errorf("%s: the decision carries the resolved address: %+v", tc.url, d)
		}
	}
	if n := plain.hits.Load(); n != 0 {
		t.Errorf("a refused request reached the upstream %d times", n)
	}
	// Names refused by the policy are never even resolved.
	if h.res.Lookups("denied.test") != 0 || h.res.Lookups("wild.test") != 0 {
		t.Error("a name outside the allowlist was resolved")
	}
	// A name resolving to a forbidden and an allowed address: only the allowed one is dialed.
	h2 := startProxy(t, egress.Config{AllowPrivate: loopback}, "mixed.test:"+port)
	if status, _, err := get(t, h2.client(nil), "http://mixed.test:"+port+"/"); status != 200 || err != nil {
		t.Fatalf("mixed.test: %d %v", status, err)
	}
	if ds := h2.decisions(); len(ds) != 1 || ds[0].Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("mixed.test decisions %+v", ds)
	}
}

func TestLoopbackNeedsTheOperator(t *testing.T) {
	plain, _ := newUpstream(t)
	port := strconv.Itoa(plain.port)
	h := startProxy(t, egress.Config{}, "allowed.test:"+port, "127.0.0.1:"+port)
	for _, u := range []string{"http://allowed.test:" + port + "/", "http://127.0.0.1:" + port + "/"} {
		status, body, _ := get(t, h.client(nil), u)
		if status != http.StatusForbidden || !strings.Contains(body, "forbidden address") || !strings.Contains(body, "(loopback)") {
			t.Errorf("%s without --egress-allow-private: %d %q", u, status, body)
		}
	}
	if plain.hits.Load() != 0 {
		t.Error("loopback reached without the operator's consent")
	}
	// An IP literal the session names, with the operator's range: allowed.
	h2 := startProxy(t, egress.Config{AllowPrivate: loopback}, "127.0.0.1:"+port)
	if status, _, err := get(t, h2.client(nil), "http://127.0.0.1:"+port+"/"); status != 200 || err != nil {
		t.Errorf("IP literal in the list, range allowed: %d %v", status, err)
	}
}

func TestBadRequests(t *testing.T) {
	h := startProxy(t, egress.Config{AllowPrivate: loopback, MaxHeadBytes: 4096, HeadTimeout: 2 * time.Second}, "allowed.test")
	cases := map[string]string{
		"garbage\r\n\r\n": "400 glassroom egress: malformed",
		"GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n":                              "400 glassroom egress: only absolute http:// URLs",
		"GET https://allowed.test/ HTTP/1.1\r\nHost: x\r\n\r\n":                             "400 glassroom egress: only absolute http:// URLs",
		"CONNECT allowed.test HTTP/1.1\r\nHost: x\r\n\r\n":                                  "400 glassroom egress: CONNECT needs host:port",
		"CONNECT allowed.test:99999 HTTP/1.1\r\nHost: x\r\n\r\n":                            "400 glassroom egress: port",
		"GET http://allowed.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", 5000) + "\r\n\r\n": "400 glassroom egress: malformed, oversized",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n":                       "400 glassroom egress: malformed, oversized or slow", // never finished
	}
	for req, want := range cases {
		conn, err := egresstest.Dial(context.Background(), h.proxy.Socket())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(req))
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.HasPrefix(line, "HTTP/1.1 "+want) {
			t.Errorf("%.40q: got %q, want %q", req, line, want)
		}
	}
}

func TestConnectionLimit(t *testing.T) {
	// A raw TCP upstream that holds connections open.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held sync.WaitGroup
	held.Add(1)
	go func() {
		defer held.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	h := startProxy(t, egress.Config{AllowPrivate: loopback, MaxConns: 2}, "allowed.test:*")
	connect := func() (net.Conn, string) {
		c, err := egresstest.Dial(context.Background(), h.proxy.Socket())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n", port)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return c, line
	}
	var open []net.Conn
	for i := 0; i < 2; i++ {
		c, line := connect()
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("tunnel %d: %q", i, line)
		}
		open = append(open, c)
	}
	c, line := connect()
	c.Close()
	if !strings.HasPrefix(line, "HTTP/1.1 429 glassroom egress: too many connections (this session may have 2 open)") {
		t.Errorf("third tunnel: %q", line)
	}
	ds := h.decisions()
	if last := ds[len(ds)-1]; last.Allowed || last.Status != 429 || last.Host != "allowed.test" {
		t.Errorf("decision %+v", last)
	}
	// Closing a tunnel frees its slot.
	open[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, line := connect()
		c.Close()
		if strings.HasPrefix(line, "HTTP/1.1 200") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot not freed: %q", line)
		}
		time.Sleep(20 * time.Millisecond)
	}
	open[1].Close()
	h.proxy.Close()
	ln.Close()
	held.Wait()
}

func TestBandwidthIsLimited(t *testing.T) {
	up, _ := newUpstream(t)
	const rate = 32 << 10
	h := startProxy(t, egress.Config{AllowPrivate: loopback, RateBytes: rate}, "allowed.test:*")
	start := time.Now()
	status, body, err := get(t, h.client(nil), fmt.Sprintf("http://allowed.test:%d/?bytes=%d", up.port, 3*rate))
	if err != nil || status != 200 || len(body) != 3*rate {
		t.Fatalf("%d %d %v", status, len(body), err)
	}
	// The limiter lets one burst (rate bytes) through at once, then rate
	// bytes a second: 3*rate bytes cannot arrive in less than 2 s. This is
	// a lower bound the limiter guarantees, not a speed measurement.
	if el := time.Since(start); el < 1900*time.Millisecond {
		t.Errorf("%d bytes at %d B/s took %v", 3*rate, rate, el)
	}
	if st := h.proxy.Stats(); st.BytesDown < 3*rate {
		t.Errorf("stats %+v", st)
	}
}

func TestCloseEndsTunnelsAndRemovesTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	h := startProxy(t, egress.Config{AllowPrivate: loopback}, "allowed.test:*")
	c, err := egresstest.Dial(context.Background(), h.proxy.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", ln.Addr().(*net.TCPAddr).Port)
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("%q", line)
	}
	br.ReadString('\n') // the empty line
	upc := <-accepted
	defer upc.Close()
	c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(upc, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("relay: %q %v", buf, err)
	}
	if err := h.proxy.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("the tunnel outlived Close: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(h.proxy.Socket())); !os.IsNotExist(err) {
		t.Errorf("the proxy's directory outlived Close: %v", err)
	}
	if _, err := egresstest.Dial(context.Background(), h.proxy.Socket()); err == nil {
		t.Error("the socket still answers")
	}
}

func TestServiceAdmitsWithinTheCeiling(t *testing.T) {
	dir := egressDir(t)
	none, err := egress.NewService(egress.Config{Dir: dir}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if none.Enabled() {
		t.Error("no ceiling: no network")
	}
	if _, err := none.Admit([]string{"pypi.org"}); !errors.Is(err, egress.ErrPolicy) || !strings.Contains(err.Error(), `"pypi.org"`) {
		t.Errorf("no ceiling: %v", err)
	}
	svc, err := egress.NewService(egress.Config{Dir: dir, Allow: []string{"pypi.org", "*.pythonhosted.org"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Admit([]string{"pypi.org", "files.pythonhosted.org:443"}); err != nil {
		t.Error(err)
	}
	var pe *egress.PatternError
	if _, err := svc.Admit([]string{"pypi.org", "evil.com"}); !errors.As(err, &pe) || pe.Pattern != "evil.com" {
		t.Errorf("beyond the ceiling: %v", err)
	}
	if _, err := svc.Admit([]string{"bad pattern"}); !errors.As(err, &pe) {
		t.Errorf("malformed: %v", err)
	}
	if _, err := egress.NewService(egress.Config{Dir: dir, Allow: []string{"a..b"}}, zerolog.Nop()); err == nil {
		t.Error("a malformed ceiling must fail the configuration")
	}
	if _, err := svc.Start("../escape-dir", egress.Policy{}, nil); err == nil {
		t.Error("a bad session id must be refused")
	}
}

func TestStaleDirectoriesAreRemoved(t *testing.T) {
	dir := egressDir(t)
	stale := filepath.Join(dir, "0123456789abcdef")
	os.MkdirAll(stale, 0o755)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	h := startProxy(t, egress.Config{Dir: dir, AllowPrivate: loopback}, "allowed.test")
	live := filepath.Dir(h.proxy.Socket())
	os.Chtimes(live, old, old)
	svc, err := egress.NewService(egress.Config{Dir: dir}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("NewService removed a directory before RemoveStale: %v", err)
	}
	svc.RemoveStale()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("a stale directory survived")
	}
	if _, err := os.Stat(h.proxy.Socket()); err != nil {
		t.Errorf("a live proxy's socket was removed: %v", err)
	}
}

// TestDetachThenResume: a detached proxy (the gateway restarting) leaves
// its directory, the one the sandbox binds; the next gateway's Resume
// serves the same policy on a new socket in that same directory.
func TestDetachThenResume(t *testing.T) {
	plain, _ := newUpstream(t)
	dir := egressDir(t)
	cfg := egress.Config{Dir: dir, AllowPrivate: loopback, Allow: []string{"127.0.0.1:*"}}
	svc, err := egress.NewService(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := svc.Admit([]string{"127.0.0.1:" + strconv.Itoa(plain.port)})
	if err != nil {
		t.Fatal(err)
	}
	const id = "0123456789abcdef"
	h := &harness{}
	if h.proxy, err = svc.Start(id, pol, nil); err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("http://127.0.0.1:%d/", plain.port)
	if status, _, err := get(t, h.client(nil), target); err != nil || status != 200 {
		t.Fatalf("before detach: %d %v", status, err)
	}
	before, err := os.Stat(filepath.Dir(h.proxy.Socket()))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.proxy.Detach(); err != nil {
		t.Fatal(err)
	}
	if _, err := egresstest.Dial(context.Background(), h.proxy.Socket()); err == nil {
		t.Fatal("a detached proxy still answers")
	}
	// The next gateway: a new service over the same directory.
	svc2, err := egress.NewService(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := svc2.Resume(id, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	after, err := os.Stat(filepath.Dir(p2.Socket()))
	if err != nil || !os.SameFile(before, after) || p2.Socket() != h.proxy.Socket() {
		t.Fatalf("resumed in another directory: %v", err)
	}
	svc2.RemoveStale() // a resumed proxy's directory is live: kept
	if status, _, err := get(t, h.client(nil), target); err != nil || status != 200 {
		t.Fatalf("after resume: %d %v", status, err)
	}
	if _, err := svc2.Resume("fedcba9876543210", pol, nil); !errors.Is(err, egress.ErrNoDirectory) {
		t.Errorf("resume without a directory: %v", err)
	}
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(p2.Socket())); !os.IsNotExist(err) {
		t.Errorf("Close after resume left the directory: %v", err)
	}
}

func TestHostileDestinationHead(t *testing.T) {
	// A destination that sends an endless response head: the proxy stops
	// reading at its limit and answers 502, holding bounded memory.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Endless: ")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	h := startProxy(t, egress.Config{AllowPrivate: loopback, RateBytes: 1 << 30}, "allowed.test:*")
	status, body, _ := get(t, h.client(nil), fmt.Sprintf("http://allowed.test:%d/", ln.Addr().(*net.TCPAddr).Port))
	if status != http.StatusBadGateway || !strings.Contains(body, "response is unreadable") {
		t.Errorf("%d %q", status, body)
	}
	if down := h.proxy.Stats().BytesDown; down > 2<<20 {
		t.Errorf("read %d bytes of an endless head", down)
	}
	h.proxy.Close()
	<-done
}

// TestCIDRBlocks: a block in a session's list lets through an IP literal
// in it, on its ports; a name is never looked up to see whether it falls
// in one (code must not make the gateway resolve names it was not
// given); a block must be within the operator's ceiling, and narrower
// than a /8.
func TestCIDRBlocks(t *testing.T) {
	plain, _ := newUpstream(t)
	port := strconv.Itoa(plain.port)
	cfg := egress.Config{AllowPrivate: loopback, Allow: []string{"*.test:*", "127.0.0.0/8:*", "10.0.0.0/16:*", "[2001:db8::/32]:*"}}
	h := startProxy(t, cfg, "127.0.0.0/24:"+port)
	c := h.client(nil)
	if status, body, err := get(t, c, "http://127.0.0.1:"+port+"/"); status != 200 || err != nil {
		t.Fatalf("a literal in the block: %d %q %v", status, body, err)
	}
	hits := plain.hits.Load()
	for u, want := range map[string]string{
		"http://allowed.test:" + port + "/": "host allowed.test is not in this session's network allowlist",
		"http://127.0.0.1:1/":               "port 1 is not allowed for 127.0.0.1",
	} {
		status, body, _ := get(t, c, u)
		if status != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 403 %q", u, status, body, want)
		}
	}
	if plain.hits.Load() != hits {
		t.Error("a refused destination was reached")
	}
	if n := h.res.Lookups("allowed.test"); n != 0 {
		t.Errorf("a name outside the list was looked up %d times", n)
	}

	svc, err := egress.NewService(egress.Config{Dir: egressDir(t), AllowPrivate: loopback, Allow: cfg.Allow}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := svc.Admit([]string{"10.0.5.0/24:443", "[2001:db8::/48]", "127.0.0.1"})
	if err != nil {
		t.Fatalf("blocks within the ceiling: %v", err)
	}
	if got := strings.Join(pol.Strings(), " "); got != "10.0.5.0/24:443 [2001:db8::/48] 127.0.0.1" {
		t.Fatalf("canonical blocks: %q", got)
	}
	for _, bad := range []string{"10.0.0.0/8", "192.168.0.0/24", "0.0.0.0/0", "[::/0]", "10.0.0.0/33", "[::ffff:10.0.0.0/120]", "10.0.0.0/16/1"} {
		if _, err := svc.Admit([]string{bad}); err == nil {
			t.Errorf("%s was admitted", bad)
		}
	}
}

// tunnelTo opens a CONNECT tunnel through h to host:port (an upstream
// that accepts on ln) and returns the client's end and the upstream's.
func tunnelTo(t *testing.T, h *harness, ln net.Listener, host string) (net.Conn, net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := egresstest.Dial(context.Background(), h.proxy.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s:%d HTTP/1.1\r\n\r\n", host, ln.Addr().(*net.TCPAddr).Port)
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("CONNECT %s: %q", host, line)
	}
	br.ReadString('\n')
	upc := <-accepted
	t.Cleanup(func() { upc.Close() })
	return c, upc
}

// TestPolicyChangeDuringALookup: a connection whose name was allowed
// when checked, but that a SetPolicy refuses before it is dialed, is a
// refusal (403, logged as refused), not an unreachable host (502).
func TestPolicyChangeDuringALookup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := startProxy(t, egress.Config{AllowPrivate: loopback}, "*.test:*")
	svc, err := egress.NewService(egress.Config{Dir: egressDir(t), AllowPrivate: loopback, Allow: []string{"*.test:*"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := svc.Admit([]string{"*.test:*"})
	if err != nil {
		t.Fatal(err)
	}
	denied, err := pol.WithDeny([]string{"race.test"})
	if err != nil {
		t.Fatal(err)
	}
	reached, release := h.res.Hold("race.test")
	defer release()
	c, err := egresstest.Dial(context.Background(), h.proxy.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT race.test:%d HTTP/1.1\r\n\r\n", ln.Addr().(*net.TCPAddr).Port)
	<-reached
	h.proxy.SetPolicy(denied)
	release()
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 403") {
		t.Fatalf("a destination the new rules refuse: %q", line)
	}
	seen := h.decisions()
	if len(seen) == 0 {
		t.Fatal("no decision")
	}
	if d := seen[len(seen)-1]; d.Allowed || d.Status != http.StatusForbidden || !strings.Contains(d.Reason, "rules changed") {
		t.Fatalf("decision %+v", d)
	}
}

// TestDenyAndPolicyChange: a deny list refuses, before the allowlist, a
// name, a literal and a name that resolves into a denied block; a new
// policy (a session's network changed while it runs) applies to new
// connections at once and closes the open ones it refuses, not the
// others.
func TestDenyAndPolicyChange(t *testing.T) {
	plain, _ := newUpstream(t)
	port := strconv.Itoa(plain.port)
	h := startProxy(t, egress.Config{AllowPrivate: loopback}, "*.test:*", "127.0.0.1:*")
	svc, err := egress.NewService(egress.Config{Dir: egressDir(t), AllowPrivate: loopback, Allow: []string{"*.test:*", "127.0.0.1:*", "127.0.0.0/8:*"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := svc.Admit([]string{"*.test:*", "127.0.0.1:*"})
	if err != nil {
		t.Fatal(err)
	}
	denied, err := pol.WithDeny([]string{"blocked.test", "127.0.0.0/30:" + port})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(denied.DenyStrings(), " "); got != "blocked.test 127.0.0.0/30:"+port {
		t.Fatalf("deny strings %q", got)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	keep, keepUp := tunnelTo(t, h, ln, "kept.test")
	lose, loseUp := tunnelTo(t, h, ln, "blocked.test")

	if n := h.proxy.SetPolicy(denied); n != 1 {
		t.Fatalf("SetPolicy closed %d connections, want the one it refuses", n)
	}
	lose.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := lose.Read(make([]byte, 1)); err == nil {
		t.Fatal("the tunnel to the denied name outlived the change")
	}
	keep.Write([]byte("ping"))
	buf := make([]byte, 4)
	keepUp.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(keepUp, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("the allowed tunnel after the change: %q %v", buf, err)
	}
	_ = loseUp

	c := h.client(nil)
	for u, want := range map[string]string{
		"http://blocked.test:" + port + "/": "blocked.test is denied by this session's network rules",
		"http://127.0.0.1:" + port + "/":    "127.0.0.1 is denied by this session's network rules",
		"http://allowed.test:" + port + "/": "allowed.test is denied by this session's network rules", // resolves into the denied block
	} {
		if status, body, _ := get(t, c, u); status != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 403 %q", u, status, body, want)
		}
	}
	// Back to the plain list: allowed again.
	h.proxy.SetPolicy(pol)
	if status, _, err := get(t, c, "http://allowed.test:"+port+"/"); status != 200 || err != nil {
		t.Fatalf("after the deny list went: %d %v", status, err)
	}
	if got := h.proxy.Policy().DenyStrings(); len(got) != 0 {
		t.Fatalf("Policy after the change back: deny %v", got)
	}
}
