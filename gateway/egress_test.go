package gateway_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/egress/egresstest"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
)

// egressUpstreams are real servers on host loopback that a sandbox reaches
// only through its session's proxy. Every name the tests use resolves
// through egresstest's resolver, to 127.0.0.1 or to an address the proxy
// refuses before dialing: no traffic leaves the machine.
type egressUpstreams struct {
	plain, secure, other int // ports
	hits                 atomic.Int64
	caPEM                []byte
}

func startEgressUpstreams(t *testing.T) *egressUpstreams {
	t.Helper()
	u := &egressUpstreams{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		fmt.Fprintf(w, "upstream saw %s %s", r.Host, r.URL.Path)
	})
	port := func(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	other := httptest.NewServer(h)
	t.Cleanup(other.Close)
	cert, ca, err := egresstest.Certificate("allowed.test")
	if err != nil {
		t.Fatal(err)
	}
	secure := httptest.NewUnstartedServer(h)
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	secure.StartTLS()
	t.Cleanup(secure.Close)
	u.plain, u.secure, u.other, u.caPEM = port(plain), port(secure), port(other), ca
	return u
}

// egressConfig is the operator's side: sessions may ask for *.test names
// on any port, and (tests only) the proxy may dial host loopback, where
// the upstreams listen.
func egressConfig(t *testing.T, res egress.Resolver, allow ...string) sessions.Config {
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	return sessions.Config{Egress: egress.Config{
		Dir: filepath.Join(dir, "egress"), Allow: allow, Resolver: res,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}}
}

// fetchPy defines fetch(url): what urllib (through HTTP_PROXY/HTTPS_PROXY)
// reports, on one line.
const fetchPy = `import os, socket, ssl, time, http.client, urllib.request, urllib.error
def fetch(url, ctx=None):
    try:
        with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
            return "OK %d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "HTTP %d %s" % (e.code, e.reason)
    except Exception as e:
        return "ERR %r" % (e,)
`

func TestEgressThroughTheSandbox(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			up := startEgressUpstreams(t)
			res := egresstest.NewResolver(map[string]string{"internal.test": "10.0.0.1", "meta.test": "169.254.169.254"})
			e := newEnv(t, rt(t), egressConfig(t, res, "*.test:*"))
			c := e.client(keyA)
			ctx := context.Background()
			allow := []string{
				fmt.Sprintf("allowed.test:%d", up.plain), fmt.Sprintf("Allowed.test:%d", up.secure),
				fmt.Sprintf("internal.test:%d", up.plain), fmt.Sprintf("meta.test:%d", up.plain),
			}
			s, err := c.CreateSession(ctx, glclient.CreateOptions{Network: &glclient.Network{Allow: allow}})
			if err != nil {
				t.Fatal(err)
			}
			if s.Network == nil || len(s.Network.Allow) != 4 || s.Network.Allow[1] != fmt.Sprintf("allowed.test:%d", up.secure) {
				t.Errorf("the session must report its canonical allowlist: %+v", s.Network)
			}
			if _, err := c.WriteFile(ctx, s.ID, "ca.pem", strings.NewReader(string(up.caPEM)), int64(len(up.caPEM))); err != nil {
				t.Fatal(err)
			}
			run := func(code string) map[string]string {
				t.Helper()
				x := e.exec(keyA, s.ID, fetchPy+code, 120)
				if x.Status != "ok" {
					t.Fatalf("%s: %+v", code, x)
				}
				out := map[string]string{}
				for _, line := range strings.Split(strings.TrimSpace(x.Stdout), "\n") {
					k, v, _ := strings.Cut(line, " ")
					out[k] = v
				}
				return out
			}
			out := run(fmt.Sprintf(`P, T, O = %d, %d, %d
print("env", os.environ.get("HTTP_PROXY"), os.environ.get("HTTPS_PROXY"), os.environ.get("NO_PROXY"))
print("plain", fetch("http://allowed.test:%%d/hello" %% P))
print("tls", fetch("https://allowed.test:%%d/tls" %% T, ssl.create_default_context(cafile="ca.pem")))
print("denied", fetch("http://denied.test:%%d/" %% P))
print("denied-tls", fetch("https://denied.test:%%d/" %% T))
print("literal", fetch("http://10.0.0.1:%%d/" %% P))
print("resolves-private", fetch("http://internal.test:%%d/" %% P))
print("resolves-metadata", fetch("http://meta.test:%%d/" %% P))
print("port", fetch("http://allowed.test:%%d/" %% O))
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
c.request("GET", "http://127.0.0.1:%%d/" %% P)
r = c.getresponse()
print("host-loopback-literal", r.status, r.reason)
try:
    socket.getaddrinfo("allowed.test", P); print("dns", "resolved")
except OSError:
    print("dns", "none")
try:
    socket.create_connection(("127.0.0.1", P), timeout=2); print("direct", "CONNECTED")
except OSError:
    print("direct", "refused")
print("ifaces", [n for _, n in socket.if_nameindex()])
print("routes", open("/proc/net/route").read().strip().count("\n"))
s = os.environ["GLASSROOM_EGRESS_SOCKET"]
try:
    os.unlink(s); print("unlink", "done")
except OSError as e:
    print("unlink", "REFUSED" if e.errno in (13, 30) else e.errno)
`, up.plain, up.secure, up.other))
			want := map[string]string{
				"env":                   "http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1",
				"plain":                 fmt.Sprintf("OK 200 upstream saw allowed.test:%d /hello", up.plain),
				"tls":                   fmt.Sprintf("OK 200 upstream saw allowed.test:%d /tls", up.secure),
				"denied":                "HTTP 403 glassroom egress: host denied.test is not in this session's network allowlist",
				"literal":               "HTTP 403 glassroom egress: IP address 10.0.0.1 is not in this session's network allowlist (ask for a host name)",
				"resolves-private":      "HTTP 403 glassroom egress: internal.test resolves to a forbidden address (private)",
				"resolves-metadata":     "HTTP 403 glassroom egress: meta.test resolves to a forbidden address (cloud metadata service)",
				"port":                  fmt.Sprintf("HTTP 403 glassroom egress: port %d is not allowed for allowed.test by this session's network allowlist", up.other),
				"host-loopback-literal": "403 glassroom egress: IP address 127.0.0.1 is not in this session's network allowlist (ask for a host name)",
				"dns":                   "none",
				"direct":                "refused",
				"ifaces":                "['lo']",
				"routes":                "0",
				"unlink":                "REFUSED", // EROFS (runc), EACCES (gVisor): the sandbox cannot replace the proxy's socket
			}
			for k, v := range want {
				if out[k] != v {
					t.Errorf("%s: got %q\n want %q", k, out[k], v)
				}
			}
			// A refused CONNECT: urllib reports the proxy's status line.
			if !strings.Contains(out["denied-tls"], "Tunnel connection failed: 403 glassroom egress: host denied.test is not in this session's network allowlist") {
				t.Errorf("denied-tls: %q", out["denied-tls"])
			}
			if n := up.hits.Load(); n != 2 {
				t.Errorf("the upstreams were reached %d times, want 2 (the allowed requests only)", n)
			}
			if res.Lookups("denied.test") != 0 {
				t.Error("a name outside the allowlist was resolved")
			}

			// Every refusal is an event of the session (replayed from the backlog).
			w := e.ws(keyA, s.ID, "?since=0")
			var refused []frame
			w.until(func(f frame) bool {
				if f.Type == sessions.EventNetwork {
					refused = append(refused, f)
				}
				return len(refused) == 7
			})
			hosts := map[string]string{}
			for _, f := range refused {
				hosts[f.Host] = f.Reason
				if f.Port == nil || *f.Port == 0 || f.ID != "" {
					t.Errorf("network event %+v", f)
				}
			}
			for host, reason := range map[string]string{
				"denied.test": "is not in this session's network allowlist", "10.0.0.1": "IP address 10.0.0.1",
				"127.0.0.1": "IP address 127.0.0.1", "internal.test": "forbidden address (private)",
				"meta.test": "forbidden address (cloud metadata service)", "allowed.test": "port ",
			} {
				if !strings.Contains(hosts[host], reason) {
					t.Errorf("network event for %s: %q, want %q", host, hosts[host], reason)
				}
			}
			// Names the code asked for: the events say why, never what they resolve to.
			for _, host := range []string{"internal.test", "meta.test"} {
				if strings.Contains(hosts[host], "10.0.0.1") || strings.Contains(hosts[host], "169.254") {
					t.Errorf("the network event for %s names the resolved address: %q", host, hosts[host])
				}
			}

			// The forwarder ignores the interrupt an execution timeout sends
			// to the kernel's process group, and survives restarts.
			if x := e.exec(keyA, s.ID, "import time\nwhile True: time.sleep(0.1)", 1); x.Status != "timeout" {
				t.Fatalf("timeout: %+v", x)
			}
			after := fmt.Sprintf(`print("plain", fetch("http://allowed.test:%d/again"))`, up.plain)
			if got := run(after)["plain"]; !strings.HasPrefix(got, "OK 200") {
				t.Errorf("after an interrupt: %q", got)
			}
			if err := c.Restart(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			if got := run(after)["plain"]; !strings.HasPrefix(got, "OK 200") {
				t.Errorf("after a restart: %q", got)
			}
			// Code that kills the forwarder loses its own network, nothing more;
			// a restart brings it back.
			out = run(fmt.Sprintf(`import signal
me = str(os.getpid())
kids = [int(p) for p in os.listdir("/proc") if p.isdigit() and open("/proc/%%s/stat" %% p).read().rsplit(") ", 1)[1].split()[1] == me]
for k in kids: os.kill(k, signal.SIGKILL)
time.sleep(0.5)
print("killed", len(kids))
print("plain", fetch("http://allowed.test:%d/"))
`, up.plain))
			if out["killed"] != "1" || !strings.Contains(out["plain"], "Connection refused") {
				t.Errorf("killing the forwarder: %+v", out)
			}
			if err := c.Restart(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			if got := run(after)["plain"]; !strings.HasPrefix(got, "OK 200") {
				t.Errorf("after killing the forwarder and restarting: %q", got)
			}

			// A session without a list has no proxy at all.
			plain, err := c.CreateSession(ctx, glclient.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if plain.Network != nil {
				t.Errorf("no list, yet network %+v", plain.Network)
			}
			x := e.exec(keyA, plain.ID, fetchPy+fmt.Sprintf(`print(sorted(k for k in os.environ if "PROXY" in k.upper() or k.startswith("GLASSROOM_EGRESS")))
print(os.path.exists("/run/glassroom/egress"))
print(fetch("http://allowed.test:%d/"))
try:
    socket.create_connection(("127.0.0.1", 3128), timeout=2); print("CONNECTED")
except OSError:
    print("nothing on 3128")
`, up.plain), 60)
			lines := strings.Split(strings.TrimSpace(x.Stdout), "\n")
			if len(lines) != 4 || lines[0] != "[]" || lines[1] != "False" || !strings.HasPrefix(lines[2], "ERR URLError(gaierror") || lines[3] != "nothing on 3128" {
				t.Errorf("a session without a network: %q", x.Stdout)
			}
			dir := e.mgr.Config().Egress.Dir
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("want one proxy directory (the networked session's), got %d", len(ents))
			}
			if n := up.hits.Load(); n != 5 {
				t.Errorf("upstream hits %d, want 5", n)
			}
			// Deleting the session stops its proxy and removes its socket.
			if err := c.DeleteSession(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("the proxy directory outlived its session: %v", ents)
			}
		})
	}
}

func TestEgressPolicyRequests(t *testing.T) {
	res := egresstest.NewResolver(nil)
	closed := newEnv(t, localRuntime(t), egressConfig(t, res))
	open := newEnv(t, localRuntime(t), egressConfig(t, res, "pypi.org", "*.pythonhosted.org", "api.example.com:443"))
	cases := []struct {
		e    *env
		body string
		want string
	}{
		{closed, `{"network":{"allow":["pypi.org"]}}`, `network.allow "pypi.org": this gateway lets sessions ask for no network access`},
		{open, `{"network":{"allow":["pypi.org","evil.example"]}}`, `network.allow "evil.example": not within the destinations this gateway lets sessions ask for`},
		{open, `{"network":{"allow":["api.example.com"]}}`, `network.allow "api.example.com": not within`},
		{open, `{"network":{"allow":["pythonhosted.org"]}}`, `network.allow "pythonhosted.org": not within`},
		{open, `{"network":{"allow":["bad pattern"]}}`, `network.allow "bad pattern": host name`},
		{open, `{"network":{"allow":["*.pypi.org:*"]}}`, `network.allow "*.pypi.org:*"`},
		{open, `{"network":{"deny":["x"]}}`, `network.deny without network.allow`},
		{open, `{"network":{"allow":["pypi.org"],"deny":["bad pattern"]}}`, `network.deny "bad pattern": host name`},
		{open, `{"network":{"allow":["pypi.org"],"bad":["x"]}}`, `unknown field`},
		{open, `{"network":{"allow":"pypi.org"}}`, `invalid JSON body`},
	}
	for _, tc := range cases {
		var body apiErr
		status := tc.e.call(keyA, "POST", "/v1/sessions", tc.body, &body)
		if status != http.StatusBadRequest || body.Error.Code != "bad_request" || !strings.Contains(body.Error.Message, tc.want) {
			t.Errorf("%s: %d %+v, want 400 %s", tc.body, status, body, tc.want)
		}
	}
	if n := len(open.mgr.List(keyA)) + len(closed.mgr.List(keyA)); n != 0 {
		t.Errorf("%d sessions were created by refused requests", n)
	}
	// Within the ceiling: accepted, and reported canonical.
	var raw json.RawMessage
	if status := open.call(keyA, "POST", "/v1/sessions", `{"network":{"allow":["PyPI.org.","files.pythonhosted.org:443"]}}`, &raw); status != http.StatusCreated {
		t.Fatalf("create: %d", status)
	}
	var s struct {
		ID      string           `json:"id"`
		Network sessions.Network `json:"network"`
	}
	json.Unmarshal(raw, &s)
	if got := strings.Join(s.Network.Allow, " "); got != "pypi.org files.pythonhosted.org:443" {
		t.Errorf("network %q", got)
	}
	// The session and its network event, as sent, match openapi.json.
	resp, err := http.Get(open.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	v := newValidator(t, doc)
	v.check("Session", raw)
	x := open.exec(keyA, s.ID, fetchPy+`print(fetch("http://denied.example/"))`, 60)
	if !strings.Contains(x.Stdout, "HTTP 403 glassroom egress: host denied.example is not in this session's network allowlist") {
		t.Errorf("denied.example: %q", x.Stdout)
	}
	u := "ws" + strings.TrimPrefix(open.url, "http") + "/v1/sessions/" + s.ID + "/ws?since=0"
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Authorization": {"Bearer " + keyA}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), `"type":"network"`) {
			v.check("ServerFrame", data)
			v.check("NetworkEvent", data)
			break
		}
	}
	// An empty list is no network.
	var s2 struct {
		Network *sessions.Network `json:"network"`
	}
	if status := open.call(keyA, "POST", "/v1/sessions", `{"network":{"allow":[]}}`, &s2); status != http.StatusCreated || s2.Network != nil {
		t.Errorf("empty list: %d %+v", status, s2.Network)
	}
	var apiE *glclient.APIError
	if _, err := closed.client(keyA).CreateSession(context.Background(), glclient.CreateOptions{Network: &glclient.Network{Allow: []string{"pypi.org"}}}); !errors.As(err, &apiE) || apiE.Status != 400 {
		t.Errorf("client: %v", err)
	}
}

// TestPipInstallThroughTheProxy: pip, started by the kernel, installs a
// package from an HTTPS index on host loopback through the session's
// proxy (HTTPS_PROXY, CONNECT), into a directory of its choice (--target)
// with the index given on its command line. Local runtime only (the
// kernel image's pip: TestPipInstall).
func TestPipInstallThroughTheProxy(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Debian's python3-pip is missing in CI (scripts/install-deps.sh test installs it): %v", err)
		}
		t.Skipf("\n\n*** SKIPPING: Debian's python3-pip is missing (%v); scripts/install-deps.sh test installs it ***\n\n", err)
	}
	ix := startPipIndex(t, map[string]string{"glassroomdemo": "installed through the egress proxy"})
	e := newEnv(t, localRuntime(t), egressConfig(t, egresstest.NewResolver(nil), "*.test:*"))
	c := e.client(keyA)
	s, err := c.CreateSession(context.Background(), glclient.CreateOptions{Network: &glclient.Network{Allow: []string{ix.host}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFile(context.Background(), s.ID, "ca.pem", bytes.NewReader(ix.caPEM), int64(len(ix.caPEM))); err != nil {
		t.Fatal(err)
	}
	x := e.exec(keyA, s.ID, fmt.Sprintf(`import subprocess, sys
r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--target", "pkgs",
    "--index-url", %q, "--cert", "ca.pem", "glassroomdemo"], capture_output=True, text=True)
print(r.returncode, r.stdout[-2000:], r.stderr[-2000:])
sys.path.insert(0, "pkgs")
import glassroomdemo
print(glassroomdemo.VALUE)`, ix.url), 120)
	if x.Status != "ok" || !strings.HasSuffix(strings.TrimSpace(x.Stdout), "installed through the egress proxy") {
		t.Fatalf("pip install: %s %s %+v", x.Stdout, x.Stderr, x.Error)
	}
	if ix.hits.Load() == 0 {
		t.Error("the index was never asked")
	}
}

// TestFrozenSessionLosesItsTunnels: a tunnel the code left open is closed
// once the session's kernel is frozen (its idle timeout, minutes, would
// hold it meanwhile); thawed, the code sees it ended and opens new ones.
func TestFrozenSessionLosesItsTunnels(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			conns := make(chan net.Conn, 4)
			accepted := make(chan struct{})
			go func() {
				defer close(accepted)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					conns <- c
				}
			}()
			t.Cleanup(func() {
				ln.Close()
				<-accepted
				close(conns)
				for c := range conns {
					c.Close()
				}
			})
			port := ln.Addr().(*net.TCPAddr).Port
			cfg := egressConfig(t, egresstest.NewResolver(nil), "*.test:*")
			cfg.PauseAfter, cfg.ReapInterval = 600*time.Millisecond, 50*time.Millisecond
			e := newEnv(t, rt(t), cfg)
			c := e.client(keyA)
			ctx := context.Background()
			s, err := c.CreateSession(ctx, glclient.CreateOptions{Network: &glclient.Network{Allow: []string{fmt.Sprintf("allowed.test:%d", port)}}})
			if err != nil {
				t.Fatal(err)
			}
			connect := fmt.Sprintf(`import socket
def tunnel():
    t = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    t.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = t.recv(1)
        if not b:
            break
        head += b
    print(head.split(b"\r\n")[0].decode())
    t.sendall(b"hello")
    return t
`, port)
			x := e.exec(keyA, s.ID, connect+"tun = tunnel()", 60)
			if x.Status != "ok" || !strings.HasPrefix(x.Stdout, "HTTP/1.1 200") {
				t.Fatalf("CONNECT from the kernel: %+v", x)
			}
			var up net.Conn
			select {
			case up = <-conns:
			case <-time.After(30 * time.Second):
				t.Fatal("the destination got no connection")
			}
			defer up.Close()
			up.SetReadDeadline(time.Now().Add(60 * time.Second))
			buf := make([]byte, 5)
			if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("through the tunnel: %q %v", buf, err)
			}
			// Nothing uses the kernel now: it is frozen, and its tunnel closed.
			rest, err := io.ReadAll(up)
			if err != nil {
				t.Fatalf("the frozen session's tunnel stayed open: %v", err)
			}
			if len(rest) != 0 {
				t.Errorf("unexpected bytes %q", rest)
			}
			if info, err := c.GetSession(ctx, s.ID); err != nil || !info.Paused {
				t.Errorf("the tunnel closed, yet the session is not paused: %+v %v", info, err)
			}
			// Thawed by the next execution: the code sees its tunnel ended,
			// and a new one works.
			x = e.exec(keyA, s.ID, `tun.settimeout(20)
try:
    print("old", repr(tun.recv(10)))
except OSError as e:
    print("old", type(e).__name__)
t2 = tunnel()`, 60)
			if x.Status != "ok" || !strings.Contains(x.Stdout, "old b''") && !strings.Contains(x.Stdout, "old ConnectionResetError") ||
				!strings.Contains(x.Stdout, "HTTP/1.1 200") {
				t.Errorf("after the thaw: %+v", x)
			}
		})
	}
}

// TestNetworkRulesChangeWhileRunning: a session's network has a deny list
// over its allowlist, and its rules change while it runs (E2B's
// update_network): new connections follow at once, an open tunnel the
// new rules refuse is closed while the kernel holds it, an allowed one
// is not; a change beyond the ceiling is refused and the rules stay; a
// session without a network has none to change.
func TestNetworkRulesChangeWhileRunning(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			up := startEgressUpstreams(t)
			e := newEnv(t, rt(t), egressConfig(t, egresstest.NewResolver(nil), "*.test:*"))
			c := e.client(keyA)
			ctx := context.Background()
			tests := fmt.Sprintf("*.test:%d", up.plain)
			s, err := c.CreateSession(ctx, glclient.CreateOptions{Network: &glclient.Network{Allow: []string{tests}, Deny: []string{"blocked.test"}}})
			if err != nil {
				t.Fatal(err)
			}
			if s.Network == nil || len(s.Network.Deny) != 1 || s.Network.Deny[0] != "blocked.test" {
				t.Fatalf("the session's network: %+v", s.Network)
			}
			run := func(code string) string {
				t.Helper()
				x := e.exec(keyA, s.ID, fetchPy+fmt.Sprintf("P = %d\n", up.plain)+code, 120)
				if x.Status != "ok" {
					t.Fatalf("%s: %+v", code, x)
				}
				return strings.TrimSpace(x.Stdout)
			}
			if out := run(`print(fetch("http://allowed.test:%d/" % P)); print(fetch("http://blocked.test:%d/" % P))`); !strings.Contains(out, "OK 200") ||
				!strings.Contains(out, "HTTP 403 glassroom egress: blocked.test is denied by this session's network rules") {
				t.Fatalf("allow and deny: %q", out)
			}
			// Two tunnels the kernel holds open: one to a name the change
			// denies, one to a name it keeps.
			if out := run(`import socket
def tunnel(host):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (host.encode(), P))
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    return s, head.split(b"\r\n")[0].decode()
lose, a = tunnel("allowed.test")
keep, b = tunnel("kept.test")
print(a, "|", b)`); out != "HTTP/1.1 200 Connection established | HTTP/1.1 200 Connection established" {
				t.Fatalf("tunnels: %q", out)
			}
			s2, err := c.SetNetwork(ctx, s.ID, glclient.Network{Allow: []string{tests}, Deny: []string{"allowed.test"}})
			if err != nil || len(s2.Network.Deny) != 1 || s2.Network.Deny[0] != "allowed.test" {
				t.Fatalf("SetNetwork: %+v %v", s2, err)
			}
			out := run(`def relay(s):
    try:
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        data = s.recv(200)
        return "relayed" if data.startswith(b"HTTP/1.0 200") else "closed %r" % data[:20]
    except OSError as e:
        return "closed %s" % type(e).__name__
print(relay(lose), "|", relay(keep))
print(fetch("http://allowed.test:%d/" % P))
print(fetch("http://blocked.test:%d/" % P))`)
			lines := strings.Split(out, "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "closed") || !strings.HasSuffix(lines[0], "| relayed") ||
				!strings.Contains(lines[1], "allowed.test is denied") || !strings.HasPrefix(lines[2], "OK 200") {
				t.Fatalf("after the change: %q", out)
			}
			// Beyond the ceiling: refused, the rules stay.
			if _, err := c.SetNetwork(ctx, s.ID, glclient.Network{Allow: []string{"example.com"}}); err == nil {
				t.Fatal("a rule beyond the ceiling was taken")
			}
			if got, _ := c.GetSession(ctx, s.ID); got.Network == nil || got.Network.Deny[0] != "allowed.test" {
				t.Fatalf("the rules after a refused change: %+v", got.Network)
			}
			bare, err := c.CreateSession(ctx, glclient.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.SetNetwork(ctx, bare.ID, glclient.Network{Allow: []string{tests}}); !errors.Is(err, glclient.ErrConflict) {
				t.Fatalf("a session without a network: %v", err)
			}
		})
	}
}
