package mcp_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// binary is the glassroom command, built once for the stdio tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "glassroom-mcp-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "glassroom")
	build := exec.Command("go", "build", "-o", binary, "./cmd/glassroom")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building glassroom: %v\n%s", err, out)
		os.Exit(1)
	}
	goleak.VerifyTestMain(wrapped{m, dir})
}

type wrapped struct {
	m   *testing.M
	dir string
}

func (w wrapped) Run() int {
	defer os.RemoveAll(w.dir)
	return w.m.Run()
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a go-sdk client session over transport.
func connect(t *testing.T, ctx context.Context, transport sdk.Transport) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "glassroom-go-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bearer adds the API key to every request.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

func httpTransport(url, key string) *sdk.StreamableClientTransport {
	return &sdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
}

func call(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

func textOf(res *sdk.CallToolResult) string {
	var b []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b = append(b, tc.Text)
		}
	}
	return strings.Join(b, "\n")
}

func imagesOf(res *sdk.CallToolResult) []*sdk.ImageContent {
	var out []*sdk.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*sdk.ImageContent); ok {
			out = append(out, ic)
		}
	}
	return out
}

const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// flow drives every tool through a real MCP client session.
func flow(t *testing.T, ctx context.Context, cs *sdk.ClientSession) {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*sdk.Tool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = tool
	}
	for _, n := range []string{"execute_python", "upload_file", "read_file", "list_files", "edit_file", "run_command", "restart_session", "close_session"} {
		if names[n] == nil || len(names[n].Description) < 40 || names[n].InputSchema == nil {
			t.Fatalf("tool %s missing or undocumented: %+v", n, names[n])
		}
	}

	first := call(t, ctx, cs, "execute_python", map[string]any{"code": "x = 41\nprint('hi')"})
	out, _ := first.StructuredContent.(map[string]any)
	sid, _ := out["session_id"].(string)
	if first.IsError || sid == "" || out["session_created"] != true || !strings.Contains(textOf(first), sid) || !strings.Contains(textOf(first), "stdout:\nhi") {
		t.Fatalf("first call: %q %+v", textOf(first), first.StructuredContent)
	}
	second := call(t, ctx, cs, "execute_python", map[string]any{"code": "x + 1", "session_id": sid})
	if second.IsError || !strings.Contains(textOf(second), "42") || strings.Contains(textOf(second), "Started a new") {
		t.Fatalf("state did not persist: %q", textOf(second))
	}
	plot := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid,
		"code": "import matplotlib.pyplot as plt\nfor i in range(2):\n    plt.figure(); plt.plot([1, i]); plt.show()"})
	imgs := imagesOf(plot)
	if len(imgs) != 2 || imgs[0].MIMEType != "image/png" || !strings.HasPrefix(string(imgs[0].Data), "\x89PNG") {
		t.Fatalf("plot: %q %d images", textOf(plot), len(imgs))
	}
	fail := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "def f():\n    return 1/0\nf()"})
	if !fail.IsError || !strings.Contains(textOf(fail), "ZeroDivisionError") || !strings.Contains(textOf(fail), "return 1/0") || strings.Contains(textOf(fail), "\x1b") {
		t.Fatalf("error: %q", textOf(fail))
	}
	flood := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "for i in range(20000): print('line', i)\nprint('the end')"})
	if ft := textOf(flood); len([]rune(ft)) > 21000 || !strings.Contains(ft, "[output truncated: ") || !strings.Contains(ft, "the end") || !strings.Contains(ft, "line 0") {
		t.Fatalf("flood not capped (%d chars): ...%q", len(ft), ft[max(0, len(ft)-300):])
	}
	timeout := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "import time\ntime.sleep(30)", "timeout_s": 0.5})
	if !timeout.IsError || !strings.Contains(textOf(timeout), "status: timeout") {
		t.Fatalf("timeout: %q", textOf(timeout))
	}

	up := call(t, ctx, cs, "upload_file", map[string]any{"session_id": sid, "path": "in/data.csv", "content": "a,b\n1,2\n"})
	if up.IsError || !strings.Contains(textOf(up), "in/data.csv") {
		t.Fatalf("upload: %q", textOf(up))
	}
	if r := call(t, ctx, cs, "upload_file", map[string]any{"session_id": sid, "path": "tiny.png", "encoding": "base64", "content": tinyPNG}); r.IsError {
		t.Fatalf("upload png: %q", textOf(r))
	}
	sum := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "import pandas as pd\nint(pd.read_csv('in/data.csv').b.sum())"})
	if !strings.Contains(textOf(sum), "2") {
		t.Fatalf("kernel did not see the upload: %q", textOf(sum))
	}
	read := call(t, ctx, cs, "read_file", map[string]any{"session_id": sid, "path": "in/data.csv"})
	if !strings.Contains(textOf(read), "a,b\n1,2") {
		t.Fatalf("read: %q", textOf(read))
	}
	readPNG := call(t, ctx, cs, "read_file", map[string]any{"session_id": sid, "path": "tiny.png"})
	want, _ := base64.StdEncoding.DecodeString(tinyPNG)
	if imgs := imagesOf(readPNG); len(imgs) != 1 || string(imgs[0].Data) != string(want) || imgs[0].MIMEType != "image/png" {
		t.Fatalf("read png: %q %+v", textOf(readPNG), readPNG.Content)
	}
	list := call(t, ctx, cs, "list_files", map[string]any{"session_id": sid})
	if !strings.Contains(textOf(list), "in/") || !strings.Contains(textOf(list), "tiny.png") {
		t.Fatalf("list: %q", textOf(list))
	}
	editFlow(t, ctx, cs, sid)
	bad := call(t, ctx, cs, "read_file", map[string]any{"session_id": sid, "path": "../etc/passwd"})
	if !bad.IsError || !strings.Contains(textOf(bad), "invalid path") {
		t.Fatalf("escape: %q", textOf(bad))
	}
	if r := call(t, ctx, cs, "restart_session", map[string]any{"session_id": sid}); r.IsError {
		t.Fatalf("restart: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "x"}); !r.IsError || !strings.Contains(textOf(r), "NameError") {
		t.Fatalf("x survived restart: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "close_session", map[string]any{"session_id": sid}); r.IsError {
		t.Fatalf("close: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "list_files", map[string]any{"session_id": sid}); !r.IsError || !strings.Contains(textOf(r), "does not exist") {
		t.Fatalf("after close: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid}); !r.IsError {
		t.Fatalf("missing code accepted: %q", textOf(r))
	}
}

// TestGoClient runs the flow with the go-sdk's client over each transport
// against a real gateway on each runtime: in-memory (the server over a
// client.Client), streamable HTTP at the gateway's /mcp, and stdio to the
// glassroom binary (`glassroom mcp --url`).
func TestGoClient(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			ctx := ctxT(t, 5*time.Minute)
			t.Run("in-memory", func(t *testing.T) {
				srv, err := mcp.New(g.Client(t, apptest.KeyA), mcp.Config{}, zerolog.Nop())
				if err != nil {
					t.Fatal(err)
				}
				st, ct := sdk.NewInMemoryTransports()
				sctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- srv.Run(sctx, st) }()
				defer func() { cancel(); <-done }()
				flow(t, ctx, connect(t, ctx, ct))
			})
			t.Run("streamable http", func(t *testing.T) {
				flow(t, ctx, connect(t, ctx, httpTransport(g.URL, apptest.KeyA)))
			})
			t.Run("stdio", func(t *testing.T) {
				cmd := exec.Command(binary, "mcp", "--url", g.URL, "--api-key", apptest.KeyA, "--log-level", "warn")
				cmd.Stderr = os.Stderr
				flow(t, ctx, connect(t, ctx, &sdk.CommandTransport{Command: cmd}))
			})
		})
	}
}

// editFlow drives edit_file: each command, read back by the kernel, and
// the refusals a model must be able to act on.
func editFlow(t *testing.T, ctx context.Context, cs *sdk.ClientSession, sid string) {
	t.Helper()
	edit := func(args map[string]any) *sdk.CallToolResult {
		t.Helper()
		args["session_id"] = sid
		return call(t, ctx, cs, "edit_file", args)
	}
	if r := edit(map[string]any{"command": "create", "path": "src/calc.py", "file_text": "def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 1\n"}); r.IsError ||
		!strings.Contains(textOf(r), "Created src/calc.py (5 lines") {
		t.Fatalf("create: %q", textOf(r))
	}
	dup := edit(map[string]any{"command": "str_replace", "path": "src/calc.py", "old_str": "return x + 1", "new_str": "return x * 2"})
	if !dup.IsError || !strings.Contains(textOf(dup), "2 matches, at lines 2 and 5") || !strings.Contains(textOf(dup), "not changed") {
		t.Fatalf("two matches: %q", textOf(dup))
	}
	none := edit(map[string]any{"command": "str_replace", "path": "src/calc.py", "old_str": "return y", "new_str": "return 0"})
	if !none.IsError || !strings.Contains(textOf(none), "0 matches") {
		t.Fatalf("no match: %q", textOf(none))
	}
	ok := edit(map[string]any{"command": "str_replace", "path": "src/calc.py", "old_str": "def f(x):\n    return x + 1", "new_str": "def f(x):\n    return x * 2"})
	if ok.IsError || !strings.Contains(textOf(ok), "     2\t    return x * 2") {
		t.Fatalf("str_replace: %q", textOf(ok))
	}
	if r := edit(map[string]any{"command": "insert", "path": "src/calc.py", "insert_line": 0, "new_str": "import math"}); r.IsError || !strings.Contains(textOf(r), "     1\timport math") {
		t.Fatalf("insert: %q", textOf(r))
	}
	if r := edit(map[string]any{"command": "insert", "path": "src/calc.py", "insert_line": 99, "new_str": "x"}); !r.IsError || !strings.Contains(textOf(r), "the file has 6 lines") {
		t.Fatalf("insert out of range: %q", textOf(r))
	}
	if r := edit(map[string]any{"command": "view", "path": "src/calc.py", "view_range": []int{2, 3}}); r.IsError || textOf(r) != "src/calc.py (6 lines, 67 B), lines 2-3:\n     2\tdef f(x):\n     3\t    return x * 2\n" {
		t.Fatalf("view: %q", textOf(r))
	}
	if r := edit(map[string]any{"command": "view", "path": "src"}); r.IsError || !strings.Contains(textOf(r), "src/calc.py") {
		t.Fatalf("view of a directory: %q", textOf(r))
	}
	if r := edit(map[string]any{"command": "view", "path": "../../etc/passwd"}); !r.IsError || !strings.Contains(textOf(r), "invalid path") {
		t.Fatalf("traversal: %q", textOf(r))
	}
	run := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "import sys; sys.path.insert(0, 'src'); import calc; calc.f(20) + calc.g(1)"})
	if run.IsError || !strings.Contains(textOf(run), "42") {
		t.Fatalf("the kernel ran the edited module: %q", textOf(run))
	}
}
