package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyA = "tenant-a-key-0123456789"
	keyB = "tenant-b-key-0123456789"
)

// env is a gateway on a real loopback listener over a real runtime.
type env struct {
	t   *testing.T
	g   *apptest.Gateway
	url string
	mgr *sessions.Manager
	rt  sessions.Runtime
}

type runtimeFactory func(t *testing.T) app.Runtime

func localRuntime(t *testing.T) app.Runtime { return apptest.Local(t) }

// dockerRuntime is Docker with runc; outside CI a missing engine or image
// skips loudly, in CI it fails (apptest.Start).
func dockerRuntime(t *testing.T) app.Runtime { return apptest.DockerWith(t, "runc") }

// gvisorRuntime runs kernels under runsc, with the sessions' usual limits
// (the runtime caps a gVisor session's pids at 48 and leaves the sentry's
// threads room on the host).
func gvisorRuntime(t *testing.T) app.Runtime { return apptest.DockerWith(t, "runsc") }

// runscRegistered reports whether the Docker engine has a runsc runtime.
func runscRegistered() bool {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := cli.Info(ctx)
	if err != nil {
		return false
	}
	_, ok := info.Runtimes["runsc"]
	return ok
}

// runtimes lists the runtimes the behaviour suite runs against: local,
// docker (runc) and, when the engine has it, docker with gVisor (runsc).
func runtimes() map[string]runtimeFactory {
	rts := map[string]runtimeFactory{"local": localRuntime, "docker": dockerRuntime}
	if runscRegistered() {
		rts["docker-runsc"] = gvisorRuntime
	}
	return rts
}

func newEnv(t *testing.T, rt app.Runtime, cfg sessions.Config) *env {
	t.Helper()
	return newEnvGateway(t, rt, cfg, gateway.Config{})
}

// newEnvGateway is newEnv with gw's settings (its keys and body limit are
// the tests').
func newEnvGateway(t *testing.T, rt app.Runtime, cfg sessions.Config, gw gateway.Config) *env {
	t.Helper()
	gw.APIKeys, gw.MaxBodyBytes = []string{keyA, keyB}, 1<<20
	g := apptest.Start(t, rt, apptest.Options{Sessions: cfg, Gateway: gw})
	return &env{t: t, g: g, url: g.URL, mgr: g.Manager, rt: g.App.Runtime}
}

// smallLargeFrameBudget is the smallest large-frame budget the gateway
// takes with the default comm limit (twice an 8 MiB comm message's frame,
// with a little room): one share per tenant, so a share that is not given
// back holds up the tenant's next large frame.
const smallLargeFrameBudget = 2 * (8<<20*4/3 + 256<<10 + 64<<10)

// client returns a glassroom Go client with key: the helpers below go
// through it, so the client is exercised by every end-to-end test.
func (e *env) client(key string) *glclient.Client {
	e.t.Helper()
	c, err := glclient.New(glclient.Config{BaseURL: e.url, APIKey: key})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// call does one request and decodes the JSON response into out (if non-nil).
// A string body is sent as is (bad JSON included); without a key the
// request goes out without one (the client always sends its key).
func (e *env) call(key, method, path string, body any, out any) int {
	e.t.Helper()
	if key == "" {
		return e.g.Call(e.t, "", method, path, body, out)
	}
	resp, err := e.client(key).Do(context.Background(), method, path, apptest.Body(body), "application/json")
	return apptest.Decode(e.t, method+" "+path, resp, err, out)
}

// reencode copies v into out through JSON (without HTML escaping), to
// hand the client's values to tests written against the sessions types.
func reencode(t *testing.T, v, out any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), out); err != nil {
		t.Fatalf("reencode %s: %v", b.Bytes(), err)
	}
}

type session struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Runtime   string    `json:"runtime"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

type apiErr struct {
	Error struct{ Code, Message string } `json:"error"`
}

func (e *env) create(key string, body any) session {
	e.t.Helper()
	var req struct {
		Env         map[string]string `json:"env"`
		IdleTimeout float64           `json:"idle_timeout_s"`
		Limits      glclient.Limits   `json:"limits"`
		Volumes     map[string]string `json:"volumes"`
	}
	reencode(e.t, body, &req)
	cs, err := e.client(key).CreateSession(context.Background(), glclient.CreateOptions{
		Env: req.Env, IdleTimeout: time.Duration(req.IdleTimeout * float64(time.Second)), Limits: req.Limits, Volumes: req.Volumes,
	})
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return session{ID: cs.ID, State: cs.State, Runtime: cs.Runtime, CreatedAt: cs.CreatedAt, ExpiresAt: cs.ExpiresAt}
}

func (e *env) exec(key, id, code string, timeout float64) sessions.Execution {
	e.t.Helper()
	x, err := e.client(key).Execute(context.Background(), id, code, glclient.ExecuteOptions{Timeout: time.Duration(timeout * float64(time.Second))})
	if err != nil {
		e.t.Fatalf("execute %q: %v", code, err)
	}
	var out sessions.Execution
	reencode(e.t, x, &out)
	return out
}

// wsClient is a test WebSocket client.
type wsClient struct {
	t    *testing.T
	conn *wsConn
}

// wsConn gives the tests a gorilla-like connection over the glassroom
// client's Conn: frames go out as written, and events come back through
// the client's decoding (so a field the client drops fails the tests).
type wsConn struct {
	*glclient.Conn
	deadline time.Time
}

func (c *wsConn) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.SendRaw(context.Background(), data)
}

func (c *wsConn) WriteMessage(_ int, data []byte) error { return c.SendRaw(context.Background(), data) }

func (c *wsConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	return nil
}

func (c *wsConn) ReadJSON(v any) error {
	ctx := context.Background()
	if !c.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.deadline)
		defer cancel()
	}
	ev, err := c.Next(ctx)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return err
	}
	return json.Unmarshal(b.Bytes(), v)
}

func (e *env) ws(key, id, query string) *wsClient {
	e.t.Helper()
	var opts glclient.ConnectOptions
	if q, err := url.ParseQuery(strings.TrimLeft(query, "?&")); err == nil && q.Get("since") != "" {
		n, _ := strconv.ParseInt(q.Get("since"), 10, 64)
		opts.Since = &n
	}
	conn, err := e.client(key).Connect(context.Background(), id, opts)
	if err != nil {
		e.t.Fatalf("ws dial: %v", err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return &wsClient{t: e.t, conn: &wsConn{Conn: conn}}
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	if err := w.conn.WriteJSON(v); err != nil {
		w.t.Fatal(err)
	}
}

// frame is any server frame: an event, or a rejection (Code, Message).
type frame struct {
	sessions.Event
	Code    string `json:"code"`
	Message string `json:"message"`
}

// until reads frames until pred matches one; it returns every frame read.
func (w *wsClient) until(pred func(frame) bool) []frame {
	w.t.Helper()
	var got []frame
	w.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var ev frame
		if err := w.conn.ReadJSON(&ev); err != nil {
			w.t.Fatalf("ws read after %d events (%+v): %v", len(got), got, err)
		}
		got = append(got, ev)
		if pred(ev) {
			return got
		}
	}
}

func doneFor(id string) func(frame) bool {
	return func(ev frame) bool { return ev.Type == "done" && ev.ID == id }
}

func TestBehaviour(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{MaxStreamBytes: 256 << 10})
			s := e.create(keyA, nil)
			if s.State != "idle" || s.Runtime != strings.TrimSuffix(name, "-runsc") || len(s.ID) < 32 || !s.ExpiresAt.After(s.CreatedAt) {
				t.Fatalf("created %+v", s)
			}
			t.Run("rest state persists", func(t *testing.T) {
				e.exec(keyA, s.ID, "x = 41", 0)
				x := e.exec(keyA, s.ID, "x + 1", 0)
				if x.Status != "ok" || string(x.Result) != `{"text/plain":"42"}` || len(x.Outputs) != 1 || x.Outputs[0].Type != "result" {
					t.Fatalf("x + 1: %+v", x)
				}
			})
			t.Run("user expressions and payloads", func(t *testing.T) {
				var x sessions.Execution
				st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", api.ExecuteRequest{Code: api.Ptr("y = 6"),
					UserExpressions: map[string]string{"twice": "y * 2", "bad": "1/0"}}, &x)
				var ue map[string]struct {
					Status string
					Data   map[string]string
					EName  string
				}
				if err := json.Unmarshal(x.UserExpressions, &ue); st != http.StatusOK || err != nil || ue["twice"].Data["text/plain"] != "12" || ue["bad"].EName != "ZeroDivisionError" {
					t.Fatalf("user_expressions: %d %v %s", st, err, x.UserExpressions)
				}
				if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", api.ExecuteRequest{Code: api.Ptr("1"),
					UserExpressions: map[string]string{"": "1"}}, nil); st != http.StatusBadRequest {
					t.Fatalf("a nameless user expression: %d", st)
				}
				kinds := func(x sessions.Execution) (types []string) {
					for _, o := range x.Outputs {
						types = append(types, string(o.Type))
					}
					return types
				}
				if x := e.exec(keyA, s.ID, "len?", 0); !slices.Equal(kinds(x), []string{"page"}) || !strings.Contains(string(x.Outputs[0].Data), "Return the number of items") {
					t.Fatalf("len?: %+v", x)
				}
				e.exec(keyA, s.ID, "open('loadme.py', 'w').write('print(1)')", 0)
				if x := e.exec(keyA, s.ID, "%load loadme.py", 0); !slices.Equal(kinds(x), []string{"set_next_input"}) || !strings.Contains(x.Outputs[0].Text, "print(1)") {
					t.Fatalf("%%load: %+v", x)
				}
			})
			t.Run("matplotlib png", func(t *testing.T) {
				x := e.exec(keyA, s.ID, "import matplotlib.pyplot as plt\nplt.plot([1,2,3])\nplt.show()", 0)
				var png string
				for _, o := range x.Outputs {
					if o.Type == "display" {
						var bundle map[string]string
						json.Unmarshal(o.Data, &bundle)
						png = bundle["image/png"]
					}
				}
				raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(png))
				if err != nil || !bytes.HasPrefix(raw, []byte("\x89PNG")) {
					t.Fatalf("no PNG display: %+v", x)
				}
			})
			t.Run("error with traceback", func(t *testing.T) {
				x := e.exec(keyA, s.ID, "1/0", 0)
				if x.Status != "error" || x.Error == nil || x.Error.Name != "ZeroDivisionError" || len(x.Error.Traceback) == 0 {
					t.Fatalf("1/0: %+v", x)
				}
			})
			t.Run("timeout then usable", func(t *testing.T) {
				x := e.exec(keyA, s.ID, "import time\nwhile True: time.sleep(0.1)", 0.5)
				if x.Status != "timeout" || x.StateLost {
					t.Fatalf("timeout: %+v", x)
				}
				if x := e.exec(keyA, s.ID, "x", 0); x.Status != "ok" {
					t.Fatalf("after timeout: %+v", x)
				}
			})
			t.Run("output flood is truncated", func(t *testing.T) {
				x := e.exec(keyA, s.ID, "for i in range(3000): print('x' * 1000)", 0)
				if !x.Truncated || len(x.Stdout) > 256<<10 {
					t.Fatalf("flood: truncated=%v stdout=%d", x.Truncated, len(x.Stdout))
				}
			})
			t.Run("websocket execute, input and state", func(t *testing.T) {
				w := e.ws(keyA, s.ID, "")
				w.send(map[string]any{"type": "execute", "id": "w1", "code": "y = x * 2\ny"})
				evs := w.until(doneFor("w1"))
				var result string
				for _, ev := range evs {
					if ev.Type == "result" {
						result = string(ev.Data)
					}
				}
				if result != `{"text/plain":"82"}` {
					t.Fatalf("ws result %q in %+v", result, evs)
				}
				w.send(map[string]any{"type": "execute", "id": "w2", "code": "print('hello', input('who?'))"})
				w.until(func(ev frame) bool { return ev.Type == "input_request" && ev.ID == "w2" && *ev.Prompt == "who?" })
				w.send(map[string]any{"type": "input_reply", "id": "w2", "value": "ada"})
				evs = w.until(doneFor("w2"))
				if !strings.Contains(streams(evs), "hello ada") {
					t.Fatalf("input echo missing: %+v", evs)
				}
				w.send(map[string]any{"type": "bogus"})
				evs = w.until(func(ev frame) bool { return ev.Type == "rejected" })
				if r := evs[len(evs)-1]; r.Code != "unknown_type" || !strings.Contains(r.Message, "bogus") {
					t.Fatalf("unknown frame answer: %+v", r)
				}
				w.conn.WriteMessage(websocket.TextMessage, []byte("{not json"))
				if r := w.until(func(ev frame) bool { return ev.Type == "rejected" }); r[len(r)-1].Code != "bad_frame" {
					t.Fatalf("bad JSON frame answer: %+v", r[len(r)-1])
				}
				// The connection and session still work.
				w.send(map[string]any{"type": "execute", "id": "w3", "code": "print(y)"})
				if !strings.Contains(streams(w.until(doneFor("w3"))), "82") {
					t.Fatal("session unusable after bad frames")
				}
			})
			t.Run("several clients see every execution", func(t *testing.T) {
				w1, w2 := e.ws(keyA, s.ID, ""), e.ws(keyA, s.ID, "")
				w1.send(map[string]any{"type": "execute", "id": "m1", "code": "print('shared')"})
				for _, w := range []*wsClient{w1, w2} {
					if !strings.Contains(streams(w.until(doneFor("m1"))), "shared") {
						t.Fatal("a client missed the execution")
					}
				}
			})
			t.Run("reconnect receives the rest", func(t *testing.T) {
				w := e.ws(keyA, s.ID, "")
				w.send(map[string]any{"type": "execute", "id": "long", "code": "import time\nfor i in range(6):\n    print(i, flush=True)\n    time.sleep(0.15)"})
				evs := w.until(func(ev frame) bool { return ev.Type == "stream" && ev.ID == "long" })
				last := evs[len(evs)-1].Seq
				w.conn.Close() // network drop mid-execution
				// The rest of the cell runs while the client is away: it
				// comes back once the session is idle again.
				var info *glclient.Session
				testkit.Eventually(t, 30*time.Second, func() bool {
					info, _ = e.client(keyA).GetSession(context.Background(), s.ID)
					return info != nil && info.State == "idle"
				}, "the session to be idle after the cell its client left: last %+v", testkit.Seen(func() any { return info }))
				w2 := e.ws(keyA, s.ID, "")
				w2.send(map[string]any{"type": "resume", "since": last})
				evs = w2.until(doneFor("long"))
				out := streams(evs)
				if out != "1\n2\n3\n4\n5\n" && !strings.HasSuffix(strings.ReplaceAll(out, "\n", ""), "12345") {
					t.Fatalf("after reconnect got %q", out)
				}
			})
			t.Run("idle timeout can be changed", func(t *testing.T) {
				var got struct {
					IdleTimeoutS int       `json:"idle_timeout_s"`
					ExpiresAt    time.Time `json:"expires_at"`
				}
				if st := e.call(keyA, "PATCH", "/v1/sessions/"+s.ID, map[string]any{"idle_timeout_s": 90}, &got); st != http.StatusOK || got.IdleTimeoutS != 90 || time.Until(got.ExpiresAt) > 91*time.Second {
					t.Fatalf("patch: %d %+v", st, got)
				}
				if st := e.call(keyA, "PATCH", "/v1/sessions/"+s.ID, map[string]any{"idle_timeout_s": 1e9}, nil); st != http.StatusBadRequest {
					t.Fatalf("absurd idle timeout: %d", st)
				}
				if st := e.call(keyB, "PATCH", "/v1/sessions/"+s.ID, map[string]any{"idle_timeout_s": 90}, nil); st != http.StatusNotFound {
					t.Fatalf("other tenant: %d", st)
				}
			})
			t.Run("sessions do not share variables", func(t *testing.T) {
				other := e.create(keyA, map[string]any{})
				if x := e.exec(keyA, other.ID, "x", 0); x.Status != "error" || x.Error.Name != "NameError" {
					t.Fatalf("x leaked: %+v", x)
				}
			})
			t.Run("restart keeps id, drops variables", func(t *testing.T) {
				if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/restart", nil, nil); st != http.StatusNoContent {
					t.Fatalf("restart: %d", st)
				}
				if x := e.exec(keyA, s.ID, "x", 0); x.Status != "error" {
					t.Fatalf("x survived restart: %+v", x)
				}
			})
			t.Run("no network, not even the gateway", func(t *testing.T) {
				port := e.url[strings.LastIndex(e.url, ":")+1:]
				x := e.exec(keyA, s.ID, `import socket
try:
    socket.create_connection(("127.0.0.1", `+port+`), timeout=2); print("CONNECTED")
except OSError:
    print("refused")
print([n for _, n in socket.if_nameindex()], open("/proc/net/route").read().strip().count("\n"))`, 0)
				if x.Stdout != "refused\n['lo'] 0\n" {
					t.Fatalf("the sandbox reached the gateway's port or has a network: %q", x.Stdout)
				}
			})
			t.Run("complete and inspect", func(t *testing.T) { introspection(t, e, s.ID) })
			t.Run("code interpreter flow with files", func(t *testing.T) { fileFlow(t, e, s.ID) })
			t.Run("file attacks fail and change nothing", func(t *testing.T) { fileAttacks(t, e, s.ID) })
			if strings.HasPrefix(name, "docker") {
				t.Run("container killed from outside reports died, then recovers", func(t *testing.T) {
					victim := e.create(keyA, nil)
					w := e.ws(keyA, victim.ID, "")
					w.send(map[string]any{"type": "execute", "id": "k1", "code": "import time; time.sleep(60)"})
					w.until(func(ev frame) bool { return ev.Type == "started" && ev.ID == "k1" })
					name := e.rt.(*docker.Runtime).ContainerName(victim.ID)
					if out, err := exec.Command("docker", "kill", name).CombinedOutput(); err != nil {
						t.Fatalf("docker kill: %v %s", err, out)
					}
					evs := w.until(doneFor("k1"))
					if d := evs[len(evs)-1]; d.Status != "died" || !strings.Contains(d.Reason, "exit code 137") {
						t.Fatalf("want died with exit code 137, got %+v", d)
					}
					if x := e.exec(keyA, victim.ID, "1 + 1", 0); x.Status != "ok" {
						t.Fatalf("not recovered after kill: %+v", x)
					}
					if x := e.exec(keyA, s.ID, "1 + 1", 0); x.Status != "ok" {
						t.Fatalf("other session hurt: %+v", x)
					}
				})
				t.Run("memory past the limit reports died with OOM, then recovers", func(t *testing.T) {
					small := e.create(keyA, map[string]any{"limits": map[string]any{"memory_mb": 256}})
					x := e.exec(keyA, small.ID, "b = []\nwhile True: b.append(bytearray(16 << 20))", 0)
					oom := strings.Contains(x.Reason, "OOMKilled")
					if name == "docker-runsc" {
						// gVisor: the OOM kills the whole sandbox and Docker
						// does not always see the OOM event (documented).
						oom = oom || strings.Contains(x.Reason, "exit code 137")
					}
					if x.Status != "died" || !oom || !x.StateLost {
						t.Fatalf("want died/OOMKilled, got %+v", x)
					}
					if x := e.exec(keyA, small.ID, "1 + 1", 0); x.Status != "ok" {
						t.Fatalf("not recovered after OOM: %+v", x)
					}
					if x := e.exec(keyA, s.ID, "1 + 1", 0); x.Status != "ok" {
						t.Fatalf("other session hurt by OOM: %+v", x)
					}
				})
			}
			t.Run("delete", func(t *testing.T) {
				if st := e.call(keyA, "DELETE", "/v1/sessions/"+s.ID, nil, nil); st != http.StatusNoContent {
					t.Fatalf("delete: %d", st)
				}
				if st := e.call(keyA, "GET", "/v1/sessions/"+s.ID, nil, nil); st != http.StatusNotFound {
					t.Fatalf("get after delete: %d", st)
				}
			})
		})
	}
}

func streams(evs []frame) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == "stream" {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func TestIdleExpiryOverWebSocket(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{ReapInterval: 100 * time.Millisecond})
	s := e.create(keyA, map[string]any{"idle_timeout_s": 1})
	w := e.ws(keyA, s.ID, "")
	evs := w.until(func(ev frame) bool { return ev.Type == "kernel" && ev.State == "dead" })
	if last := evs[len(evs)-1]; last.Reason != "idle timeout" {
		t.Fatalf("dead event %+v", last)
	}
	if st := e.call(keyA, "GET", "/v1/sessions/"+s.ID, nil, nil); st != http.StatusNotFound {
		t.Fatalf("expired session: %d", st)
	}
}
