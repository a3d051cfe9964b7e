package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestAgainstGateway drives every client call against a real gateway on
// each runtime.
func TestAgainstGateway(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{Sessions: sessions.Config{InterruptGrace: time.Second}})
			c := g.Client(t, apptest.KeyA)
			ctx := ctxT(t, 5*time.Minute)

			h, err := c.Health(ctx)
			if err != nil || h.Status != "ok" || h.Runtime != name {
				t.Fatalf("health: %+v %v", h, err)
			}
			s, err := c.CreateSession(ctx, client.CreateOptions{
				Env: map[string]string{"GREETING": "hej"}, IdleTimeout: 90 * time.Second, Limits: client.Limits{MemoryMB: 1024},
			})
			if err != nil {
				t.Fatal(err)
			}
			if s.State != "idle" || s.Runtime != name || s.IdleTimeoutS != 90 || s.Limits.MemoryMB != 1024 || !s.ExpiresAt.After(s.CreatedAt) {
				t.Fatalf("created %+v", s)
			}
			t.Run("list and get", func(t *testing.T) {
				list, err := c.ListSessions(ctx)
				if err != nil || len(list) != 1 || list[0].ID != s.ID {
					t.Fatalf("list: %+v %v", list, err)
				}
				got, err := c.GetSession(ctx, s.ID)
				if err != nil || got.ID != s.ID {
					t.Fatalf("get: %+v %v", got, err)
				}
			})
			t.Run("execute keeps state and reports results", func(t *testing.T) {
				if _, err := c.Execute(ctx, s.ID, "import os\nx = 41", client.ExecuteOptions{}); err != nil {
					t.Fatal(err)
				}
				x, err := c.Execute(ctx, s.ID, "print(os.environ['GREETING'])\nx + 1", client.ExecuteOptions{ID: "mine"})
				if err != nil {
					t.Fatal(err)
				}
				if x.Status != client.StatusOK || x.ID != "mine" || x.Stdout != "hej\n" || x.Result.Text("text/plain") != "42" || x.ExecutionCount != 2 {
					t.Fatalf("x + 1: %+v (result %s)", x, x.Result)
				}
				if len(x.Outputs) != 2 || x.Outputs[0].Type != client.EventStream || x.Outputs[1].Type != client.EventResult {
					t.Fatalf("outputs: %+v", x.Outputs)
				}
			})
			t.Run("errors and images", func(t *testing.T) {
				x, err := c.Execute(ctx, s.ID, "1/0", client.ExecuteOptions{})
				if err != nil || x.Status != client.StatusError || x.Error == nil || x.Error.Name != "ZeroDivisionError" || len(x.Error.Traceback) == 0 || x.Result != nil {
					t.Fatalf("1/0: %+v %v", x, err)
				}
				x, err = c.Execute(ctx, s.ID, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()", client.ExecuteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var png []byte
				for _, o := range x.Outputs {
					if o.Type == client.EventDisplay && o.Data.Has("image/png") {
						png, err = o.Data.Binary("image/png")
					}
				}
				if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
					t.Fatalf("no PNG: %v %+v", err, x)
				}
			})
			t.Run("timeout is a status", func(t *testing.T) {
				x, err := c.Execute(ctx, s.ID, "import time\ntime.sleep(30)", client.ExecuteOptions{Timeout: 500 * time.Millisecond})
				if err != nil || x.Status != client.StatusTimeout {
					t.Fatalf("timeout: %+v %v", x, err)
				}
			})
			t.Run("envs and cwd apply to one execution, over REST and the WebSocket", func(t *testing.T) {
				if _, err := c.Execute(ctx, s.ID, "import os; os.makedirs('sub', exist_ok=True)", client.ExecuteOptions{}); err != nil {
					t.Fatal(err)
				}
				show := "import os; print(os.environ.get('GREETING'), os.environ.get('ONCE'), os.getcwd())"
				envs := map[string]string{"GREETING": "once", "ONCE": "it's $(here)"}
				x, err := c.Execute(ctx, s.ID, show, client.ExecuteOptions{Envs: envs, Cwd: "sub"})
				if err != nil || x.Stdout != "once it's $(here) /home/user/sub\n" {
					t.Fatalf("with settings over REST: %+v %v", x, err)
				}
				r, err := c.Run(ctx, s.ID, show, client.RunOptions{Envs: envs, Cwd: "/workspace/sub"})
				if err != nil || r.Stdout != "once it's $(here) /home/user/sub\n" {
					t.Fatalf("with settings over the WebSocket: %+v %v", r, err)
				}
				x, err = c.Execute(ctx, s.ID, show, client.ExecuteOptions{})
				if err != nil || x.Stdout != "hej None /home/user\n" {
					t.Fatalf("after: %+v %v", x, err)
				}
				if _, err := c.Execute(ctx, s.ID, show, client.ExecuteOptions{Envs: map[string]string{"LD_PRELOAD": "x"}}); !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("a reserved name: %v, want ErrBadRequest", err)
				}
				if _, err := c.Run(ctx, s.ID, show, client.RunOptions{Envs: map[string]string{"LD_PRELOAD": "x"}}); err == nil || !strings.Contains(err.Error(), "LD_PRELOAD") {
					t.Fatalf("a reserved name over the WebSocket: %v", err)
				}
			})
			t.Run("user expressions and payloads, over REST and the WebSocket", func(t *testing.T) { expressionFlow(t, ctx, c, s.ID) })
			t.Run("run streams events, answers input, reports files", func(t *testing.T) {
				var mu sync.Mutex
				var seen []client.EventType
				var prompts []string
				x, err := c.Run(ctx, s.ID, "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)\n"+
					"name = input('who? ')\nopen('out.txt', 'w').write(name)\nname.upper()", client.RunOptions{
					OnEvent: func(ev client.Event) { mu.Lock(); seen = append(seen, ev.Type); mu.Unlock() },
					Input: func(_ context.Context, prompt string, password bool) (string, error) {
						prompts = append(prompts, prompt)
						return "ada", nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				if x.Status != client.StatusOK || x.Stdout != "0\n1\n2\n" || x.Result.Text("text/plain") != "'ADA'" {
					t.Fatalf("run: %+v", x)
				}
				if len(prompts) != 1 || prompts[0] != "who? " {
					t.Fatalf("prompts %q", prompts)
				}
				if len(x.Files) != 1 || x.Files[0].Path != "out.txt" || x.Files[0].Change != "created" || x.Files[0].Size != 3 {
					t.Fatalf("files %+v", x.Files)
				}
				mu.Lock()
				defer mu.Unlock()
				if seen[0] != client.EventStarted || seen[len(seen)-1] != client.EventDone || countOf(seen, client.EventStream) < 3 {
					t.Fatalf("events %v", seen)
				}
			})
			t.Run("cancelled run interrupts its code", func(t *testing.T) {
				cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := c.Run(cctx, s.ID, "import time\ntime.sleep(60)", client.RunOptions{})
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("want deadline exceeded, got %v", err)
				}
				// The interrupt freed the kernel: this does not wait a minute.
				x, err := c.Execute(ctx, s.ID, "x", client.ExecuteOptions{Timeout: 20 * time.Second})
				if err != nil || x.Status != client.StatusOK || time.Since(start) > 20*time.Second {
					t.Fatalf("after cancel: %+v %v", x, err)
				}
			})
			t.Run("conn: interrupt, rejection, resume", func(t *testing.T) { connFlow(t, ctx, c, s.ID) })
			t.Run("files", func(t *testing.T) { fileFlow(t, ctx, c, s.ID) })
			t.Run("tenants and bad keys", func(t *testing.T) {
				other := g.Client(t, apptest.KeyB)
				if _, err := other.GetSession(ctx, s.ID); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("other tenant: %v", err)
				}
				if _, err := other.Connect(ctx, s.ID, client.ConnectOptions{}); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("other tenant ws: %v", err)
				}
				bad, _ := client.New(client.Config{BaseURL: g.URL, APIKey: "wrong-key-0123456789"})
				_, err := bad.ListSessions(ctx)
				var ae *client.APIError
				if !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &ae) || ae.Code != "unauthorized" {
					t.Fatalf("bad key: %v", err)
				}
				if _, err := c.Execute(ctx, s.ID, "1", client.ExecuteOptions{Timeout: -time.Second}); !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("negative timeout: %v", err)
				}
			})
			t.Run("restart keeps id and files, drops variables", func(t *testing.T) {
				if err := c.Restart(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
				x, err := c.Execute(ctx, s.ID, "x", client.ExecuteOptions{})
				if err != nil || x.Error == nil || x.Error.Name != "NameError" {
					t.Fatalf("x survived: %+v %v", x, err)
				}
				f, err := c.ReadFile(ctx, s.ID, "out.txt")
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			})
			t.Run("delete", func(t *testing.T) {
				if err := c.DeleteSession(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Execute(ctx, s.ID, "1", client.ExecuteOptions{}); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("execute after delete: %v", err)
				}
			})
		})
	}
}

// expressionFlow runs user expressions, a help page (len?), %load and
// exit() both ways: Execute (REST) and Run (the WebSocket).
func expressionFlow(t *testing.T, ctx context.Context, c *client.Client, id string) {
	if _, err := c.WriteFile(ctx, id, "loadme.py", strings.NewReader("print('loaded')\n"), -1); err != nil {
		t.Fatal(err)
	}
	ways := map[string]func(sid, code string, ue map[string]string) (*client.Execution, error){
		"REST": func(sid, code string, ue map[string]string) (*client.Execution, error) {
			return c.Execute(ctx, sid, code, client.ExecuteOptions{UserExpressions: ue})
		},
		"WebSocket": func(sid, code string, ue map[string]string) (*client.Execution, error) {
			return c.Run(ctx, sid, code, client.RunOptions{UserExpressions: ue})
		},
	}
	types := func(x *client.Execution) (out []client.EventType) {
		if x == nil {
			return nil
		}
		for _, o := range x.Outputs {
			out = append(out, o.Type)
		}
		return out
	}
	for way, run := range ways {
		t.Run(way, func(t *testing.T) {
			x, err := run(id, "ue = 6\nprint('ran')", map[string]string{"twice": "ue * 2", "bad": "1/0"})
			if err != nil || x.Status != client.StatusOK || x.Stdout != "ran\n" {
				t.Fatalf("with user expressions: %+v %v", x, err)
			}
			ues, err := x.DecodeUserExpressions()
			if err != nil || len(ues) != 2 {
				t.Fatalf("user expressions %s: %+v %v", x.UserExpressions, ues, err)
			}
			if ok := ues["twice"]; ok.Status != "ok" || ok.Text() != "12" || ok.EName != "" {
				t.Fatalf("twice: %+v", ok)
			}
			if bad := ues["bad"]; bad.Status != "error" || bad.EName != "ZeroDivisionError" || bad.EValue != "division by zero" ||
				len(bad.Traceback) == 0 || bad.Data != nil {
				t.Fatalf("bad: %+v", bad)
			}
			// The Python kernel evaluates them only after code that succeeded.
			if x, err = run(id, "raise KeyError('k')", map[string]string{"v": "ue"}); err != nil {
				t.Fatal(err)
			}
			if ues, err := x.DecodeUserExpressions(); x.Error == nil || x.Error.Name != "KeyError" || ues != nil || err != nil {
				t.Fatalf("after an error: %+v %v", x, err)
			}
			if _, err := run(id, "1", map[string]string{"": "1"}); !errors.Is(err, client.ErrBadRequest) {
				t.Fatalf("a nameless expression: %v, want ErrBadRequest", err)
			}
			x, err = run(id, "len?", nil)
			if err != nil || len(x.Outputs) != 1 || x.Outputs[0].Type != client.EventPage ||
				!strings.Contains(x.Outputs[0].Data.Text("text/plain"), "Return the number of items") || x.UserExpressions != nil {
				t.Fatalf("len?: %v %+v %v", types(x), x, err)
			}
			x, err = run(id, "%load loadme.py", nil)
			if err != nil || len(x.Outputs) != 1 || x.Outputs[0].Type != client.EventSetNextInput ||
				x.Outputs[0].Text != "# %load loadme.py\nprint('loaded')\n" || !x.Outputs[0].Replace {
				t.Fatalf("%%load: %v %+v %v", types(x), x, err)
			}
		})
	}
	// exit() asks the front end to end the kernel: in a session of its own.
	s, err := c.CreateSession(ctx, client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeleteSession(context.Background(), s.ID)
	for way, run := range ways {
		if x, err := run(s.ID, "exit(keep_kernel=True)", nil); err != nil || len(x.Outputs) != 1 || x.Outputs[0].Type != client.EventAskExit || !x.Outputs[0].KeepKernel {
			t.Fatalf("exit(keep_kernel=True) over %s: %v %+v %v", way, types(x), x, err)
		}
		if x, err := run(s.ID, "exit()", nil); err != nil || len(x.Outputs) != 1 || x.Outputs[0].Type != client.EventAskExit || x.Outputs[0].KeepKernel {
			t.Fatalf("exit() over %s: %v %+v %v", way, types(x), x, err)
		}
	}
}

func countOf(evs []client.EventType, typ client.EventType) int {
	n := 0
	for _, e := range evs {
		if e == typ {
			n++
		}
	}
	return n
}

// until reads events until pred matches and returns them all.
func until(t *testing.T, ctx context.Context, k *client.Conn, pred func(client.Event) bool) []client.Event {
	t.Helper()
	var got []client.Event
	for {
		ev, err := k.Next(ctx)
		if err != nil {
			t.Fatalf("after %+v: %v", got, err)
		}
		got = append(got, ev)
		if pred(ev) {
			return got
		}
	}
}

func connFlow(t *testing.T, ctx context.Context, c *client.Client, id string) {
	k, err := c.Connect(ctx, id, client.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	first, err := k.Next(ctx)
	if err != nil || first.Type != client.EventKernel || first.State != "idle" {
		t.Fatalf("first frame %+v %v", first, err)
	}
	if err := k.Execute(ctx, client.ExecuteRequest{ID: "sleepy", Code: "import time\nprint('go', flush=True)\ntime.sleep(60)"}); err != nil {
		t.Fatal(err)
	}
	if err := k.Execute(ctx, client.ExecuteRequest{ID: "next", Code: "print('after')"}); err != nil {
		t.Fatal(err)
	}
	evs := until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventStream && ev.ID == "sleepy" })
	lastSeq := evs[len(evs)-1].Seq
	if err := k.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	evs = until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventDone && ev.ID == "sleepy" })
	if d := evs[len(evs)-1]; d.Status != client.StatusInterrupted {
		t.Fatalf("interrupted: %+v", d)
	}
	until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventDone && ev.ID == "next" })
	if err := k.Execute(ctx, client.ExecuteRequest{ID: "", Code: "1"}); err == nil {
		t.Fatal("execute without id accepted")
	}
	// An unknown frame type comes back as a rejection.
	if err := k.Resume(ctx, -1); err != nil {
		t.Fatal(err)
	}
	evs = until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventRejected })
	if r := evs[len(evs)-1]; r.Code != "bad_frame" {
		t.Fatalf("rejection %+v", r)
	}
	// A second connection resumes after the stream event and sees the rest.
	k2, err := c.Connect(ctx, id, client.ConnectOptions{Since: &lastSeq})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	evs = until(t, ctx, k2, func(ev client.Event) bool { return ev.Type == client.EventDone && ev.ID == "next" })
	var out strings.Builder
	for _, ev := range evs {
		if ev.Type == client.EventStream {
			out.WriteString(ev.Text)
		}
	}
	if !strings.Contains(out.String(), "after") || strings.Contains(out.String(), "go") {
		t.Fatalf("replay after %d: %q (%+v)", lastSeq, out.String(), evs)
	}
	k2.Close()
	if _, err := k2.Next(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("next after close: %v", err)
	}
	if err := k2.Interrupt(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func fileFlow(t *testing.T, ctx context.Context, c *client.Client, id string) {
	const name = "data dir/ünï cödé #1.csv"
	content := "a,b\n1,2\n"
	fi, err := c.WriteFile(ctx, id, name, strings.NewReader(content), int64(len(content)))
	if err != nil || fi.Path != name || fi.Size != int64(len(content)) {
		t.Fatalf("write: %+v %v", fi, err)
	}
	if _, err := c.WriteFile(ctx, id, "empty.txt", strings.NewReader(""), 0); err != nil {
		t.Fatal(err)
	}
	// Unknown size: streamed with chunked encoding.
	if _, err := c.WriteFile(ctx, id, "streamed.bin", io.LimitReader(zeros{}, 3<<20), -1); err != nil {
		t.Fatal(err)
	}
	x, err := c.Execute(ctx, id, "import pandas as pd\nprint(pd.read_csv('"+name+"').b.sum())", client.ExecuteOptions{})
	if err != nil || strings.TrimSpace(x.Stdout) != "2" {
		t.Fatalf("kernel reads upload: %+v %v", x, err)
	}
	f, err := c.ReadFile(ctx, id, name)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if string(got) != content || f.Size != int64(len(content)) || f.ModTime.IsZero() {
		t.Fatalf("read back %q size %d", got, f.Size)
	}
	l, err := c.ListFiles(ctx, id, "data dir")
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Path != name || l.Entries[0].Type != "file" {
		t.Fatalf("list: %+v %v", l, err)
	}
	root, err := c.ListFiles(ctx, id, "")
	if err != nil || len(root.Entries) < 3 {
		t.Fatalf("list root: %+v %v", root, err)
	}
	if err := c.RemoveFile(ctx, id, "data dir"); err != nil {
		t.Fatal(err)
	}
	_, err = c.ReadFile(ctx, id, name)
	var ae *client.APIError
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &ae) || ae.Code != "file_not_found" {
		t.Fatalf("read removed: %v", err)
	}
	if _, err := c.WriteFile(ctx, id, "../escape", strings.NewReader("x"), 1); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("escape: %v", err)
	}
	// The sandbox's own files, read-only: /proc/self is the reader's in
	// the sandbox, not the gateway's.
	if b, err := c.ReadSandboxFile(ctx, id, "/proc/self/status"); err != nil || !strings.Contains(string(b), "\nUid:\t") || strings.Contains(string(b), "\nUid:\t0\t") {
		t.Fatalf("/proc/self/status: %v %.300q", err, b)
	}
	if b, err := c.ReadSandboxFile(ctx, id, "/home/user/empty.txt"); err != nil || len(b) != 0 {
		t.Fatalf("a workspace file by its sandbox path: %v %q", err, b)
	}
	if e, err := c.StatSandboxFile(ctx, id, "/etc//passwd"); err != nil || e.Path != "/etc/passwd" || e.Type != "file" {
		t.Fatalf("stat /etc/passwd: %+v %v", e, err)
	}
	if _, err := c.ReadSandboxFile(ctx, id, "/no/such/file"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a missing sandbox file: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestSessionExtras covers PATCH (idle timeout), mkdir, HEAD (exists),
// complete and inspect, over REST and the WebSocket.
func TestSessionExtras(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	c := g.Client(t, apptest.KeyA)
	ctx := ctxT(t, 2*time.Minute)
	s, err := c.CreateSession(ctx, client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.SetIdleTimeout(ctx, s.ID, 45*time.Second)
	if err != nil || up.IdleTimeoutS != 45 || up.ID != s.ID {
		t.Fatalf("set idle timeout: %+v %v", up, err)
	}
	if _, err := c.SetIdleTimeout(ctx, "nope-nope-nope", time.Minute); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
	fi, err := c.MakeDir(ctx, s.ID, "a/b/c")
	if err != nil || fi.Path != "a/b/c" || fi.Type != "dir" {
		t.Fatalf("mkdir: %+v %v", fi, err)
	}
	if _, err := c.MakeDir(ctx, s.ID, "a/b/c"); err != nil {
		t.Fatalf("mkdir again: %v", err)
	}
	for p, want := range map[string]bool{"a/b/c": true, "a/b": true, "a/x": false} {
		if ok, err := c.FileExists(ctx, s.ID, p); err != nil || ok != want {
			t.Fatalf("exists %s: %v %v", p, ok, err)
		}
	}
	if _, err := c.FileExists(ctx, "nope-nope-nope", "a"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("exists in a missing session: %v", err)
	}
	if _, err := c.Execute(ctx, s.ID, "import json\nvalue_one = 1", client.ExecuteOptions{}); err != nil {
		t.Fatal(err)
	}
	comp, err := c.Complete(ctx, s.ID, "value_", 6)
	if err != nil || len(comp.Matches) != 1 || comp.Matches[0] != "value_one" || comp.CursorStart != 0 || comp.CursorEnd != 6 {
		t.Fatalf("complete: %+v %v", comp, err)
	}
	insp, err := c.Inspect(ctx, s.ID, "json.dumps", 10, 0)
	if err != nil || !insp.Found || !strings.Contains(insp.Data.Text("text/plain"), "Serialize") {
		t.Fatalf("inspect: %+v %v", insp, err)
	}
	k, err := c.Connect(ctx, s.ID, client.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	comp, err = k.Complete(ctx, "json.dum", 8)
	if err != nil || strings.Join(comp.Matches, ",") != "dump,dumps" || comp.CursorStart != 5 || len(comp.Types) != 2 || comp.Types[1].Type != "function" {
		t.Fatalf("ws complete: %+v %v", comp, err)
	}
	insp, err = k.Inspect(ctx, "len", 3, 1)
	if err != nil || !insp.Found {
		t.Fatalf("ws inspect: %+v %v", insp, err)
	}
	if _, err := k.Complete(ctx, "x", 99); err == nil {
		t.Fatal("cursor past the end accepted")
	}
	// Replies go to the asker, not into the event stream.
	if err := k.Execute(ctx, client.ExecuteRequest{ID: "after", Code: "1"}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventDone }) {
		if ev.Type == client.EventCompleteReply || ev.Type == client.EventInspectReply {
			t.Fatalf("reply leaked into events: %+v", ev)
		}
	}
}
