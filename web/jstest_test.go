package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var tapCount = regexp.MustCompile(`(?m)^# (pass|fail) (\d+)$`)

// TestJSUnits runs the UI modules' unit tests (jstest/*.test.js) with
// Node's built-in test runner: ANSI parsing, nbformat, text helpers,
// highlighting and the other pure modules.
func TestJSUnits(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node is required in CI: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING JS UNIT TESTS: %v ***\n\n", err)
	}
	files, err := filepath.Glob("jstest/*.test.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no JS tests found (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-reporter=tap"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), "NODE_OPTIONS=", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	counts := map[string]int{}
	for _, m := range tapCount.FindAllStringSubmatch(string(out), -1) {
		counts[m[1]], _ = strconv.Atoi(m[2])
	}
	if err != nil || counts["fail"] != 0 || counts["pass"] == 0 {
		t.Fatalf("node --test: %v, %d passed, %d failed:\n%s", err, counts["pass"], counts["fail"], out)
	}
	t.Logf("node --test: %d passed in %d files", counts["pass"], len(files))
}
