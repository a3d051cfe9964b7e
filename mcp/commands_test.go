package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
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
