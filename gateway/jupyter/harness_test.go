package jupyter_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
	"go.uber.org/goleak"
)

// The harness of this package's end-to-end tests: real gateways
// (app/apptest) on real kernels, their Jupyter API driven by the protocol
// client of jclient_test.go, their /v1 API by the Go client.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyA = apptest.KeyA
	keyB = apptest.KeyB
)

// runtimes are the runtimes the kernels API is tested on: nothing of it
// depends on Docker's OCI runtime.
func runtimes() map[string]func(t *testing.T) app.Runtime {
	out := map[string]func(t *testing.T) app.Runtime{}
	for name, rt := range apptest.Runtimes() {
		out[name] = func(t *testing.T) app.Runtime { return rt(t) }
	}
	return out
}

func localRuntime(t *testing.T) app.Runtime { return apptest.Local(t) }

// env is a gateway on a real loopback listener over a real runtime.
type env struct {
	t   *testing.T
	g   *apptest.Gateway
	url string
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
	return &env{t: t, g: g, url: g.URL}
}

// client returns a glassroom Go client with key.
func (e *env) client(key string) *glclient.Client { return e.g.Client(e.t, key) }

// call does one /v1 request with key ("Authorization: Bearer <key>"; none
// if empty) and decodes the JSON answer into out.
func (e *env) call(key, method, path string, body any, out any) int {
	e.t.Helper()
	if key != "" {
		key = "Bearer " + key
	}
	return e.g.Call(e.t, key, method, path, body, out)
}

// jupyterCall does one request with "Authorization: <auth>" (none if
// empty) and decodes the JSON answer into out.
func (e *env) jupyterCall(auth, method, path string, body any, out any) int {
	e.t.Helper()
	return e.g.Call(e.t, auth, method, path, body, out)
}

// exec runs code in session id through /v1 (timeout in seconds, 0 for
// the default).
func (e *env) exec(key, id, code string, timeout float64) *glclient.Execution {
	e.t.Helper()
	x, err := e.client(key).Execute(context.Background(), id, code, glclient.ExecuteOptions{Timeout: time.Duration(timeout * float64(time.Second))})
	if err != nil {
		e.t.Fatalf("execute %q: %v", code, err)
	}
	return x
}

// create makes a session through /v1 (idle: its idle timeout, 0 for the
// default).
func (e *env) create(key string, idle time.Duration) *glclient.Session {
	e.t.Helper()
	s, err := e.client(key).CreateSession(context.Background(), glclient.CreateOptions{IdleTimeout: idle})
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return s
}

// frame is a frame of the /v1 WebSocket.
type frame = glclient.Event

// wsClient is a /v1 WebSocket through the Go client.
type wsClient struct {
	t    *testing.T
	conn *glclient.Conn
}

func (e *env) ws(key, id string) *wsClient {
	e.t.Helper()
	conn, err := e.client(key).Connect(context.Background(), id, glclient.ConnectOptions{})
	if err != nil {
		e.t.Fatalf("ws dial: %v", err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return &wsClient{t: e.t, conn: conn}
}

// send sends v as a JSON frame.
func (w *wsClient) send(v map[string]any) {
	w.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.conn.SendRaw(context.Background(), data); err != nil {
		w.t.Fatal(err)
	}
}

// until reads frames until pred matches one; it returns every frame read.
func (w *wsClient) until(pred func(frame) bool) []frame {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []frame
	for {
		f, err := w.conn.Next(ctx)
		if err != nil {
			w.t.Fatalf("ws read after %d frames (%+v): %v", len(got), got, err)
		}
		got = append(got, f)
		if pred(f) {
			return got
		}
	}
}

func doneFor(id string) func(frame) bool {
	return func(f frame) bool { return f.Type == "done" && f.ID == id }
}

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// lastActivityFormat is jupyter_server's %Y-%m-%dT%H:%M:%S.%fZ.
var lastActivityFormat = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// kernelModel is a kernel as GET /api/kernels/{id} describes it.
type kernelModel struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	LastActivity   string `json:"last_activity"`
	ExecutionState string `json:"execution_state"`
	Connections    int    `json:"connections"`
}

// jupyterErr is the body of a Jupyter API error.
type jupyterErr struct {
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// startKernel creates a kernel through /api with key.
func (e *env) startKernel(key string, body any) kernelModel {
	e.t.Helper()
	var k kernelModel
	if st := e.jupyterCall("token "+key, "POST", "/api/kernels", body, &k); st != http.StatusCreated {
		e.t.Fatalf("start kernel: %d %+v", st, k)
	}
	return k
}

func (e *env) channelsURL(id, query string) string {
	return "ws" + strings.TrimPrefix(e.url, "http") + "/api/kernels/" + id + "/channels?" + query
}

// channels opens kernel id's channels with key and reads the status a new
// connection gets first.
func (e *env) channels(t *testing.T, key, id string, v1 bool, query string) *jclient {
	t.Helper()
	c := dialJupyter(t, e.channelsURL(id, query), http.Header{"Authorization": {"token " + key}}, v1)
	if q, _ := url.ParseQuery(query); q.Get("session_id") != "" {
		c.session = q.Get("session_id") // as JupyterLab does
	}
	if m, ok := c.next(30 * time.Second); !ok || m.Header.MsgType != "status" || m.Channel != "iopub" {
		t.Fatalf("first message %v", m)
	}
	return c
}

func kernelIDOf(sessionID string) string {
	s := sessionID
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

func streamText(msgs []jm) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Header.MsgType == "stream" {
			b.WriteString(m.Content["text"].(string))
		}
	}
	return b.String()
}
