package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/gateway/internal/urlsign"
	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
)

// previewServer is a server a session runs in its sandbox: it answers
// with the path and headers it was sent, and echoes WebSocket messages
// on /ws (a handshake by hand: the standard library only).
const previewServer = `import base64, hashlib, http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/ws":
            key = self.headers["Sec-WebSocket-Key"]
            accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept)
            self.end_headers()
            self.wfile.flush()
            while True:
                h = self.rfile.read(2)
                if len(h) < 2 or h[0] & 15 == 8:
                    self.close_connection = True
                    return
                mask = self.rfile.read(4)
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(h[1] & 127)))
                out = b"echo:" + data
                self.wfile.write(bytes([0x81, len(out)]) + out)
                self.wfile.flush()
        body = json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
`

// TestPreviews: a server a command starts in the sandbox is listed among
// its ports and reached, WebSocket included, on its preview origin
// through the session's channel (the sandbox's network stays closed); the
// token (link, cookie or header) grants one session's one port and never
// reaches the server; without it, for another port or session, expired,
// or once the session ended, the preview is refused.
func TestPreviews(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{Gateway: gateway.Config{APIKeys: []string{keyA, keyB}}, Previews: true})
			e := &env{t: t, g: g, url: g.URL, mgr: g.Manager, rt: g.App.Runtime}
			get := previewGetter(t, g.PreviewAddr)
			s := e.create(keyA, nil)
			other := e.create(keyA, nil)
			mint := func(id string, port int, expires *float64) api.Preview {
				t.Helper()
				var life time.Duration
				if expires != nil {
					life = time.Duration(*expires * float64(time.Second))
					if life == 0 {
						life = -time.Second // the client's zero is the default
					}
				}
				p, err := e.client(keyA).Preview(context.Background(), id, port, life)
				if err != nil {
					t.Fatalf("preview: %v", err)
				}
				return *p
			}
			p := mint(s.ID, 8765, nil)
			if !strings.HasPrefix(p.URL, "http://8765-"+s.ID+".localhost:") || !strings.Contains(p.URL, "/?glassroom_preview_token=") ||
				!strings.HasPrefix(p.Host, "8765-"+s.ID+"-") {
				t.Fatalf("preview %+v", p)
			}
			u, _ := url.Parse(p.URL)
			base := "http://" + u.Host
			if st, body, _ := get(base+"/", map[string]string{gateway.PreviewTokenHeader: p.Token}); st != http.StatusBadGateway || !strings.Contains(body, "listens on this port") {
				t.Fatalf("before the server runs: %d %q", st, body)
			}

			script, _ := json.Marshal(previewServer)
			if x := e.exec(keyA, s.ID, "open('srv.py', 'w').write("+string(script)+")", 30); x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/commands", api.RunCommandRequest{Cmd: "exec python3 srv.py 8765", Background: true}, nil); st != http.StatusCreated {
				t.Fatalf("start the server: %d", st)
			}
			testkit.Eventually(t, 60*time.Second, func() bool {
				ports, _ := e.client(keyA).Ports(context.Background(), s.ID)
				for _, pt := range ports {
					if pt.Port == 8765 && pt.Address == "0.0.0.0" {
						return true
					}
				}
				return false
			}, "port 8765 listed")

			// The link: its token becomes an HttpOnly cookie of this host,
			// and leaves the address.
			st, _, h := get(p.URL+"&keep=1", nil)
			if st != http.StatusSeeOther || h.Get("Location") != "/?keep=1" {
				t.Fatalf("the link: %d %v", st, h)
			}
			ck := (&http.Response{Header: h}).Cookies()
			if len(ck) != 1 || !ck[0].HttpOnly || ck[0].Name != "glassroom_preview" || ck[0].Value != p.Token || ck[0].Domain != "" {
				t.Fatalf("cookie %+v", ck)
			}
			// "//elsewhere" keeps the redirect on this host (no open redirect).
			if st, _, h := get(base+"//elsewhere.test/x?glassroom_preview_token="+url.QueryEscape(p.Token), nil); st != http.StatusSeeOther || h.Get("Location") != "/elsewhere.test/x" {
				t.Fatalf("a network-path redirect: %d %q", st, h.Get("Location"))
			}
			// Cookies a page planted for the whole domain do not hide the grant.
			planted := strings.Repeat("glassroom_preview=planted; ", 20)
			st, body, _ := get(base+"/echo?x=1", map[string]string{"Cookie": planted + "app=1; glassroom_preview=" + p.Token})
			var seen struct {
				Path    string
				Headers map[string]string
			}
			_ = json.Unmarshal([]byte(body), &seen)
			if st != http.StatusOK || seen.Path != "/echo?x=1" || seen.Headers["cookie"] != "app=1" || seen.Headers["host"] != u.Host ||
				seen.Headers["x-forwarded-proto"] != "http" || strings.Contains(body, p.Token) {
				t.Fatalf("with the cookie: %d %s", st, body)
			}
			if st, body, _ := get(base+"/h", map[string]string{gateway.PreviewTokenHeader: p.Token}); st != http.StatusOK || strings.Contains(body, p.Token) {
				t.Fatalf("with the header: %d %s", st, body)
			}
			// The tagged host (E2B's get_host) is its own grant, for any
			// port of the session (the session shows it); another session's
			// tag is not.
			if st, body, _ := get("http://"+p.Host+"/tagged", nil); st != http.StatusOK || !strings.Contains(body, `"/tagged"`) {
				t.Fatalf("the tagged host: %d %s", st, body)
			}
			var info api.Session
			if e.call(keyA, "GET", "/v1/sessions/"+s.ID, nil, &info); "8765-"+info.PreviewHost != p.Host {
				t.Fatalf("the session's preview host %q, the preview's %q", info.PreviewHost, p.Host)
			}
			if st, _, _ := get("http://8766-"+info.PreviewHost+"/", nil); st != http.StatusBadGateway {
				t.Fatalf("another port of the tagged host: %d", st)
			}
			tag := p.Host[strings.LastIndex(p.Host[:strings.Index(p.Host, ".")], "-")+1 : strings.Index(p.Host, ".")]
			otherTag := mint(other.ID, 8765, nil).Host
			otherTag = otherTag[strings.LastIndex(otherTag[:strings.Index(otherTag, ".")], "-")+1 : strings.Index(otherTag, ".")]
			for what, host := range map[string]string{
				"another session's": strings.Replace(p.Host, tag, otherTag, 1),
				"a tag changed":     strings.Replace(p.Host, tag, strings.Repeat("a", len(tag)), 1),
			} {
				if st, _, _ := get("http://"+host+"/", nil); st != http.StatusUnauthorized {
					t.Fatalf("%s: %d", what, st)
				}
			}

			// Refused: no token, another port's, another session's, expired,
			// the API key, an unknown host.
			zero := 0.0
			for what, hdr := range map[string]map[string]string{
				"no token":          nil,
				"another port's":    {gateway.PreviewTokenHeader: mint(s.ID, 8766, nil).Token},
				"another session's": {gateway.PreviewTokenHeader: mint(other.ID, 8765, nil).Token},
				"expired":           {gateway.PreviewTokenHeader: mint(s.ID, 8765, &zero).Token},
				"the API key":       {"Authorization": "Bearer " + keyA, gateway.PreviewTokenHeader: keyA},
			} {
				if st, body, _ := get(base+"/", hdr); st != http.StatusUnauthorized || strings.Contains(body, `"path"`) {
					t.Fatalf("%s: %d %q", what, st, body)
				}
			}
			if st, _, _ := get("http://8765-"+other.ID+".elsewhere.test/", map[string]string{gateway.PreviewTokenHeader: p.Token}); st != http.StatusNotFound {
				t.Fatalf("another domain: %d", st)
			}

			// A WebSocket through the preview, ended by the session's end.
			d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, g.PreviewAddr)
			}}
			ws, resp, err := d.Dial("ws://"+u.Host+"/ws", http.Header{"Cookie": {"glassroom_preview=" + url.QueryEscape(p.Token)}})
			if err != nil {
				t.Fatalf("websocket: %v %v", err, resp)
			}
			defer ws.Close()
			if err := ws.WriteMessage(websocket.TextMessage, []byte("hot reload")); err != nil {
				t.Fatal(err)
			}
			if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != "echo:hot reload" {
				t.Fatalf("echo %q %v", msg, err)
			}
			if st := e.call(keyA, "DELETE", "/v1/sessions/"+s.ID, nil, nil); st != http.StatusNoContent {
				t.Fatalf("delete: %d", st)
			}
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, _, err := ws.ReadMessage(); err == nil || strings.Contains(err.Error(), "timeout") {
				t.Fatalf("the WebSocket outlived its session: %v", err)
			}
			if st, body, _ := get(base+"/", map[string]string{gateway.PreviewTokenHeader: p.Token}); st != http.StatusNotFound || !strings.Contains(body, "ended") {
				t.Fatalf("after the session's end: %d %q", st, body)
			}
			if st, _, _ := get("http://"+p.Host+"/", nil); st != http.StatusNotFound {
				t.Fatalf("the tagged host after the session's end: %d", st)
			}
		})
	}
}

// TestPrivatePreviews: a session created with private previews (E2B's
// allow_public_traffic=False) has an untagged preview host and a traffic
// access token; the host alone is refused, its tagged form too, and the
// token (in either header, for any port of its session only) lets a
// request through, as a link's token still does. A public session has
// no traffic token.
func TestPrivatePreviews(t *testing.T) {
	key := urlsign.NewKey()
	signer, _ := urlsign.New(key)
	g := apptest.Start(t, localRuntime(t), apptest.Options{Gateway: gateway.Config{APIKeys: []string{keyA, keyB}, URLSigningKey: key}, Previews: true})
	e := &env{t: t, g: g, url: g.URL, mgr: g.Manager, rt: g.App.Runtime}
	getURL := previewGetter(t, g.PreviewAddr)
	get := func(host string, hdr map[string]string) (int, string) {
		t.Helper()
		st, body, _ := getURL("http://"+host+"/", hdr)
		return st, body
	}
	var s api.Session
	if st := e.call(keyA, "POST", "/v1/sessions", api.CreateSessionRequest{PrivatePreviews: true}, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	_, previewPort, _ := net.SplitHostPort(g.PreviewAddr)
	if !s.PrivatePreviews || s.TrafficAccessToken == "" || s.PreviewHost != s.ID+".localhost:"+previewPort {
		t.Fatalf("a private session: %+v", s)
	}
	var again api.Session
	if e.call(keyA, "GET", "/v1/sessions/"+s.ID, nil, &again); again.TrafficAccessToken != s.TrafficAccessToken || again.PreviewHost != s.PreviewHost {
		t.Fatalf("GET: %+v", again)
	}
	var public api.Session
	if st := e.call(keyA, "POST", "/v1/sessions", api.CreateSessionRequest{}, &public); st != http.StatusCreated || public.TrafficAccessToken != "" || public.PrivatePreviews {
		t.Fatalf("a public session: %d %+v", st, public)
	}
	if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/commands", api.RunCommandRequest{Cmd: "mkdir -p site && echo private-page > site/index.html && cd site && exec python3 -m http.server 8765", Background: true}, nil); st != http.StatusCreated {
		t.Fatalf("start the server: %d", st)
	}
	host := "8765-" + s.PreviewHost
	testkit.Eventually(t, time.Minute, func() bool {
		st, _ := get(host, map[string]string{"E2b-Traffic-Access-Token": s.TrafficAccessToken})
		return st == http.StatusOK
	}, "the server through the traffic token")
	if st, body := get(host, map[string]string{gateway.PreviewTokenHeader: s.TrafficAccessToken}); st != http.StatusOK || body != "private-page\n" {
		t.Fatalf("the traffic token in glassroom's header: %d %q", st, body)
	}
	if st, _ := get("8766-"+s.PreviewHost, map[string]string{"E2b-Traffic-Access-Token": s.TrafficAccessToken}); st != http.StatusBadGateway {
		t.Fatalf("another port of the session, with its token: %d", st)
	}
	for what, hdr := range map[string]map[string]string{
		"no token":               nil,
		"the access token":       {"E2b-Traffic-Access-Token": s.AccessToken},
		"another session's":      {"E2b-Traffic-Access-Token": signer.TrafficToken(keyA, public.ID)},
		"the token in the query": nil,
	} {
		h := host
		if what == "the token in the query" {
			h = host + "/?glassroom_preview_token=" + url.QueryEscape(s.TrafficAccessToken)
		}
		if st, body := get(h, hdr); st != http.StatusUnauthorized || strings.Contains(body, "private-page") {
			t.Fatalf("%s: %d %q", what, st, body)
		}
	}
	tagged := "8765-" + s.ID + "-" + signer.HostTag(s.ID) + ".localhost:" + previewPort
	if st, body := get(tagged, nil); st != http.StatusForbidden || !strings.Contains(body, "private") {
		t.Fatalf("the tagged host of a private session: %d %q", st, body)
	}
	p, err := e.client(keyA).Preview(context.Background(), s.ID, 8765, 0)
	if err != nil || p.Host != host {
		t.Fatalf("a link of a private session: %+v %v", p, err)
	}
	if st, body := get(host, map[string]string{gateway.PreviewTokenHeader: p.Token}); st != http.StatusOK || body != "private-page\n" {
		t.Fatalf("a link's token: %d %q", st, body)
	}
}

// previewGetter returns a GET for preview URLs: every host name reaches
// the preview listener at addr, redirects are not followed, and the
// answer's status, body and headers come back (a failed request fails t).
func previewGetter(t *testing.T, addr string) func(u string, hdr map[string]string) (int, string, http.Header) {
	hc := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(hc.CloseIdleConnections)
	return func(u string, hdr map[string]string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest("GET", u, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
}
