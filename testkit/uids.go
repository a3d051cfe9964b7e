package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// UID blocks: the host uids tests give their runtimes' sandboxes, apart
// from the runtimes' defaults (local 200000, docker 300000, and the
// embedded MCP gateways' 1024-uid slots after them) and from the k8s
// runtime's 1,000,000 and up.
const (
	// UIDBlock is how many uids UIDBase hands out: a runtime's default
	// MaxSandboxes (sandbox.DefaultMaxSandboxes).
	UIDBlock = 1024
	// FirstTestUID is the first uid of the first block.
	FirstTestUID = 600000
	// uidBlocks is how many blocks there are: as many tests on one host
	// may hold one at once.
	uidBlocks = 256
)

// UIDBase returns the first of UIDBlock host uids that no other test on
// this host (of any package: `go test ./...` runs packages in parallel,
// and a package's tests may run in parallel) holds, for one runtime's
// sandboxes (sandbox.Common.UIDBase, or `--uid-base`): a runtime claims
// its uid range host-wide and refuses one another live runtime claimed,
// so tests must never share one. The test holds the block until it ends
// (its cleanup gives it back, after those registered later: register the
// runtime's Close after calling UIDBase). A runtime of more than UIDBlock
// sandboxes needs more. Safe for concurrent use.
//
// A block is an flock(2) on a file of its own, in /run/glassroom/test-uids
// as root, else in $TMPDIR/glassroom-test-uids-<uid> (not as root the
// local runtime claims nothing: its sandboxes run as the test's uid);
// the kernel releases it when the test's process ends, however it ends.
func UIDBase(t testing.TB) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "glassroom-test-uids-"+strconv.Itoa(os.Geteuid()))
	if os.Geteuid() == 0 {
		dir = "/run/glassroom/test-uids"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testkit: uid blocks: %v", err)
	}
	for n := range uidBlocks {
		base := FirstTestUID + n*UIDBlock
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(base)), os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatalf("testkit: uid block: %v", err)
		}
		err = flockNB(f)
		if err == nil {
			t.Cleanup(func() { f.Close() })
			return base
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("testkit: uid block %s: %v", f.Name(), err)
		}
	}
	t.Fatalf("testkit: all %d uid blocks in %s are held by running tests", uidBlocks, dir)
	return 0
}

// flockNB takes f's exclusive flock without waiting.
func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
