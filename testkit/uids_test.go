package testkit_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/glassroom/glassroom/testkit"
)

// TestUIDBaseHandsOutBlocksNoOneHolds: two blocks of one test differ and
// lie in the test region; a block another process holds (util-linux
// flock, standing for another test package) is never handed out.
func TestUIDBaseHandsOutBlocksNoOneHolds(t *testing.T) {
	a, b := testkit.UIDBase(t), testkit.UIDBase(t)
	for _, base := range []int{a, b} {
		if base < testkit.FirstTestUID || (base-testkit.FirstTestUID)%testkit.UIDBlock != 0 {
			t.Fatalf("base %d is not a block of the test region", base)
		}
	}
	if a == b {
		t.Fatalf("two blocks of one test are both %d", a)
	}
	var freed int
	t.Run("held", func(t *testing.T) { freed = testkit.UIDBase(t) })
	dir := filepath.Join(os.TempDir(), "glassroom-test-uids-"+strconv.Itoa(os.Geteuid()))
	if os.Geteuid() == 0 {
		dir = "/run/glassroom/test-uids"
	}
	// Another process takes the block the subtest gave back (or finds
	// another test took it: held either way).
	holder := exec.Command("flock", "--exclusive", filepath.Join(dir, strconv.Itoa(freed)), "sh", "-c", "echo locked && exec cat")
	stdin, _ := holder.StdinPipe()
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatalf("flock: %v", err)
	}
	defer func() { stdin.Close(); holder.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("flock did not take the block: %q %v", line, err)
	}
	for range 3 {
		if got := testkit.UIDBase(t); got == freed || got == a || got == b {
			t.Fatalf("UIDBase handed out %d, a block held elsewhere", got)
		}
	}
}
