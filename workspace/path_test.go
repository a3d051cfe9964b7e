package workspace_test

import (
	"strings"
	"testing"

	"github.com/glassroom/glassroom/workspace"
)

func TestCleanAcceptsTheSandboxsAbsolutePaths(t *testing.T) {
	for in, want := range map[string]string{
		"/home/user": "", "/home/user/": "", "/home/user/a/b": "a/b", "/workspace/a": "a", "a/b": "a/b",
	} {
		if got, err := workspace.Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/etc/passwd", "/home/user/../etc", "/home/username", "/workspacex/a", "/home/user//a"} {
		if got, err := workspace.Clean(in); err == nil {
			t.Errorf("Clean(%q) = %q, want an error", in, got)
		}
	}
}

// TestCleanSaysWhatToUseInstead: the absolute paths code written for E2B
// often uses outside the workspace (/root, /tmp) are refused with what to
// use instead; others with the plain reason.
func TestCleanSaysWhatToUseInstead(t *testing.T) {
	for in, want := range map[string]string{
		"/root":         "no root user and no /root: its home and workspace is /home/user",
		"/root/a.txt":   "no root user and no /root",
		"/tmp/data.csv": "/tmp is the sandbox's private scratch space",
		"/etc/passwd":   "absolute path outside /home/user",
	} {
		_, err := workspace.Clean(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Clean(%q) = %v, want %q in it", in, err, want)
		}
	}
	if _, err := workspace.Clean("/rootkit"); err == nil || strings.Contains(err.Error(), "no root user") {
		t.Errorf("Clean(/rootkit) = %v", err)
	}
}
