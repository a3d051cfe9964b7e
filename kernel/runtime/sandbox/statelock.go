package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// StateLock is a runtime's exclusive hold on its state directory: one
// gateway per directory, so no gateway removes as orphans the session
// directories (and, for docker, the containers) of another that is alive.
//
// It is an flock(2) on the directory itself, taken without waiting. The
// kernel releases it when the holder's process dies, however it dies, so
// the next gateway on the directory can take over and reconcile what the
// dead one left; the descriptor is close-on-exec, so no kernel process
// inherits it and keeps a dead gateway's lock alive. flock locks the
// directory's inode: every path to it (a symlink, a bind mount into a
// gateway's container) shares the one lock.
type StateLock struct {
	dir  string
	once sync.Once
	fd   int
}

// StateDirInUseError is returned by LockStateDir when another gateway (a
// live process) holds the directory.
type StateDirInUseError struct {
	Dir string
	// PID is the holder's process id as this process's /proc sees it, or 0
	// when unknown (another pid namespace).
	PID int
}

func (e *StateDirInUseError) Error() string {
	holder := "another gateway"
	if e.PID > 0 {
		holder += " (pid " + strconv.Itoa(e.PID) + ")"
	}
	return "sandbox: state dir " + e.Dir + " is in use by " + holder
}

// LockStateDir creates the state directory (see prepareStateDir) and
// locks it. It fails with a *StateDirInUseError, at once, if a live
// process holds it. The caller must Release the lock, once nothing of
// its own is left in the directory (or never: it ends with the process).
func LockStateDir(dir string) (*StateLock, error) {
	if err := prepareStateDir(dir); err != nil {
		return nil, err
	}
	return lockDir(dir)
}

// LockExistingStateDir is LockStateDir for a tool that is no gateway (an
// operator's command removing what a gone gateway left): it creates and
// changes nothing, and fails with an error that wraps fs.ErrNotExist when
// dir does not exist, or with a *StateDirInUseError when a live gateway
// holds it. While the caller holds the lock, no gateway can start on dir.
func LockExistingStateDir(dir string) (*StateLock, error) {
	return lockDir(dir)
}

// StateDirOwner reports, without taking the lock, whether a live process
// holds dir's lock and its pid as this process's /proc sees it (0 when
// unknown: another pid namespace). It reads /proc/locks, so a gateway
// starting meanwhile is never refused because someone looked; where that
// cannot be read it tries the lock instead (and gives it back at once).
// It fails with an error that wraps fs.ErrNotExist when dir does not
// exist. The answer may be stale as soon as it is given: to act on a free
// directory, take LockExistingStateDir.
func StateDirOwner(dir string) (held bool, pid int, err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, 0, fmt.Errorf("sandbox: state dir owner: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(fd)
	if found, pid, ok := flockHolder(fd); ok {
		return found, pid, nil
	}
	l, err := lockDir(dir)
	var inUse *StateDirInUseError
	switch {
	case errors.As(err, &inUse):
		return true, inUse.PID, nil
	case err != nil:
		return false, 0, fmt.Errorf("sandbox: state dir owner: %w", err)
	}
	l.Release()
	return false, 0, nil
}

// lockDir takes dir's lock without waiting.
func lockDir(dir string) (*StateLock, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock state dir: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		inUse := errors.Is(err, unix.EWOULDBLOCK)
		pid := 0
		if inUse {
			pid = lockHolder(fd)
		}
		_ = unix.Close(fd)
		if inUse {
			return nil, &StateDirInUseError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("sandbox: lock state dir %s: %w", dir, err)
	}
	return &StateLock{dir: dir, fd: fd}, nil
}

// Dir returns the locked directory.
func (l *StateLock) Dir() string { return l.dir }

// Release gives the directory up. Later calls do nothing; it is safe for
// concurrent use.
func (l *StateLock) Release() {
	l.once.Do(func() { _ = unix.Close(l.fd) })
}

// lockHolder finds, best effort, the process holding an flock on fd's
// file (see flockHolder), or 0.
func lockHolder(fd int) int {
	_, pid, _ := flockHolder(fd)
	return pid
}

// flockHolder looks in /proc/locks for an flock held on fd's file ("1:
// FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; a waiter's line has "->"
// after the number): found, and the holder's pid (0 when this process
// cannot see it). ok is false when /proc/locks cannot be read.
func flockHolder(fd int) (found bool, pid int, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false, 0, false
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, 0, false
	}
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == file {
			pid, err := strconv.Atoi(f[4])
			if err != nil || pid < 0 {
				pid = 0
			}
			return true, pid, true
		}
	}
	return false, 0, true
}
