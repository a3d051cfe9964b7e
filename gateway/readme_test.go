package gateway_test

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/sessions"
)

// docBlock returns the first submatch of re in the document at path (from
// this package's directory), failing the test when there is none.
func docBlock(t *testing.T, path string, re *regexp.Regexp, what string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no %s", path, what)
	}
	return string(m[1])
}

// sameInReadme fails the test when the README has a copy of a tested
// documentation block (a match of re) that differs from it: the README's
// examples are excerpts of docs/, where the tests run them.
func sameInReadme(t *testing.T, re *regexp.Regexp, tested string) {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range re.FindAllSubmatch(readme, -1) {
		if !bytes.Equal(m[1], []byte(tested)) {
			t.Errorf("README's copy differs from the tested block in docs/:\n%s\nwant:\n%s", m[1], tested)
		}
	}
}

// TestReadmePythonClient runs the WebSocket client of docs/api.md
// (Debian's python3-websocket) against a real gateway, so the
// documentation stays true; the README's copy must be the same.
func TestReadmePythonClient(t *testing.T) {
	re := regexp.MustCompile("(?s)```python\n(import json, websocket.*?)```")
	code := docBlock(t, "../docs/api.md", re, "python3-websocket client")
	sameInReadme(t, re, code)
	if err := exec.Command("/usr/bin/python3", "-c", "import websocket").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-websocket missing in CI")
		}
		t.Skip("python3-websocket not installed (make test-deps)")
	}
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	code = regexp.MustCompile(`KEY, SID = .*`).ReplaceAllString(code, `KEY, SID = "`+keyA+`", "`+s.ID+`"`)
	code = strings.ReplaceAll(code, "127.0.0.1:8888", strings.TrimPrefix(e.url, "http://"))
	out, err := exec.Command("/usr/bin/python3", "-c", code).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hi ada") || !strings.Contains(string(out), "status: ok") {
		t.Fatalf("docs/api.md client: %v\n%s", err, out)
	}
}
