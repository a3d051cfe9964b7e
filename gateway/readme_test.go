package gateway_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/sessions"
)

// TestReadmePythonClient runs the README's WebSocket client (Debian's
// python3-websocket) against a real gateway, so the README stays true.
func TestReadmePythonClient(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```python\n(import json, websocket.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no python3-websocket client")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import websocket").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-websocket missing in CI")
		}
		t.Skip("python3-websocket not installed (make test-deps)")
	}
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	code := string(m[1])
	code = regexp.MustCompile(`KEY, SID = .*`).ReplaceAllString(code, `KEY, SID = "`+keyA+`", "`+s.ID+`"`)
	code = strings.ReplaceAll(code, "127.0.0.1:8888", strings.TrimPrefix(e.url, "http://"))
	out, err := exec.Command("/usr/bin/python3", "-c", code).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hi ada") || !strings.Contains(string(out), "status: ok") {
		t.Fatalf("README client: %v\n%s", err, out)
	}
}
