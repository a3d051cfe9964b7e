package mcp_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/testkit"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type nodeResult struct {
	Text       string         `json:"text"`
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structured"`
	Images     []struct {
		MIMEType string `json:"mimeType"`
		Prefix   string `json:"prefix"`
		Length   int    `json:"length"`
	} `json:"images"`
	Thrown string `json:"thrown"`
}

type nodeOutput struct {
	Server struct{ Name, Version string }
	Tools  map[string]struct {
		Required        []string
		HasOutputSchema bool
		Description     int
	}
	First, Second, Plot, Error, Upload, UploadPNG, Read, ReadPNG, List, Code, Languages, Restart, AfterRestart, Close, AfterClose, Invalid nodeResult
	EditCreate, EditDup, EditOK, EditInsert, EditView, EditRun                                                                             nodeResult
	Live                                                                                                                                   struct {
		Text     string
		IsError  bool
		Released bool
		Progress []struct {
			Progress     float64
			Message      string
			BeforeResult bool
		}
		Logs []struct{ Level, Logger, Data string }
	}
	Cancel struct {
		Thrown, Text string
		IsError      bool
	}
	Resources struct {
		URIs                       []string
		CSVMimeType                string `json:"csvMimeType"`
		ReadText, ReadURI, Missing string
	}
}

// runNode runs testdata/node/client.mjs (the official TypeScript SDK's
// client) with args and decodes what it reports.
func runNode(t *testing.T, args ...string) nodeOutput {
	t.Helper()
	var res nodeOutput
	testkit.RunNode(t, "testdata/node", "client.mjs", &res, args...)
	return res
}

func checkNode(t *testing.T, r nodeOutput) {
	t.Helper()
	if r.Server.Name != "glassroom" || len(r.Tools) != 16 || !r.Tools["snapshot_session"].HasOutputSchema || !r.Tools["fork_session"].HasOutputSchema || !r.Tools["list_sessions"].HasOutputSchema || !r.Tools["create_session"].HasOutputSchema ||
		strings.Join(r.Tools["interrupt"].Required, ",") != "session_id" || strings.Join(r.Tools["edit_file"].Required, ",") != "command,path" || !r.Tools["execute_python"].HasOutputSchema ||
		strings.Join(r.Tools["execute_python"].Required, ",") != "code" || strings.Join(r.Tools["read_file"].Required, ",") != "session_id,path" {
		t.Fatalf("server/tools: %+v", r)
	}
	sid, _ := r.First.Structured["session_id"].(string)
	switch {
	case sid == "" || r.First.IsError || !strings.Contains(r.First.Text, "hello from node") || !strings.Contains(r.First.Text, sid):
		t.Fatalf("first: %+v", r.First)
	case !strings.Contains(r.Second.Text, "42") || r.Second.Structured["session_created"] != false:
		t.Fatalf("second: %+v", r.Second)
	case len(r.Plot.Images) != 1 || r.Plot.Images[0].MIMEType != "image/png" || !strings.HasPrefix(r.Plot.Images[0].Prefix, "iVBOR"):
		t.Fatalf("plot: %+v", r.Plot)
	case !r.Error.IsError || !strings.Contains(r.Error.Text, "ZeroDivisionError") || strings.Contains(r.Error.Text, "\x1b"):
		t.Fatalf("error: %+v", r.Error)
	case r.Upload.IsError || r.UploadPNG.IsError || !strings.Contains(r.Read.Text, "a,b\n1,2"):
		t.Fatalf("upload/read: %+v %+v %+v", r.Upload, r.UploadPNG, r.Read)
	case len(r.ReadPNG.Images) != 1 || r.ReadPNG.Images[0].Prefix != tinyPNG[:8]:
		t.Fatalf("read png: %+v", r.ReadPNG)
	case r.Code.IsError || !strings.Contains(r.Code.Text, "82") || r.Code.Structured["language"] != "py" || !r.Tools["execute_code"].HasOutputSchema:
		t.Fatalf("execute_code: %+v", r.Code)
	case r.Languages.IsError || !strings.Contains(r.Languages.Text, "python3: "):
		t.Fatalf("list_languages: %+v", r.Languages)
	case r.EditCreate.IsError || !strings.Contains(r.EditCreate.Text, "Created src/calc.py"):
		t.Fatalf("edit_file create: %+v", r.EditCreate)
	case !r.EditDup.IsError || !strings.Contains(r.EditDup.Text, "2 matches, at lines 2 and 5"):
		t.Fatalf("edit_file str_replace with two matches: %+v", r.EditDup)
	case r.EditOK.IsError || r.EditInsert.IsError || !strings.Contains(r.EditOK.Text, "     2\t    return x * 2"):
		t.Fatalf("edit_file str_replace, insert: %+v %+v", r.EditOK, r.EditInsert)
	case r.EditView.IsError || !strings.HasSuffix(r.EditView.Text, "lines 2-6:\n     2\tdef f(x):\n     3\t    return x * 2\n     4\t\n     5\tdef g(x):\n     6\t    return x + 1\n"):
		t.Fatalf("edit_file view: %+v", r.EditView)
	case r.EditRun.IsError || !strings.Contains(r.EditRun.Text, "42"):
		t.Fatalf("the kernel ran the edited module: %+v", r.EditRun)
	case !strings.Contains(r.List.Text, "tiny.png") || !strings.Contains(r.Restart.Text, "Restarted"):
		t.Fatalf("list/restart: %+v %+v", r.List, r.Restart)
	case !r.AfterRestart.IsError || !strings.Contains(r.AfterRestart.Text, "NameError"):
		t.Fatalf("after restart: %+v", r.AfterRestart)
	case r.Close.IsError || !r.AfterClose.IsError || !strings.Contains(r.AfterClose.Text, "does not exist"):
		t.Fatalf("close: %+v %+v", r.Close, r.AfterClose)
	case !r.Invalid.IsError && r.Invalid.Thrown == "":
		t.Fatalf("a call without code was accepted: %+v", r.Invalid)
	}
	checkNodeLive(t, r, sid)
}

// checkNodeLive checks what the Node client saw while calls ran: progress
// with the output so far and stderr as a log message before the answer,
// a cancel that interrupted the kernel, and the workspace as resources.
func checkNodeLive(t *testing.T, r nodeOutput, sid string) {
	t.Helper()
	ready := false
	for _, p := range r.Live.Progress {
		ready = ready || (p.BeforeResult && p.Progress > 0 && strings.Contains(p.Message, "node-ready"))
	}
	warned := false
	for _, l := range r.Live.Logs {
		warned = warned || (l.Level == "warning" && l.Logger == "stderr" && strings.Contains(l.Data, "node-warn"))
	}
	switch {
	case !ready || !r.Live.Released:
		t.Fatalf("no progress with the output before the answer: %+v", r.Live)
	case r.Live.IsError || !strings.Contains(r.Live.Text, "node-ready") || !strings.Contains(r.Live.Text, "node-done"):
		t.Fatalf("the released call: %+v", r.Live)
	case !warned:
		t.Fatalf("stderr was not sent as a log message: %+v", r.Live.Logs)
	case r.Cancel.Thrown == "":
		t.Fatalf("the aborted call answered: %+v", r.Cancel)
	case r.Cancel.IsError || !strings.Contains(r.Cancel.Text, "141"):
		t.Fatalf("after the cancel (the kernel should be interrupted and keep x): %+v", r.Cancel)
	}
	uri := "glassroom://sessions/" + sid + "/files/in/data.csv"
	switch {
	case !slices.Contains(r.Resources.URIs, uri) || !slices.Contains(r.Resources.URIs, "glassroom://sessions/"+sid+"/files/src/calc.py"):
		t.Fatalf("resources/list: %+v", r.Resources.URIs)
	case r.Resources.CSVMimeType != "text/csv" && !strings.HasPrefix(r.Resources.CSVMimeType, "text/"):
		t.Fatalf("resources/list MIME type of the csv: %q", r.Resources.CSVMimeType)
	case r.Resources.ReadText != "a,b\n1,2\n" || r.Resources.ReadURI != uri:
		t.Fatalf("resources/read: %+v", r.Resources)
	case !strings.Contains(strings.ToLower(r.Resources.Missing), "not found"):
		t.Fatalf("resources/read of a missing file: %q", r.Resources.Missing)
	}
}

// TestNodeClient runs a real MCP client from npm (the official TypeScript
// SDK) against the gateway's /mcp and against `glassroom mcp` over stdio,
// on each runtime.
func TestNodeClient(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			t.Run("streamable http", func(t *testing.T) {
				checkNode(t, runNode(t, "http", g.URL+"/mcp", apptest.KeyA))
			})
			t.Run("stdio", func(t *testing.T) {
				checkNode(t, runNode(t, "stdio", binary, "mcp", "--url", g.URL, "--api-key", apptest.KeyA, "--log-level", "warn"))
			})
		})
	}
}

// TestEmbedded runs `glassroom mcp --embedded` (a gateway inside the MCP
// process, local runtime) with the go-sdk's client over stdio.
func TestEmbedded(t *testing.T) {
	rt := apptest.Local(t) // skips or fails like the other local tests; a state dir and uids of its own
	cmd := exec.Command(binary, "mcp", "--embedded", "--log-level", "warn", "--",
		"--state-dir", rt.Common.StateDir, "--uid-base", strconv.Itoa(rt.Common.UIDBase))
	cmd.Stderr = os.Stderr
	ctx := ctxT(t, 3*time.Minute)
	cs := connect(t, ctx, &sdk.CommandTransport{Command: cmd})
	flow(t, ctx, cs)
}

// TestHTTPGuards checks what protects /mcp on the gateway: the API key,
// tenant isolation, DNS-rebinding protection and cross-origin protection.
func TestHTTPGuards(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 2*time.Minute)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(key, host string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if st, body := post(apptest.KeyA, "", nil); st != http.StatusOK || !strings.Contains(body, `"glassroom"`) {
		t.Fatalf("initialize: %d %s", st, body)
	}
	if st, _ := post("", "", nil); st != http.StatusUnauthorized {
		t.Fatalf("no key: %d", st)
	}
	if st, _ := post("wrong-key-0123456789", "", nil); st != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d", st)
	}
	if st, body := post(apptest.KeyA, "attacker.example:8888", nil); st != http.StatusForbidden {
		t.Fatalf("DNS rebinding (foreign Host on a loopback listener): %d %s", st, body)
	}
	if st, body := post(apptest.KeyA, "", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"}); st != http.StatusForbidden {
		t.Fatalf("cross-origin browser request: %d %s", st, body)
	}
	// A session started through key A's /mcp does not exist for key B.
	a := connect(t, ctx, httpTransport(g.URL, apptest.KeyA))
	first := call(t, ctx, a, "execute_python", map[string]any{"code": "secret = 1"})
	sid := first.StructuredContent.(map[string]any)["session_id"].(string)
	b := connect(t, ctx, httpTransport(g.URL, apptest.KeyB))
	if r := call(t, ctx, b, "execute_python", map[string]any{"code": "secret", "session_id": sid}); !r.IsError || !strings.Contains(textOf(r), "does not exist") {
		t.Fatalf("tenant B reached A's session: %q", textOf(r))
	}
	if r := call(t, ctx, a, "execute_python", map[string]any{"code": "secret", "session_id": sid}); r.IsError {
		t.Fatalf("tenant A lost its session: %q", textOf(r))
	}
}
