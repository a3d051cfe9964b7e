package sandbox

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// holdLock has another process (util-linux flock) take dir's lock and
// keep it until the returned function ends it.
func holdLock(t *testing.T, dir string) (pid int, end func()) {
	t.Helper()
	cmd := exec.Command("flock", "--exclusive", "--nonblock", dir, "sh", "-c", "echo locked && exec cat")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("flock: %v", err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("flock did not take the lock: %q %v", line, err)
	}
	done := false
	end = func() {
		if !done {
			done = true
			stdin.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(end)
	return cmd.Process.Pid, end
}

// TestStateLockIsExclusive: one holder at a time; a second LockStateDir
// fails at once with a StateDirInUseError naming the directory (and the
// holder's pid); Release lets the next one in.
func TestStateLockIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o711 {
		t.Fatalf("state dir not created 0711: %v %v", st, err)
	}
	_, err = LockStateDir(dir)
	var inUse *StateDirInUseError
	if !errors.As(err, &inUse) || inUse.Dir != dir || inUse.PID != os.Getpid() || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want a StateDirInUseError for %s held by pid %d", err, dir, os.Getpid())
	}
	l.Release()
	l.Release() // idempotent
	l2, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
}

// TestStateLockHeldByAnotherProcess: a lock another process holds is
// refused, naming that process; once it dies the directory is free (the
// kernel releases a dead gateway's lock).
func TestStateLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	pid, end := holdLock(t, dir)
	_, err := LockStateDir(dir)
	var inUse *StateDirInUseError
	if !errors.As(err, &inUse) || inUse.PID != pid {
		t.Fatalf("lock held by pid %d: %v", pid, err)
	}
	end()
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after its holder died: %v", err)
	}
	l.Release()
}

// TestStateLockNotInherited: a child process (a kernel) does not inherit
// the lock, so it cannot keep it after its gateway released it or died.
func TestStateLockNotInherited(t *testing.T) {
	dir := t.TempDir()
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sh", "-c", "exec cat")
	stdin, _ := child.StdinPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); child.Wait() }()
	l.Release()
	l2, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("a child process kept the released lock: %v", err)
	}
	l2.Release()
}

// TestStateDirOwner: StateDirOwner tells a held directory (with its
// holder's pid) from a free one without taking the lock, and a missing
// one by fs.ErrNotExist; LockExistingStateDir creates nothing.
func TestStateDirOwner(t *testing.T) {
	dir := t.TempDir()
	pid, end := holdLock(t, dir)
	if held, got, err := StateDirOwner(dir); err != nil || !held || got != pid {
		t.Fatalf("held by pid %d: StateDirOwner = %v, %d, %v", pid, held, got, err)
	}
	var inUse *StateDirInUseError
	if _, err := LockExistingStateDir(dir); !errors.As(err, &inUse) {
		t.Fatalf("LockExistingStateDir of a held directory: %v", err)
	}
	end()
	if held, _, err := StateDirOwner(dir); err != nil || held {
		t.Fatalf("free: StateDirOwner = %v, %v", held, err)
	}
	l, err := LockExistingStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if held, got, err := StateDirOwner(dir); err != nil || !held || got != os.Getpid() {
		t.Fatalf("held by this process: StateDirOwner = %v, %d, %v", held, got, err)
	}
	l.Release()
	gone := filepath.Join(dir, "gone")
	if _, _, err := StateDirOwner(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("StateDirOwner of a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := LockExistingStateDir(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LockExistingStateDir of a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LockExistingStateDir created %s: %v", gone, err)
	}
}
