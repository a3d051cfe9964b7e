package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// TestSessionDirsSkipTheGatewaysOwn: the directories a gateway keeps in
// its state directory are never taken for a session's (a reconcile would
// remove them as orphans).
func TestSessionDirsSkipTheGatewaysOwn(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"sess-0123456789", sandbox.ShimStateDir, sandbox.ForkServerStateDir, "snapshots", "volumes", "egress"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := sandbox.SessionDirs(dir)
	if err != nil || !slices.Equal(ids, []string{"sess-0123456789"}) {
		t.Fatalf("SessionDirs = %v, %v", ids, err)
	}
}
