package jupyter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/testkit"
)

// Real Jupyter clients that glassroom did not write, against real
// gateways on the local and docker runtimes: Debian's jupyter_server 1.23
// and classic Notebook 6.4 started with --gateway-url (the Notebook driven
// in Debian's Chromium), and JupyterLab's @jupyterlab/services from npm in
// Node (the v1 subprotocol JupyterLab uses).

// jupyterApp is a jupyter_server or notebook process using a glassroom
// gateway for its kernels.
type jupyterApp struct {
	url   string // http://127.0.0.1:port
	token string
	log   *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// readmeCommand returns the command line of docs/clients.md (in "Use
// from JupyterLab / Notebook") that starts with prefix, with the gateway's
// URL and key put in. The README's line with that prefix, if any, must be
// the same.
func readmeCommand(t *testing.T, prefix, gateway, key string) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Use from JupyterLab / Notebook\n")
	if !ok {
		t.Fatal("docs/clients.md has no Use from JupyterLab / Notebook section")
	}
	found := ""
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			found = line
			break
		}
	}
	if found == "" {
		t.Fatalf("docs/clients.md has no %q command line", prefix)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, prefix+" ") && line != found {
			t.Fatalf("README's %q differs from docs/clients.md's %q", line, found)
		}
	}
	found = strings.ReplaceAll(found, "http://127.0.0.1:8888", gateway)
	found = strings.ReplaceAll(found, "$K", key)
	return strings.Fields(found)
}

// startJupyterApp starts Debian's classic Notebook ("notebook") or
// jupyter_server ("jupyter_server") with the documented command line, with
// --gateway-url=gateway and the gateway key as GatewayClient.auth_token;
// the test adds a loopback port, a token and private directories. It stops
// it when the test ends.
func startJupyterApp(t *testing.T, module, gateway, key string) *jupyterApp {
	t.Helper()
	py := testkit.Python(t, module)
	dir := t.TempDir()
	for _, d := range []string{"home", "config", "data", "runtime", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	app := &jupyterApp{token: randomHex(16), log: &lockedBuffer{}}
	port := freePort(t)
	app.url = "http://127.0.0.1:" + strconv.Itoa(port)
	var argv []string
	cls, rootFlag := "ServerApp", "--ServerApp.root_dir="
	if module == "notebook" {
		cls, rootFlag = "NotebookApp", "--NotebookApp.notebook_dir="
		argv = readmeCommand(t, "jupyter notebook", gateway, key)
		argv[0] = "/usr/bin/jupyter" // Debian's, beside its python3
	} else {
		argv = readmeCommand(t, "python3 -m jupyter_server", gateway, key)
		argv[0] = py
	}
	if !slices.Contains(argv, "--gateway-url="+gateway) || !slices.Contains(argv, "--GatewayClient.auth_token="+key) {
		t.Fatalf("docs/clients.md command line %q", argv)
	}
	args := append(argv[1:], "--"+cls+".token="+app.token, "--"+cls+".ip=127.0.0.1", "--"+cls+".port="+strconv.Itoa(port),
		"--"+cls+".port_retries=0", "--"+cls+".open_browser=False", rootFlag+filepath.Join(dir, "root"))
	if os.Geteuid() == 0 {
		args = append(args, "--allow-root")
	}
	py = argv[0]
	cmd := exec.Command(py, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8",
		"JUPYTER_CONFIG_DIR=" + filepath.Join(dir, "config"), "JUPYTER_DATA_DIR=" + filepath.Join(dir, "data"),
		"JUPYTER_RUNTIME_DIR=" + filepath.Join(dir, "runtime"), "JUPYTER_PLATFORM_DIRS=1", "NO_PROXY=*"}
	cmd.Stdout, cmd.Stderr = app.log, app.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", module, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGTERM: the server shuts its kernels down through the gateway.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", module, app.log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, _ := app.call(t, "GET", "/api/kernelspecs", nil, nil); st == http.StatusOK {
			return app
		}
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", module, app.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start:\n%s", module, app.log.String())
		}
	}
}

// call does one request to the app's REST API with its token.
func (a *jupyterApp) call(t testing.TB, method, path string, body any, out any) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, a.url+path, r)
	req.Header.Set("Authorization", "token "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, string(data)
}

// ready sends kernel_info_request until the kernel answers, as Jupyter
// clients do: jupyter_server 1.23 opens its WebSocket to the gateway
// lazily and drops what a client sends before it is open.
func (c *jclient) ready() jm {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		id := c.send("shell", "kernel_info_request", map[string]any{})
		wait := time.After(time.Second)
		for {
			select {
			case m, ok := <-c.in:
				if !ok {
					c.t.Fatalf("connection ended before kernel_info_reply: %v", c.err)
				}
				if m.Header.MsgType == "kernel_info_reply" && m.Parent.MsgID == id {
					return m
				}
				continue
			case <-wait:
			}
			break
		}
	}
	c.t.Fatal("no kernel_info_reply within 60 s")
	return jm{}
}

// TestJupyterServerGateway: Debian's jupyter_server 1.23 with
// --gateway-url=<glassroom>: a kernel made, used over its channels (x = 41,
// then x + 1 is 42), interrupted, restarted and shut down through
// jupyter_server, as a notebook front end would.
func TestJupyterServerGateway(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			app := startJupyterApp(t, "jupyter_server", g.URL, apptest.KeyA)
			var k kernelModel
			if st, body := app.call(t, "POST", "/api/kernels", map[string]string{"name": "python3"}, &k); st != http.StatusCreated {
				t.Fatalf("start kernel through jupyter_server: %d %s", st, body)
			}
			// The kernel is a glassroom session of the key jupyter_server uses.
			gc := g.Client(t, apptest.KeyA)
			sid := strings.ReplaceAll(k.ID, "-", "")
			if _, err := gc.GetSession(context.Background(), sid); err != nil {
				t.Fatalf("kernel %s is not a session: %v", k.ID, err)
			}
			var listed []kernelModel
			if st, body := app.call(t, "GET", "/api/kernels", nil, &listed); st != http.StatusOK || len(listed) != 1 || listed[0].ID != k.ID {
				t.Fatalf("jupyter_server lists %d %s", st, body)
			}

			ws := "ws" + strings.TrimPrefix(app.url, "http") + "/api/kernels/" + k.ID + "/channels?session_id=" + randomHex(16) + "&token=" + app.token
			c := dialJupyter(t, ws, nil, false)
			if info := c.ready(); info.Content["implementation"] != "ipython" {
				t.Fatalf("kernel info through jupyter_server: %v", info)
			}
			if rep, _ := c.execute("x = 41"); rep.Content["status"] != "ok" {
				t.Fatalf("x = 41: %v", rep)
			}
			rep, iopub := c.execute("x + 1")
			if got := resultText(t, iopub); got != "42" || rep.Content["status"] != "ok" {
				t.Fatalf("x + 1 = %q, reply %v", got, rep)
			}

			// Interrupt a busy loop through jupyter_server's REST API.
			id := c.send("shell", "execute_request", map[string]any{"code": "while True: pass", "silent": false})
			c.until("the loop's execute_input", func(m jm) bool { return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id })
			if st, body := app.call(t, "POST", "/api/kernels/"+k.ID+"/interrupt", map[string]any{}, nil); st != http.StatusNoContent {
				t.Fatalf("interrupt: %d %s", st, body)
			}
			rep, _ = c.await(id, "execute_request")
			if rep.Content["status"] != "error" || rep.Content["ename"] != "KeyboardInterrupt" {
				t.Fatalf("interrupted loop: %v", rep)
			}

			// Restart: the variables are gone.
			if st, body := app.call(t, "POST", "/api/kernels/"+k.ID+"/restart", map[string]any{}, nil); st != http.StatusOK {
				t.Fatalf("restart: %d %s", st, body)
			}
			if rep, _ := c.execute("x"); rep.Content["ename"] != "NameError" {
				t.Fatalf("x after restart: %v", rep)
			}

			// Shut down: the session is gone.
			if st, body := app.call(t, "DELETE", "/api/kernels/"+k.ID, nil, nil); st != http.StatusNoContent {
				t.Fatalf("shutdown: %d %s", st, body)
			}
			if _, err := gc.GetSession(context.Background(), sid); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("session after shutdown: %v", err)
			}
		})
	}
}

// jlabOutput is what testdata/jlab/client.mjs reports.
type jlabOutput struct {
	ID, Language, Protocol, Answer string
	Types                          []string
	InputCount, ReplyCount         int
	PNG                            struct {
		Length            int
		Prefix, Signature string
	}
	Error                 struct{ Status, Ename, Iopub string }
	Prompt, InputEcho     string
	Completes, Inspects   bool
	IsComplete            string
	SecondSaw             []string
	SecondResult          string
	Interrupted           struct{ Status, Ename string }
	AfterRestart          string
	Listed, AfterShutdown bool
	Thrown                string
}

// TestJupyterLabServices: JupyterLab's own client library,
// @jupyterlab/services from npm, in Node: KernelManager.startNew,
// requestExecute and the iopub messages, stdin, completion, a second
// connection, interrupt, restart, shutdown, over the v1 subprotocol.
func TestJupyterLabServices(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			var r jlabOutput
			stderr := testkit.RunNode(t, "testdata/jlab", "client.mjs", &r, g.URL, apptest.KeyA)
			fail := func(what string) { t.Fatalf("%s: %+v\nstderr: %s", what, r, stderr) }
			switch {
			case r.Thrown != "":
				fail("the client threw")
			case r.Protocol != "v1.kernel.websocket.jupyter.org":
				fail("subprotocol not negotiated")
			case r.Language != "python" || r.Answer != "42" || r.InputCount != r.ReplyCount || r.ReplyCount < 2:
				fail("x + 1")
			case strings.Join(r.Types, ",") != "status,execute_input,execute_result,status":
				fail("iopub messages of x + 1")
			case r.PNG.Signature != "89504e470d0a1a0a" || r.PNG.Length < 1000:
				fail("matplotlib PNG")
			case r.Error.Status != "error" || r.Error.Ename != "ZeroDivisionError" || r.Error.Iopub != "ZeroDivisionError":
				fail("1/0")
			case r.Prompt != "who? " || r.InputEcho != "hi ada\n":
				fail("input()")
			case !r.Completes || !r.Inspects || r.IsComplete != "incomplete":
				fail("complete, inspect, is_complete")
			case strings.Join(r.SecondSaw, ",") != "status,execute_input,execute_result,status" || r.SecondResult != "82":
				fail("second connection")
			case r.Interrupted.Status != "error" || r.Interrupted.Ename != "KeyboardInterrupt":
				fail("interrupt")
			case r.AfterRestart != "NameError":
				fail("restart")
			case !r.Listed || !r.AfterShutdown:
				fail("list, shutdown")
			}
			if _, err := g.Client(t, apptest.KeyA).GetSession(context.Background(), strings.ReplaceAll(r.ID, "-", "")); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("session after the client's shutdown: %v", err)
			}
		})
	}
}

// TestReadmeJupyterLabSnippet runs the @jupyterlab/services example of
// docs/clients.md in Node against a real gateway.
func TestReadmeJupyterLabSnippet(t *testing.T) {
	doc, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Use from JupyterLab / Notebook\n")
	_, code, ok := strings.Cut(section, "```js\n")
	if code, _, _ = strings.Cut(code, "```"); !ok || !strings.Contains(code, "@jupyterlab/services") {
		t.Fatal("docs/clients.md has no @jupyterlab/services example")
	}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	node := testkit.NPMInstall(t, "testdata/jlab")
	code = strings.ReplaceAll(code, "http://127.0.0.1:8888", g.URL)
	code = strings.ReplaceAll(code, "ws://127.0.0.1:8888", "ws"+strings.TrimPrefix(g.URL, "http"))
	file := "readme-" + randomHex(4) + ".mjs" // beside node_modules, so that the imports resolve
	if err := os.WriteFile(filepath.Join("testdata/jlab", file), []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join("testdata/jlab", file)) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, file)
	cmd.Dir = "testdata/jlab"
	cmd.Env = append(os.Environ(), "K="+apptest.KeyA)
	out, err := cmd.CombinedOutput()
	if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "42") {
		t.Fatalf("docs/clients.md example: %v\n%s", err, out)
	}
	if list, err := g.Client(t, apptest.KeyA).ListSessions(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("sessions after the example's shutdown: %v %v", list, err)
	}
}

// jlabSessionsOutput is what testdata/jlab/sessions.mjs reports.
type jlabSessionsOutput struct {
	Logo, LogoType, LogoSignature string
	Session                       struct{ ID, Path, Name, Type, Kernel string }
	Language                      string
	Cell, OtherCell               struct{ Status, Stream, Result string }
	Widget                        struct {
		Status, CommID, After string
		Seen, Opened          []string
		Value                 *int
	}
	Renamed, FoundByPath string
	Changed              struct{ ID, Name, SessionKernel, Language string }
	OldKernelGone        bool
	Listed               []struct{ ID, Path, Kernel string }
	Kernels              []string
	AfterShutdown        struct{ Sessions, Kernels int }
	Thrown               string
}

// TestJupyterLabSessions: JupyterLab's SessionManager and KernelManager
// (@jupyterlab/services from npm, in Node) pointed straight at glassroom,
// with no jupyter_server in between: a notebook's session started, a cell
// run and its output read, an ipywidgets IntSlider's comm_open seen (before
// its display_data) and an update sent on its comm seen by the kernel
// (s.value 9), the session renamed and found by its path, its
// kernel changed from Python to Bash (the old kernel shut down), the
// sessions and kernels listed, the session shut down with its kernel.
func TestJupyterLabSessions(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			const other = "bash"
			g.NeedKernel(t, other)
			var r jlabSessionsOutput
			stderr := testkit.RunNode(t, "testdata/jlab", "sessions.mjs", &r, g.URL, apptest.KeyA, other)
			fail := func(what string) { t.Fatalf("%s: %+v\nstderr: %s", what, r, stderr) }
			switch {
			case r.Thrown != "":
				fail("the client threw")
			case r.Logo != "/kernelspecs/python3/logo-64x64.png" || r.LogoType != "image/png" || r.LogoSignature != "89504e470d0a1a0a":
				fail("the kernel spec's logo")
			case !uuidShape.MatchString(r.Session.ID) || r.Session.Path != "work/demo.ipynb" || r.Session.Name != "demo.ipynb" ||
				r.Session.Type != "notebook" || r.Session.Kernel != "python3" || r.Language != "python":
				fail("the new session")
			case r.Cell.Status != "ok" || r.Cell.Stream != "hello from glassroom\n" || r.Cell.Result != "42":
				fail("the cell")
			case r.Widget.Status != "ok" || r.Widget.CommID == "" || r.Widget.Value == nil || *r.Widget.Value != 3 ||
				!slices.Contains(r.Widget.Opened, "LayoutModel"):
				fail("the widget's comm_open")
			case len(r.Widget.Seen) == 0 || r.Widget.Seen[len(r.Widget.Seen)-1] != "display_data:"+r.Widget.CommID ||
				!slices.Contains(r.Widget.Seen, "comm_open:IntSliderModel:"+r.Widget.CommID):
				fail("the widget's comm_open before its display_data")
			case r.Widget.After != "9\n":
				fail("the client's update to the slider")
			case r.Renamed != "work/renamed.ipynb" || r.FoundByPath != r.Session.ID:
				fail("rename")
			case r.Changed.Name != other || r.Changed.ID != r.Changed.SessionKernel || r.Changed.Language != "bash" || !r.OldKernelGone:
				fail("change kernel")
			case r.OtherCell.Status != "ok" || strings.TrimSpace(r.OtherCell.Stream) != "42":
				fail("a cell on the new kernel")
			case len(r.Listed) != 1 || r.Listed[0].ID != r.Session.ID || r.Listed[0].Path != "work/renamed.ipynb" || r.Listed[0].Kernel != r.Changed.ID ||
				len(r.Kernels) != 1 || r.Kernels[0] != r.Changed.ID:
				fail("list")
			case r.AfterShutdown.Sessions != 0 || r.AfterShutdown.Kernels != 0:
				fail("shutdown")
			}
			if list, err := g.Client(t, apptest.KeyA).ListSessions(context.Background()); err != nil || len(list) != 0 {
				t.Fatalf("glassroom sessions after the client's shutdown: %v %v", list, err)
			}
		})
	}
}
