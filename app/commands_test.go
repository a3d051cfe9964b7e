package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
)

// events reads a session's WebSocket in the test's goroutine.
type events struct {
	t    *testing.T
	conn *websocket.Conn
}

func subscribe(t *testing.T, g *apptest.Gateway, sid string) *events {
	t.Helper()
	u := "ws" + strings.TrimPrefix(g.URL, "http") + "/v1/sessions/" + sid + "/ws"
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Authorization": {bearer}})
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &events{t: t, conn: conn}
}

// until reads events until ok says the wanted one came (a minute at most).
func (e *events) until(what string, ok func(api.Event) bool) []api.Event {
	e.t.Helper()
	_ = e.conn.SetReadDeadline(time.Now().Add(time.Minute))
	var seen []api.Event
	for {
		var ev api.Event
		if err := e.conn.ReadJSON(&ev); err != nil {
			e.t.Fatalf("%s: %v (seen %+v)", what, err, seen)
		}
		seen = append(seen, ev)
		if ok(ev) {
			return seen
		}
	}
}

// gatewayWithSession starts a gateway on rt and creates one session on
// it, whose id it returns.
func gatewayWithSession(t *testing.T, rt apptest.Runtime) (*apptest.Gateway, string) {
	t.Helper()
	g := apptest.Start(t, rt(t), apptest.Options{})
	var s api.Session
	if st := g.Call(t, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	return g, s.ID
}

// TestCommandsThroughTheGateway runs shell commands in a real session of
// each runtime through the REST API: a foreground command returns its
// output and exit code and streams command events; one past its timeout
// is killed (exit_code -1, timed_out) and the kernel keeps its variables;
// envs and cwd apply; a flood is cut; a background command is listed,
// fed stdin, and another is killed; unknown pids are 404.
func TestCommandsThroughTheGateway(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g, sid := gatewayWithSession(t, rt)
			base := "/v1/sessions/" + sid + "/commands"
			if e := run(t, g, sid, api.ExecuteRequest{Code: api.Ptr("x = 41 + 1\nimport os; os.makedirs('sub', exist_ok=True)")}); e.Status != "ok" {
				t.Fatalf("set x: %+v", e)
			}
			fg := func(req api.RunCommandRequest) api.Command {
				t.Helper()
				var c api.Command
				if st := g.Call(t, bearer, "POST", base, req, &c); st != http.StatusOK {
					t.Fatalf("run %q: %d %+v", req.Cmd, st, c)
				}
				return c
			}
			ws := subscribe(t, g, sid)

			c := fg(api.RunCommandRequest{Cmd: "echo out; echo err >&2; exit 3"})
			if c.Stdout != "out\n" || c.Stderr != "err\n" || c.ExitCode == nil || *c.ExitCode != 3 || c.Running || c.PID < 1 || c.DurationMS == nil {
				t.Fatalf("foreground: %+v", c)
			}
			var streamed strings.Builder
			evs := ws.until("the command's exited event", func(ev api.Event) bool {
				if ev.Type == api.EventCommand && ev.PID == c.PID && ev.Name != "" {
					streamed.WriteString(ev.Name + ":" + ev.Text)
				}
				return ev.Type == api.EventCommand && ev.PID == c.PID && ev.State == "exited"
			})
			if last := evs[len(evs)-1]; last.ExitCode == nil || *last.ExitCode != 3 {
				t.Fatalf("exited event: %+v", last)
			}
			if got := streamed.String(); !strings.Contains(got, "stdout:out\n") || !strings.Contains(got, "stderr:err\n") {
				t.Fatalf("streamed %q", got)
			}

			c = fg(api.RunCommandRequest{Cmd: "sleep 1000", TimeoutS: api.Ptr(2.0)})
			if !c.TimedOut || c.ExitCode == nil || *c.ExitCode != -1 {
				t.Fatalf("timed out: %+v", c)
			}
			if e := run(t, g, sid, api.ExecuteRequest{Code: api.Ptr("print(x)")}); strings.TrimSpace(e.Stdout) != "42" {
				t.Fatalf("x after a command's timeout: %+v", e)
			}

			c = fg(api.RunCommandRequest{Cmd: "echo $GREETING from $(pwd); cat", Cwd: "sub", Envs: map[string]string{"GREETING": "hello"}, Stdin: "piped"})
			if c.Stdout != "hello from /home/user/sub\npiped" || *c.ExitCode != 0 {
				t.Fatalf("envs, cwd, stdin: %+v", c)
			}
			c = fg(api.RunCommandRequest{Cmd: "head -c 3000000 /dev/zero | tr '\\0' z"})
			if !c.Truncated || len(c.Stdout) > 1<<20 || *c.ExitCode != 0 {
				t.Fatalf("a 3 MB flood: truncated=%v, %d bytes kept", c.Truncated, len(c.Stdout))
			}
			if st := g.Call(t, bearer, "POST", base, api.RunCommandRequest{Cmd: "true", Envs: map[string]string{"LD_PRELOAD": "x"}}, nil); st != http.StatusBadRequest {
				t.Fatalf("a refused env: %d", st)
			}

			// Background: read x; echo got $x.
			var started api.CommandStarted
			if st := g.Call(t, bearer, "POST", base, api.RunCommandRequest{Cmd: "read a; echo got $a", Background: true}, &started); st != http.StatusCreated || started.PID < 1 {
				t.Fatalf("background: %d %+v", st, started)
			}
			var list struct{ Commands []api.CommandInfo }
			g.Call(t, bearer, "GET", base, nil, &list)
			found := false
			for _, ci := range list.Commands {
				if ci.PID == started.PID {
					found = ci.Running && ci.Cmd == "read a; echo got $a"
				}
			}
			if !found {
				t.Fatalf("the running command is not listed as running: %+v", list.Commands)
			}
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(started.PID)+"/stdin", api.CommandStdinRequest{Data: "there\n"}, nil); st != http.StatusNoContent {
				t.Fatalf("stdin: %d", st)
			}
			ws.until("the background command's exit", func(ev api.Event) bool {
				return ev.Type == api.EventCommand && ev.PID == started.PID && ev.State == "exited"
			})
			g.Call(t, bearer, "GET", base+"/"+strconv.Itoa(started.PID), nil, &c)
			if c.Running || c.Stdout != "got there\n" || *c.ExitCode != 0 {
				t.Fatalf("background after stdin: %+v", c)
			}
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(started.PID)+"/stdin", api.CommandStdinRequest{Data: "late"}, nil); st != http.StatusConflict {
				t.Fatalf("stdin after the end: %d", st)
			}

			// Background, killed.
			g.Call(t, bearer, "POST", base, api.RunCommandRequest{Cmd: "echo sleeping; sleep 1000", Background: true}, &started)
			ws.until("the sleeper's output", func(ev api.Event) bool {
				return ev.Type == api.EventCommand && ev.PID == started.PID && ev.Text == "sleeping\n"
			})
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(started.PID)+"/kill", nil, nil); st != http.StatusNoContent {
				t.Fatalf("kill: %d", st)
			}
			ws.until("the killed command's exit", func(ev api.Event) bool {
				return ev.Type == api.EventCommand && ev.PID == started.PID && ev.State == "exited"
			})
			g.Call(t, bearer, "GET", base+"/"+strconv.Itoa(started.PID), nil, &c)
			if c.Running || c.ExitCode == nil || *c.ExitCode == 0 {
				t.Fatalf("killed: %+v", c)
			}
			if e := run(t, g, sid, api.ExecuteRequest{Code: api.Ptr("print(x)")}); strings.TrimSpace(e.Stdout) != "42" {
				t.Fatalf("x after a kill: %+v", e)
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			for _, p := range []string{"/999", "/0", "/abc"} {
				if st := g.Call(t, bearer, "GET", base+p, nil, &body); st != http.StatusNotFound || body.Error.Code != "command_not_found" {
					t.Fatalf("GET %s: %d %+v", p, st, body)
				}
			}
			if st := g.Call(t, bearer, "POST", base+"/999/kill", nil, nil); st != http.StatusNotFound {
				t.Fatalf("kill 999: %d", st)
			}
		})
	}
}

// TestTerminalThroughTheGateway opens the terminal WebSocket of a real
// session (authenticated by ?token=, as a browser does): a real PTY,
// input echo, python3, ^C, resize, and the exit frame.
// TestPTYCommandsThroughTheGateway runs E2B-style PTYs as background
// commands: an interactive bash on a pseudo-terminal of the asked size,
// its keys sent as stdin, its size changed while it runs, its output on
// the command's events, and kill; resizing a command without a PTY, or
// to a size out of range, is a 400.
func TestPTYCommandsThroughTheGateway(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g, sid := gatewayWithSession(t, rt)
			base := "/v1/sessions/" + sid + "/commands"
			ws := subscribe(t, g, sid)
			start := func(req api.RunCommandRequest) int {
				t.Helper()
				var started api.CommandStarted
				if st := g.Call(t, bearer, "POST", base, req, &started); st != http.StatusCreated {
					t.Fatalf("start %+v: %d", req, st)
				}
				return started.PID
			}
			stdin := func(pid int, keys string) {
				t.Helper()
				if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(pid)+"/stdin", api.CommandStdinRequest{Data: keys}, nil); st != http.StatusNoContent {
					t.Fatalf("stdin %q: %d", keys, st)
				}
			}
			var out strings.Builder // the output of the PTY being read
			upTo := func(pid int, what string) {
				t.Helper()
				ws.until(what, func(ev api.Event) bool {
					if ev.Type == api.EventCommand && ev.PID == pid && ev.Name != "" {
						out.WriteString(ev.Text)
					}
					return strings.Contains(out.String(), what)
				})
			}
			output := func(pid int) (string, int) {
				t.Helper()
				evs := ws.until("the PTY's exit", func(ev api.Event) bool {
					if ev.Type == api.EventCommand && ev.PID == pid && ev.Name != "" {
						out.WriteString(ev.Text)
					}
					return ev.Type == api.EventCommand && ev.PID == pid && ev.State == "exited"
				})
				defer out.Reset()
				return out.String(), *evs[len(evs)-1].ExitCode
			}

			pid := start(api.RunCommandRequest{Background: true, PTY: &api.TerminalSize{Cols: 80, Rows: 24}, Envs: map[string]string{"ABC": "123"}})
			var info api.Command
			if g.Call(t, bearer, "GET", base+"/"+strconv.Itoa(pid), nil, &info); !info.PTY || !info.Running {
				t.Fatalf("a PTY command: %+v", info)
			}
			stdin(pid, "echo $ABC; tty; tput cols\n")
			upTo(pid, "\r\n80\r\n") // the first size, before the resize
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(pid)+"/resize", api.TerminalSize{Cols: 100, Rows: 30}, nil); st != http.StatusNoContent {
				t.Fatalf("resize: %d", st)
			}
			stdin(pid, "tput cols; exit 0\n")
			text, code := output(pid)
			if code != 0 || !strings.Contains(text, "123") || !strings.Contains(text, "/dev/pts/") || !strings.Contains(text, "\n80\r\n") || !strings.Contains(text, "\r100\r\n") {
				t.Fatalf("the PTY's output (exit %d): %q", code, text)
			}

			// Kill ends it; a pipe command has no size to change.
			pid = start(api.RunCommandRequest{Background: true, PTY: &api.TerminalSize{}})
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(pid)+"/resize", api.TerminalSize{Cols: 0, Rows: 24}, nil); st != http.StatusBadRequest {
				t.Fatalf("resize to 0 columns: %d", st)
			}
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(pid)+"/kill", nil, nil); st != http.StatusNoContent {
				t.Fatalf("kill: %d", st)
			}
			if _, code := output(pid); code == 0 {
				t.Fatal("a killed PTY exited 0")
			}
			pipe := start(api.RunCommandRequest{Cmd: "sleep 60", Background: true})
			if st := g.Call(t, bearer, "POST", base+"/"+strconv.Itoa(pipe)+"/resize", api.TerminalSize{Cols: 80, Rows: 24}, nil); st != http.StatusBadRequest {
				t.Fatalf("resize of a command without a PTY: %d", st)
			}
			if st := g.Call(t, bearer, "POST", base, api.RunCommandRequest{Background: true}, nil); st != http.StatusBadRequest {
				t.Fatalf("no cmd and no pty: %d", st)
			}
		})
	}
}

func TestTerminalThroughTheGateway(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			var s api.Session
			if st := g.Call(t, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
				t.Fatalf("create: %d", st)
			}
			u := "ws" + strings.TrimPrefix(g.URL, "http") + "/v1/sessions/" + s.ID + "/terminal?cols=100&rows=30&token=" + url.QueryEscape(apptest.KeyA)
			if _, resp, err := websocket.DefaultDialer.Dial(strings.Replace(u, apptest.KeyA, "wrong-key", 1), nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a wrong token: %v %v", err, resp)
			}
			conn, _, err := websocket.DefaultDialer.Dial(u, nil)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.Close()
			term := &wsTerminal{t: t, conn: conn}
			term.send("tty; stty size\n")
			term.expect("/dev/pts/", "tty")
			term.expect("30 100", "stty size")
			term.send("python3 -c 'print(6*7)'\n")
			term.expect("print(6*7)", "the echo of the input")
			term.expect("42", "python3's answer")
			term.send("sh -c 'echo rea\"\"dy; exec sleep 1000'\n")
			term.expect("ready", "the output before sleep")
			term.send("\x03")
			term.send("echo interrupted-$((40+2))\n")
			term.expect("interrupted-42", "a prompt after ^C (sleep 1000 interrupted)")
			if err := conn.WriteJSON(api.TerminalControl{Type: "resize", Cols: 120, Rows: 40}); err != nil {
				t.Fatal(err)
			}
			term.send("stty size\n")
			term.expect("40 120", "stty size after a resize")
			term.send("exit 5\n")
			if code := term.exit(); code != 5 {
				t.Fatalf("exit code %d", code)
			}
		})
	}
}

type wsTerminal struct {
	t    *testing.T
	conn *websocket.Conn
	seen strings.Builder
	from int
}

func (w *wsTerminal) send(s string) {
	w.t.Helper()
	if err := w.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		w.t.Fatalf("send %q: %v", s, err)
	}
}

func (w *wsTerminal) expect(want, what string) {
	w.t.Helper()
	_ = w.conn.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		if i := strings.Index(w.seen.String()[w.from:], want); i >= 0 {
			w.from += i + len(want)
			return
		}
		kind, data, err := w.conn.ReadMessage()
		if err != nil {
			w.t.Fatalf("%s: %v; the terminal showed %q", what, err, w.seen.String())
		}
		if kind != websocket.BinaryMessage {
			w.t.Fatalf("%s: a text frame %s; the terminal showed %q", what, data, w.seen.String())
		}
		w.seen.Write(data)
	}
}

// exit reads to the exit frame and returns its code.
func (w *wsTerminal) exit() int {
	w.t.Helper()
	_ = w.conn.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		kind, data, err := w.conn.ReadMessage()
		if err != nil {
			w.t.Fatalf("before the exit frame: %v", err)
		}
		if kind == websocket.TextMessage {
			var ctl api.TerminalControl
			if err := json.Unmarshal(data, &ctl); err != nil || ctl.Type != "exit" || ctl.ExitCode == nil {
				w.t.Fatalf("exit frame %s", data)
			}
			return *ctl.ExitCode
		}
	}
}

// TestTerminalWhoseClientLeft: clients that paste more than a shell reads
// (it runs sleep) and then vanish must not keep their terminals: the
// reader stayed blocked in the shell's input, its handler never closed
// the terminal, the session's terminal slots stayed taken (the fifth
// open got 429 for ever) and a graceful shutdown never finished. Here
// every slot is taken that way, the clients drop their connections, and
// a new terminal must open once the gateway has seen them go.
func TestTerminalWhoseClientLeft(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Gateway: gateway.Config{WSPingInterval: 500 * time.Millisecond}})
	var s api.Session
	if st := g.Call(t, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	u := "ws" + strings.TrimPrefix(g.URL, "http") + "/v1/sessions/" + s.ID + "/terminal?token=" + url.QueryEscape(apptest.KeyA)
	chunk := make([]byte, 60<<10)
	for i := range chunk {
		chunk[i] = 'a' + byte(i%26)
	}
	for i := range sessions.MaxTerminals {
		conn, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatalf("terminal %d: %v", i, err)
		}
		term := &wsTerminal{t: t, conn: conn}
		term.send("stty -icanon; sh -c 'echo rea\"\"dy; exec sleep 1000'\n")
		term.expect("ready", "the output before sleep")
		// Input until the gateway stops taking it (the shell reads none):
		// past the pseudo-terminal's, the launcher's and the sockets'
		// buffers.
		for sent := 0; sent < 8<<20; sent += len(chunk) {
			_ = conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if conn.WriteMessage(websocket.BinaryMessage, chunk) != nil {
				break
			}
		}
		conn.UnderlyingConn().Close() // gone, without a close frame
	}
	testkit.Eventually(t, 2*time.Minute, func() bool {
		conn, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}, "a terminal to open once the clients that left have lost theirs")
}

// TestKeptOutputLeavesOthersTheirs: one tenant whose commands keep more
// output than the gateway's memory budget holds neither starves another
// tenant's execution (whose output comes back whole) nor holds more than
// its kept share; its oldest outputs are evicted and read truncated.
func TestKeptOutputLeavesOthersTheirs(t *testing.T) {
	const budget = 16 << 20
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Sessions: sessions.Config{
		MemoryBudget: budget, MaxSessions: 2, MaxSessionsPerTenant: 1, BacklogBytes: 1 << 20}})
	var a, b api.Session
	if st := g.Call(t, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &a); st != http.StatusCreated {
		t.Fatalf("create a: %d", st)
	}
	bearerB := "Bearer " + apptest.KeyB
	if st := g.Call(t, bearerB, "POST", "/v1/sessions", api.CreateSessionRequest{}, &b); st != http.StatusCreated {
		t.Fatalf("create b: %d", st)
	}
	var pids []int
	for range 20 { // 20 MB kept, more than the whole budget
		var c api.Command
		if st := g.Call(t, bearer, "POST", "/v1/sessions/"+a.ID+"/commands", api.RunCommandRequest{Cmd: "head -c 1000000 /dev/zero | tr '\\0' a"}, &c); st != http.StatusOK || len(c.Stdout) != 1000000 {
			t.Fatalf("a command: %d, %d bytes, truncated %v", st, len(c.Stdout), c.Truncated)
		}
		pids = append(pids, c.PID)
	}
	share := int64(budget) / 2 / 4 // the tenant's share, of which kept output takes a quarter
	if kept := g.Manager.Budget().Kept(); kept > share {
		t.Fatalf("tenant a keeps %d bytes of command output; its share is %d", kept, share)
	}
	var e api.Execution
	if st := g.Call(t, bearerB, "POST", "/v1/sessions/"+b.ID+"/execute", api.ExecuteRequest{Code: api.Ptr("print('hello')")}, &e); st != http.StatusOK || e.Stdout != "hello\n" || e.Truncated {
		t.Fatalf("another tenant's execution: %d, stdout %q, truncated %v", st, e.Stdout, e.Truncated)
	}
	var first, last api.Command
	g.Call(t, bearer, "GET", "/v1/sessions/"+a.ID+"/commands/"+strconv.Itoa(pids[0]), nil, &first)
	g.Call(t, bearer, "GET", "/v1/sessions/"+a.ID+"/commands/"+strconv.Itoa(pids[len(pids)-1]), nil, &last)
	if first.Stdout != "" || !first.Truncated || len(last.Stdout) != 1000000 || last.Truncated {
		t.Fatalf("kept outputs: the oldest %d bytes (truncated %v), the newest %d (truncated %v)",
			len(first.Stdout), first.Truncated, len(last.Stdout), last.Truncated)
	}
}
