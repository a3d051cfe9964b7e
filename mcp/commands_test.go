package mcp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/testkit"
)

// TestRunCommand drives run_command against a real gateway (local
// runtime): a command's output and exit code in a new session, envs and
// cwd in that session, a timeout, and a background start.
func TestRunCommand(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 3*time.Minute)
	cs := connect(t, ctx, httpTransport(g.URL, apptest.KeyA))
	res := call(t, ctx, cs, "run_command", map[string]any{"cmd": "echo hello; echo bad >&2; exit 2"})
	text := textOf(res)
	if res.IsError || !strings.Contains(text, "exit code 2") || !strings.Contains(text, "stdout:\nhello") || !strings.Contains(text, "stderr:\nbad") {
		t.Fatalf("run_command: %v %q", res.IsError, text)
	}
	sid, _ := res.StructuredContent.(map[string]any)["session_id"].(string)
	if sid == "" {
		t.Fatalf("no session_id in %+v", res.StructuredContent)
	}
	res = call(t, ctx, cs, "run_command", map[string]any{"cmd": "mkdir -p d && cd d && pwd", "session_id": sid})
	if !strings.Contains(textOf(res), "/home/user/d") {
		t.Fatalf("mkdir: %q", textOf(res))
	}
	res = call(t, ctx, cs, "run_command", map[string]any{"cmd": "echo $V; pwd", "cwd": "d", "envs": map[string]any{"V": "v1"}, "session_id": sid})
	if !strings.Contains(textOf(res), "v1\n/home/user/d") {
		t.Fatalf("envs and cwd: %q", textOf(res))
	}
	res = call(t, ctx, cs, "run_command", map[string]any{"cmd": "sleep 100", "timeout_s": 1, "session_id": sid})
	if !strings.Contains(textOf(res), "timeout") {
		t.Fatalf("timeout: %q", textOf(res))
	}
	res = call(t, ctx, cs, "run_command", map[string]any{"cmd": "sleep 100", "background": true, "session_id": sid})
	if pid, _ := res.StructuredContent.(map[string]any)["pid"].(float64); pid < 1 || !strings.Contains(textOf(res), "background") {
		t.Fatalf("background: %q %+v", textOf(res), res.StructuredContent)
	}
}

// TestPreviewPort: preview_port gives a URL that opens a server a
// background run_command started, from a client without any key; before
// the server listens it says so.
func TestPreviewPort(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Previews: true})
	ctx := ctxT(t, 3*time.Minute)
	cs := connect(t, ctx, httpTransport(g.URL, apptest.KeyA))
	res := call(t, ctx, cs, "run_command", map[string]any{"cmd": "mkdir -p site && echo served > site/index.html"})
	sid, _ := res.StructuredContent.(map[string]any)["session_id"].(string)
	res = call(t, ctx, cs, "preview_port", map[string]any{"session_id": sid, "port": 8125})
	if res.IsError || !strings.Contains(textOf(res), "Nothing listens on port 8125 yet") || res.StructuredContent.(map[string]any)["listening"] != false {
		t.Fatalf("before the server: %q %+v", textOf(res), res.StructuredContent)
	}
	call(t, ctx, cs, "run_command", map[string]any{"cmd": "exec python3 -m http.server -d site 8125", "background": true, "session_id": sid})
	var u string
	testkit.Eventually(t, time.Minute, func() bool {
		res = call(t, ctx, cs, "preview_port", map[string]any{"session_id": sid, "port": 8125})
		u, _ = res.StructuredContent.(map[string]any)["url"].(string)
		return !res.IsError && res.StructuredContent.(map[string]any)["listening"] == true
	}, "preview_port to see the server")
	// Every *.localhost name leads to the preview listener; no API key.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, g.PreviewAddr)
	}}}
	resp, err := hc.Get(u) // the link's token becomes a cookie, and the jar-less client follows the redirect with none
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a client that keeps no cookie after the redirect: %d", resp.StatusCode)
	}
	jar, _ := cookiejar.New(nil)
	hc.Jar = jar
	resp, err = hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "served\n" {
		t.Fatalf("the URL in a client with cookies: %d %q", resp.StatusCode, body)
	}
}
