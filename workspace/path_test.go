package workspace_test

import (
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
