package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/glassroom/glassroom/workspace"
)

func TestCleanSandboxPath(t *testing.T) {
	for in, want := range map[string]string{"/proc/self/status": "/proc/self/status", "/etc/../proc//x/": "/proc/x", "/": "/", "/../..": "/"} {
		if got, err := CleanSandboxPath(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	long := "/" + string(make([]byte, workspace.MaxPathBytes))
	for _, in := range []string{"", "etc/passwd", "/etc/\npasswd", "/a\x00b", "/a\x7fb", long} {
		if _, err := CleanSandboxPath(in); !errors.Is(err, workspace.ErrBadPath) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestParseSandboxStat(t *testing.T) {
	e, err := parseSandboxStat("/proc/self", "l/0/777/1796636273.5\n4182")
	if err != nil || e.Type != "symlink" || e.SymlinkTarget != "4182" || e.Mode != 0o777 || e.Name != "self" ||
		!e.MTime.Equal(time.UnixMilli(1796636273500)) {
		t.Fatalf("%+v %v", e, err)
	}
	if e, err := parseSandboxStat("/etc", "d/4096/1755/1.0\n"); err != nil || e.Type != "dir" || e.Mode != 0o1755 || e.SymlinkTarget != "" {
		t.Fatalf("%+v %v", e, err)
	}
	for _, bad := range []string{"", "f/1/644", "f/x/644/1", "f/1/99999/1", "f/1/644/soon"} {
		if _, err := parseSandboxStat("/x", bad); !errors.Is(err, workspace.ErrIO) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
