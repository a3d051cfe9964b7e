package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// notes collects what a client was sent while calls run.
type notes struct {
	mu       sync.Mutex
	progress []string
	logs     []string
	changed  chan struct{}
}

func newNotes() *notes { return &notes{changed: make(chan struct{}, 1)} }

func (n *notes) poke() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

func (n *notes) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			n.mu.Lock()
			n.progress = append(n.progress, strconv.FormatFloat(r.Params.Progress, 'f', -1, 64)+"|"+r.Params.Message)
			n.mu.Unlock()
			n.poke()
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) { //nolint:staticcheck // logging is deprecated by SEP-2577 but still the protocol's way to stream stderr (kept for its deprecation window)
			n.mu.Lock()
			s, _ := r.Params.Data.(string)
			n.logs = append(n.logs, string(r.Params.Level)+"|"+r.Params.Logger+"|"+s)
			n.mu.Unlock()
			n.poke()
		},
	}
}

// wait blocks until a progress message (or log, when log) contains want.
func (n *notes) wait(t *testing.T, ctx context.Context, log bool, want string) string {
	t.Helper()
	for {
		n.mu.Lock()
		list := n.progress
		if log {
			list = n.logs
		}
		for _, s := range list {
			if strings.Contains(s, want) {
				n.mu.Unlock()
				return s
			}
		}
		n.mu.Unlock()
		select {
		case <-n.changed:
		case <-ctx.Done():
			n.mu.Lock()
			defer n.mu.Unlock()
			t.Fatalf("never saw %q (log %v): progress %q logs %q", want, log, n.progress, n.logs)
		}
	}
}

func connectWith(t *testing.T, ctx context.Context, transport sdk.Transport, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "glassroom-live-test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type callResult struct {
	res *sdk.CallToolResult
	err error
}

// callAsync calls a tool with a progress token in the background.
func callAsync(ctx context.Context, cs *sdk.ClientSession, name, token string, args map[string]any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		p := &sdk.CallToolParams{Name: name, Arguments: args}
		p.SetProgressToken(token)
		// The log level: per request under the 2026 protocol (stdio
		// negotiates it), logging/setLevel under the older ones.
		p.Meta[sdk.MetaKeyLogLevel] = "info" //nolint:staticcheck // logging is deprecated by SEP-2577 but still the protocol's way to stream stderr (kept for its deprecation window)
		res, err := cs.CallTool(ctx, p)
		ch <- callResult{res, err}
	}()
	return ch
}

// liveTransports are the two transports the server offers: the gateway's
// streamable HTTP at /mcp and `glassroom mcp` over stdio.
func liveTransports(g *apptest.Gateway) map[string]func() sdk.Transport {
	return map[string]func() sdk.Transport{
		"streamable http": func() sdk.Transport { return httpTransport(g.URL, apptest.KeyA) },
		"stdio": func() sdk.Transport {
			return &sdk.CommandTransport{Command: commandFor(g.URL)}
		},
	}
}

// TestLiveOutputAndCancel: while execute_python and run_command run, the
// client gets progress notifications with the output so far and log
// messages with stderr, before the call ends (the code waits for a file
// the test writes only after seeing them); cancelling a call interrupts
// the kernel, which keeps its variables, or kills the command.
func TestLiveOutputAndCancel(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	gc, err := client.New(client.Config{BaseURL: g.URL, APIKey: apptest.KeyA})
	if err != nil {
		t.Fatal(err)
	}
	for name, tr := range liveTransports(g) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 3*time.Minute)
			n := newNotes()
			cs := connectWith(t, ctx, tr(), n.options())
			if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil { //nolint:staticcheck // logging is deprecated by SEP-2577 but still the protocol's way to stream stderr (kept for its deprecation window)
				t.Fatal(err)
			}
			first := call(t, ctx, cs, "execute_python", map[string]any{"code": "x = 7"})
			sid := first.StructuredContent.(map[string]any)["session_id"].(string)

			// Progress and stderr while the code runs.
			done := callAsync(ctx, cs, "execute_python", "tok-1", map[string]any{"session_id": sid, "timeout_s": 300,
				"code": "import os, sys, time\nprint('ready-1', flush=True)\nprint('warn-1', file=sys.stderr, flush=True)\n" +
					"while not os.path.exists('release-1'):\n    time.sleep(0.02)\nprint('done-1')"})
			if p := n.wait(t, ctx, false, "ready-1"); !strings.HasPrefix(p, "7|") && !strings.Contains(p, "|") {
				t.Fatalf("progress without a count: %q", p)
			}
			if l := n.wait(t, ctx, true, "warn-1"); !strings.HasPrefix(l, "warning|stderr|") {
				t.Fatalf("stderr log: %q", l)
			}
			select {
			case r := <-done:
				t.Fatalf("the call ended before the release: %+v", r)
			default:
			}
			call(t, ctx, cs, "upload_file", map[string]any{"session_id": sid, "path": "release-1", "content": "go"})
			r := <-done
			if r.err != nil || r.res.IsError || !strings.Contains(textOf(r.res), "done-1") {
				t.Fatalf("the released call: %v %q", r.err, textOf(r.res))
			}

			// Cancelling interrupts the kernel; x is kept.
			cctx, cancel := context.WithCancel(ctx)
			spin := callAsync(cctx, cs, "execute_python", "tok-2", map[string]any{"session_id": sid, "timeout_s": 300,
				"code": "import time\nprint('spin-2', flush=True)\nwhile True:\n    time.sleep(0.02)"})
			n.wait(t, ctx, false, "spin-2")
			cancel()
			if r := <-spin; r.err == nil {
				t.Fatalf("a cancelled call answered: %q", textOf(r.res))
			}
			actx, acancel := context.WithTimeout(ctx, 60*time.Second)
			after, err := cs.CallTool(actx, &sdk.CallToolParams{Name: "execute_python", Arguments: map[string]any{"session_id": sid, "code": "x * 6"}})
			acancel()
			if err != nil || after.IsError || !strings.Contains(textOf(after), "42") {
				t.Fatalf("after the cancel (the kernel should be interrupted and keep x): %v %+v", err, after)
			}

			// run_command: progress, stderr, then cancel kills it.
			cdone := callAsync(ctx, cs, "run_command", "tok-3", map[string]any{"session_id": sid,
				"cmd": "echo cmd-ready; echo cmd-warn >&2; while [ ! -e release-3 ]; do sleep 0.02; done; echo cmd-done"})
			n.wait(t, ctx, false, "cmd-ready")
			n.wait(t, ctx, true, "cmd-warn")
			call(t, ctx, cs, "upload_file", map[string]any{"session_id": sid, "path": "release-3", "content": "go"})
			if r := <-cdone; r.err != nil || r.res.IsError || !strings.Contains(textOf(r.res), "cmd-done") {
				t.Fatalf("the released command: %v %+v", r.err, r.res)
			}
			kctx, kcancel := context.WithCancel(ctx)
			const sleeper = "echo cmd-spin; sleep 300"
			kspin := callAsync(kctx, cs, "run_command", "tok-4", map[string]any{"session_id": sid, "cmd": sleeper})
			n.wait(t, ctx, false, "cmd-spin")
			kcancel()
			if r := <-kspin; r.err == nil {
				t.Fatalf("a cancelled command answered: %+v", r.res)
			}
			for {
				cmds, err := gc.ListCommands(ctx, sid)
				if err != nil {
					t.Fatal(err)
				}
				running := false
				for _, c := range cmds {
					running = running || (c.Cmd == sleeper && c.Running)
				}
				if !running {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the cancelled command still runs: %+v", cmds)
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
}

// TestSessionTools: interrupt, list_sessions and create_session with
// limits and a network allowlist within the operator's ceiling, over both
// transports; the operator's policy is in the descriptions.
func TestSessionTools(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	for name, tr := range liveTransports(g) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 3*time.Minute)
			n := newNotes()
			cs := connectWith(t, ctx, tr(), n.options())
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			desc := map[string]string{}
			for _, tl := range tools.Tools {
				desc[tl.Name] = tl.Description
			}
			for _, n := range []string{"interrupt", "list_sessions", "create_session"} {
				if len(desc[n]) < 40 {
					t.Fatalf("tool %s missing: %v", n, desc)
				}
			}
			if name == "streamable http" && !strings.Contains(desc["execute_python"], "this gateway's operator allows none") {
				t.Fatalf("the gateway's policy (no network) is not stated: %q", desc["execute_python"])
			}

			created := call(t, ctx, cs, "create_session", map[string]any{"idle_timeout_s": 120})
			sc, _ := created.StructuredContent.(map[string]any)
			sid, _ := sc["session_id"].(string)
			if created.IsError || sid == "" || !strings.Contains(textOf(created), "no network") || !strings.Contains(textOf(created), "idle timeout 120s") {
				t.Fatalf("create_session: %q", textOf(created))
			}
			// The gateway clamps limits to its maximum (as over REST); the answer states what the session got.
			if r := call(t, ctx, cs, "create_session", map[string]any{"limits": map[string]any{"memory_mb": 1 << 20}}); r.IsError || strings.Contains(textOf(r), "1048576 MiB") || !strings.Contains(textOf(r), "MiB memory") {
				t.Fatalf("limits beyond the ceiling: %q", textOf(r))
			}
			if r := call(t, ctx, cs, "create_session", map[string]any{"network": []string{"pypi.org"}}); !r.IsError || !strings.Contains(textOf(r), "refused") {
				t.Fatalf("a network beyond the ceiling: %q", textOf(r))
			}
			list := call(t, ctx, cs, "list_sessions", nil)
			if list.IsError || !strings.Contains(textOf(list), sid+"  python3  idle  no network") {
				t.Fatalf("list_sessions: %q", textOf(list))
			}

			call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "y = 5"})
			spin := callAsync(ctx, cs, "execute_python", "tok-i", map[string]any{"session_id": sid, "timeout_s": 300,
				"code": "import time\nprint('spin-i', flush=True)\nwhile True:\n    time.sleep(0.02)"})
			n.wait(t, ctx, false, "spin-i")
			if r := call(t, ctx, cs, "interrupt", map[string]any{"session_id": sid}); r.IsError {
				t.Fatalf("interrupt: %q", textOf(r))
			}
			r := <-spin
			if r.err != nil || !strings.Contains(textOf(r.res), "KeyboardInterrupt") || r.res.StructuredContent.(map[string]any)["status"] != "error" && r.res.StructuredContent.(map[string]any)["status"] != "interrupted" {
				t.Fatalf("the interrupted call: %v %q %+v", r.err, textOf(r.res), r.res)
			}
			if r := call(t, ctx, cs, "execute_python", map[string]any{"session_id": sid, "code": "y + 1"}); !strings.Contains(textOf(r), "6") {
				t.Fatalf("after interrupt: %q", textOf(r))
			}
			call(t, ctx, cs, "close_session", map[string]any{"session_id": sid})
		})
	}
}

// TestSessionNetworkWithinCeiling: with an operator allowlist, the policy
// is in the descriptions, a session may ask for part of it, and
// list_sessions and create_session's answer say what it may reach.
func TestSessionNetworkWithinCeiling(t *testing.T) {
	scfg := sessions.Config{}
	scfg.Egress.Allow = []string{"example.com", "*.example.org"}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Sessions: scfg})
	ctx := ctxT(t, 2*time.Minute)
	cs := connect(t, ctx, httpTransport(g.URL, apptest.KeyA))
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "create_session" && !strings.Contains(tl.Description, "example.com, *.example.org") {
			t.Fatalf("the ceiling is not stated: %q", tl.Description)
		}
	}
	created := call(t, ctx, cs, "create_session", map[string]any{"network": []string{"example.com"}})
	if created.IsError || !strings.Contains(textOf(created), "network: example.com") {
		t.Fatalf("create_session with a network: %q", textOf(created))
	}
	if r := call(t, ctx, cs, "create_session", map[string]any{"network": []string{"pypi.org"}}); !r.IsError || !strings.Contains(textOf(r), "at most: example.com, *.example.org") {
		t.Fatalf("beyond the ceiling: %q", textOf(r))
	}
	if l := call(t, ctx, cs, "list_sessions", nil); !strings.Contains(textOf(l), "network: example.com") {
		t.Fatalf("list_sessions: %q", textOf(l))
	}
}

// TestResources: workspace files are MCP resources, listed for the
// caller's sessions only and read as text, image blobs and binary blobs,
// bounded; read_file returns a binary as an embedded resource; an MCP
// session cannot be used with another key.
func TestResources(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 3*time.Minute)
	for name, tr := range liveTransports(g) {
		t.Run(name, func(t *testing.T) {
			cs := connect(t, ctx, tr())
			first := call(t, ctx, cs, "upload_file", map[string]any{"path": "notes/a b.txt", "content": "hello resource"})
			sid := ""
			for _, f := range strings.Fields(textOf(first)) {
				if strings.HasPrefix(f, `"`) && strings.HasSuffix(f, `".`) {
					sid = strings.Trim(f, `".`)
					break
				}
			}
			if sid == "" {
				t.Fatalf("no session id in %q", textOf(first))
			}
			call(t, ctx, cs, "upload_file", map[string]any{"session_id": sid, "path": "tiny.png", "content": tinyPNG, "encoding": "base64"})
			bin := make([]byte, 256)
			for i := range bin {
				bin[i] = byte(i)
			}
			call(t, ctx, cs, "upload_file", map[string]any{"session_id": sid, "path": "data.bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"})
			call(t, ctx, cs, "run_command", map[string]any{"session_id": sid, "cmd": "head -c 5000000 /dev/zero > big.bin"})

			list, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			uris := map[string]*sdk.Resource{}
			for _, r := range list.Resources {
				uris[r.URI] = r
			}
			base := "glassroom://sessions/" + sid + "/files/"
			for _, p := range []string{"notes/a%20b.txt", "tiny.png", "data.bin", "big.bin"} {
				if uris[base+p] == nil {
					t.Fatalf("resource %s not listed: %v", p, uris)
				}
			}
			text, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: base + "notes/a%20b.txt"})
			if err != nil || text.Contents[0].Text != "hello resource" {
				t.Fatalf("text resource: %v %+v", err, text)
			}
			png, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: base + "tiny.png"})
			if err != nil || png.Contents[0].MIMEType != "image/png" || !bytes.HasPrefix(png.Contents[0].Blob, []byte("\x89PNG")) {
				t.Fatalf("image resource: %v %+v", err, png)
			}
			b, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: base + "data.bin"})
			if err != nil || !bytes.Equal(b.Contents[0].Blob, bin) || b.Contents[0].Text != "" || b.Contents[0].MIMEType != "application/octet-stream" {
				t.Fatalf("binary resource: %v %+v", err, b)
			}
			if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: base + "big.bin"}); err == nil || !strings.Contains(err.Error(), "resources are read up to") {
				t.Fatalf("an oversized resource: %v", err)
			}
			if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: base + "missing.txt"}); err == nil {
				t.Fatal("a missing file was read")
			}
			rf := call(t, ctx, cs, "read_file", map[string]any{"session_id": sid, "path": "data.bin"})
			var emb *sdk.EmbeddedResource
			for _, c := range rf.Content {
				if e, ok := c.(*sdk.EmbeddedResource); ok {
					emb = e
				}
			}
			if rf.IsError || emb == nil || !bytes.Equal(emb.Resource.Blob, bin) || emb.Resource.URI != base+"data.bin" {
				t.Fatalf("read_file of a binary: %q %+v", textOf(rf), rf.Content)
			}
			if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": sid, "path": "big.bin"}); !r.IsError || !strings.Contains(textOf(r), "binary files up to") {
				t.Fatalf("read_file of a big binary: %q", textOf(r))
			}

			// Key B sees none of A's files, and cannot read them.
			other := connect(t, ctx, httpTransport(g.URL, apptest.KeyB))
			ol, err := other.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range ol.Resources {
				if strings.Contains(r.URI, sid) {
					t.Fatalf("key B lists A's file %s", r.URI)
				}
			}
			if _, err := other.ReadResource(ctx, &sdk.ReadResourceParams{URI: base + "data.bin"}); err == nil {
				t.Fatal("key B read A's file")
			}
			if name == "streamable http" {
				// A's MCP session id used with key B: an unknown session.
				req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"resources/list","params":{}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+apptest.KeyB)
				req.Header.Set("Mcp-Session-Id", cs.ID())
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("key B used A's MCP session: %d", resp.StatusCode)
				}
			}
		})
	}
}

// commandFor runs `glassroom mcp` against the gateway at url, with key A.
func commandFor(url string) *exec.Cmd {
	cmd := exec.Command(binary, "mcp", "--url", url, "--api-key", apptest.KeyA, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	return cmd
}
