package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/web"
)

// flaskApp is what the sandbox serves: a page that talks to its own
// WebSocket (a handshake by hand on Werkzeug's socket: Flask has none of
// its own) and then tries what a hostile page would: read the notebook's
// key, read its own grant's cookie, call the API, frame the notebook.
const flaskApp = `import base64, hashlib, os
from flask import Flask, request
app = Flask(__name__)
GATEWAY = os.environ["GATEWAY"]
PAGE = """<!doctype html><title>preview</title><pre id="out"></pre><script>
const r = {}, done = () => { if (Object.keys(r).length === 6) document.title = 'done:' + JSON.stringify(r) }
const set = (k, v) => { r[k] = String(v); done() }
set('key', localStorage.getItem('glassroom.token'))
set('cookie', document.cookie)
const ws = new WebSocket('ws://' + location.host + '/ws')
ws.onopen = () => ws.send('ping')
ws.onmessage = (e) => set('ws', e.data)
ws.onerror = () => set('ws', 'error')
fetch('/seen').then((x) => x.text()).then((t) => set('seen', t))
fetch('GATEWAY/v1/sessions', { credentials: 'include' }).then((x) => set('api', 'read ' + x.status)).catch((e) => set('api', 'blocked ' + e))
const f = document.createElement('iframe')
f.src = 'GATEWAY/'
f.onload = () => { try { set('frame', 'read ' + f.contentWindow.localStorage.getItem('glassroom.token')) } catch (e) { set('frame', 'blocked ' + e.name) } }
document.body.appendChild(f)
</script>""".replace("GATEWAY", GATEWAY)

@app.route("/")
def index():
    return PAGE

@app.route("/seen")
def seen():
    return request.headers.get("Cookie", "") + "|" + request.query_string.decode()

@app.route("/ws", websocket=True)  # Werkzeug routes a WebSocket handshake only to such a rule
def ws():
    sock = request.environ["werkzeug.socket"]
    key = request.headers["Sec-WebSocket-Key"]
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Accept: " + accept + "\r\n\r\n").encode())
    f = sock.makefile("rb")
    h = f.read(2)
    mask = f.read(4)
    data = bytes(b ^ mask[i % 4] for i, b in enumerate(f.read(h[1] & 127)))
    out = b"pong:" + data
    sock.sendall(bytes([0x81, len(out)]) + out)
    f.read(2)  # until the page goes
    return ""

app.run(host="0.0.0.0", port=5000)
`

// previewBrowser starts a gateway that serves the UI and previews, and
// Chromium with a tab that resolves *.localhost (the previews) and
// 127.0.0.1 (the gateway) only; ctx bounds the test.
func previewBrowser(t *testing.T) (*apptest.Gateway, *notebook, context.Context) {
	t.Helper()
	bin := chromium(t)
	assets, err := web.Assets()
	if err != nil {
		t.Fatal(err)
	}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Gateway: gateway.Config{APIKeys: []string{browserKey, otherKey}}, Previews: true, UI: assets})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	tabCtx, _ := openTabWith(t, ctx, bin, "MAP *.localhost 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
	return g, &notebook{t: t, ctx: tabCtx}, ctx
}

// TestBrowserPreviewIsolation: a Flask server that a command starts in
// the sandbox is reached from Chromium through its preview link, its
// WebSocket included; the page it serves, on its own origin, reads
// neither the notebook's key nor the preview's own cookie, cannot call
// the API or frame the notebook, and the server never sees the grant.
// Real Chromium, gateway, sandbox and Flask.
func TestBrowserPreviewIsolation(t *testing.T) {
	g, nb, ctx := previewBrowser(t)

	// The notebook keeps its key in its origin's storage.
	nb.do("open the notebook", chromedp.Navigate(g.URL+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true && localStorage.getItem('glassroom.token') !== null`, 30*time.Second)

	c, err := client.New(client.Config{BaseURL: g.URL, APIKey: browserKey})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateSession(ctx, client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFile(ctx, s.ID, "app.py", strings.NewReader(flaskApp), int64(len(flaskApp))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartCommand(ctx, s.ID, "exec python3 app.py", client.CommandOptions{Envs: map[string]string{"GATEWAY": g.URL}}); err != nil {
		t.Fatal(err)
	}
	for {
		ports, err := c.Ports(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) > 0 && ports[0].Port == 5000 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Flask never listened: %v", ports)
		case <-time.After(100 * time.Millisecond):
		}
	}
	p, err := c.Preview(ctx, s.ID, 5000, 0)
	if err != nil {
		t.Fatal(err)
	}

	nb.do("open the preview link", chromedp.Navigate(p.URL))
	nb.waitFor("the page's findings", `document.title.startsWith('done:')`, 60*time.Second)
	var title, location string
	nb.eval(`document.title`, &title)
	nb.eval(`location.href`, &location)
	got := map[string]string{}
	for _, kv := range []string{"key", "cookie", "ws", "seen", "api", "frame"} {
		i := strings.Index(title, `"`+kv+`":"`)
		if i < 0 {
			t.Fatalf("no %s in %s", kv, title)
		}
		rest := title[i+len(kv)+4:]
		got[kv] = rest[:strings.Index(rest, `"`)]
	}
	switch {
	case strings.Contains(location, "glassroom_preview_token"):
		t.Fatalf("the token stayed in the address bar: %s", location)
	case got["ws"] != "pong:ping":
		t.Fatalf("the page's WebSocket: %q", got["ws"])
	case got["key"] != "null":
		t.Fatalf("the page read the notebook's key: %q", got["key"])
	case strings.Contains(got["cookie"], "glassroom_preview"):
		t.Fatalf("the page read its grant's cookie: %q", got["cookie"])
	case strings.Contains(got["seen"], "glassroom_preview") || strings.Contains(got["seen"], p.Token):
		t.Fatalf("the sandbox's server saw the grant: %q", got["seen"])
	case !strings.HasPrefix(got["api"], "blocked"):
		t.Fatalf("the page called the API: %q", got["api"])
	case !strings.HasPrefix(got["frame"], "blocked"):
		t.Fatalf("the page read the framed notebook: %q", got["frame"])
	}
	t.Logf("the preview page found: %v", got)
}

// TestBrowserServersPanel: a cell that starts a server (and one that
// serves until interrupted) puts a link to its preview in the servers
// panel; the link opens the server's page on its own origin. The
// kernel's own listeners are not listed.
func TestBrowserServersPanel(t *testing.T) {
	g, nb, _ := previewBrowser(t)
	nb.do("open the page", chromedp.Navigate(g.URL+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 30*time.Second)
	nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
	nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 60*time.Second)

	i := nb.run("import subprocess, pathlib\npathlib.Path('site').mkdir(exist_ok=True)\npathlib.Path('site/index.html').write_text('<title>from the sandbox</title>')\n" +
		"srv = subprocess.Popen(['python3', '-m', 'http.server', '-d', 'site', '8131'])")
	nb.waitDone(i, "the server started", `true`, 30*time.Second)
	nb.waitFor("a link to port 8131", `!!document.querySelector('#port-list a[data-port="8131"]')`, 30*time.Second)
	var links []string
	nb.eval(`[...document.querySelectorAll('#port-list a')].map((a) => a.dataset.port + ' ' + a.href + ' ' + a.rel)`, &links)
	if len(links) != 1 || !strings.Contains(links[0], "8131-") || !strings.Contains(links[0], ".localhost:") || !strings.HasSuffix(links[0], "noopener noreferrer") {
		t.Fatalf("the servers panel: %q (only the cell's server, opened without an opener)", links)
	}
	href := strings.Fields(links[0])[1]
	// A cell that serves until interrupted: found while it runs.
	nb.run("import http.server\nhttp.server.ThreadingHTTPServer(('0.0.0.0', 8132), http.server.SimpleHTTPRequestHandler).serve_forever()")
	nb.waitFor("a link to port 8132 while its cell runs", `!!document.querySelector('#port-list a[data-port="8132"]')`, 30*time.Second)
	nb.do("interrupt", chromedp.Click(chromedp.CSS("#interrupt-btn")))
	nb.waitFor("the kernel idle again", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
	nb.do("open the link", chromedp.Navigate(href))
	nb.waitFor("the server's page", `document.title === 'from the sandbox' && location.hostname.startsWith('8131-')`, 30*time.Second)
}
