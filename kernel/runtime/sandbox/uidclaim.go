package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultUIDClaimDir is the default of Common.UIDClaimDir. It is in /run,
// cleared at every boot, which fits: a claim is a lock, so it lasts no
// longer than its gateway's process anyway.
const DefaultUIDClaimDir = "/run/glassroom/uid-ranges"

// maxUIDEnd bounds a uid range: its last uid is below it (see Validate).
const maxUIDEnd = 1<<31 - 2

// claimPrefix starts the name of a claim file: uids-<base>-<size>-<unique>.
const claimPrefix = "uids-"

// claimDirWait bounds the wait for the claim directory's lock, which
// another gateway holds only while it claims or checks a range.
const claimDirWait = 10 * time.Second

// UIDClaim is a gateway's host-wide claim on the host uids of its
// sandboxes, [base, base+size): while it holds the claim, no other gateway
// that claims in the same directory starts on an overlapping range, so no
// two gateways' sessions run as one uid (one RLIMIT_NPROC budget, one
// owner of files).
//
// A claim is a file of its own in the claim directory,
// uids-<base>-<size>-<unique>, which its holder keeps flock(2)ed; the
// kernel releases the lock when the holder's process dies, however it
// dies, so a dead gateway's claim stands in no one's way (the next
// claimer removes its file). The descriptor is close-on-exec, so no
// kernel process inherits it and keeps a dead gateway's claim alive.
type UIDClaim struct {
	base, size int
	path       string
	once       sync.Once
	f          *os.File
}

// UIDRangeInUseError is returned by ClaimUIDRange when a live gateway's
// claim overlaps the range asked for.
type UIDRangeInUseError struct {
	// Base and Size are the range asked for, [Base, Base+Size).
	Base, Size int
	// OtherBase and OtherSize are the range the other gateway claimed.
	OtherBase, OtherSize int
	// PID is the holder's process id as this process's /proc sees it, or
	// 0 when unknown (another pid namespace).
	PID int
	// StateDir is the holder's state directory as it recorded it, or "".
	StateDir string
	// Free is the lowest base at or above Base whose Size uids no live
	// claim overlapped when the claim was refused, or 0 when there is none.
	Free int
}

func (e *UIDRangeInUseError) Error() string {
	var holder []string
	if e.PID > 0 {
		holder = append(holder, "pid "+strconv.Itoa(e.PID))
	}
	if e.StateDir != "" {
		holder = append(holder, "state dir "+e.StateDir)
	}
	who := "another gateway"
	if len(holder) > 0 {
		who += " (" + strings.Join(holder, ", ") + ")"
	}
	fix := "--uid-base N (a base whose " + strconv.Itoa(e.Size) + " uids no other gateway has)"
	if e.Free > 0 {
		fix = "--uid-base " + strconv.Itoa(e.Free) + " (the first base free now)"
	}
	return fmt.Sprintf("sandbox: uids %d-%d (--uid-base %d, %d sandboxes) overlap uids %d-%d of %s: "+
		"the sessions of both would run as the same host uids (sharing their RLIMIT_NPROC); give this gateway uids of its own with %s",
		e.Base, e.Base+e.Size-1, e.Base, e.Size, e.OtherBase, e.OtherBase+e.OtherSize-1, who, fix)
}

// ClaimUIDs claims c's uid range, [UIDBase, UIDBase+MaxSandboxes), in
// c.UIDClaimDir, recording c.StateDir (see ClaimUIDRange). Call it on the
// result of WithDefaults.
func (c Common) ClaimUIDs() (*UIDClaim, error) {
	return ClaimUIDRange(c.UIDClaimDir, c.UIDBase, c.MaxSandboxes, c.StateDir)
}

// claimRecord is what a claim file holds, for the messages of others.
type claimRecord struct {
	PID      int    `json:"pid"`
	StateDir string `json:"state_dir,omitempty"`
}

// liveClaim is another gateway's claim, found in the claim directory.
type liveClaim struct {
	base, size int
	pid        int
	stateDir   string
}

func (l liveClaim) overlaps(base, size int) bool {
	return base < l.base+l.size && l.base < base+size
}

// ClaimUIDRange claims the uids [base, base+size) in dir (created, mode
// 0755, if missing), recording stateDir for the messages of other
// claimers. It fails at once with a *UIDRangeInUseError when a live
// process's claim in dir overlaps the range; claims of dead processes it
// removes. It holds dir's own lock (an flock on the directory, waited for
// at most 10 s) while it looks and claims, so two claimers never both
// take overlapping ranges. The caller must Release the claim (or never:
// it ends with the process). It is safe for concurrent use, within a
// process too (two claims of one process are two claimers).
func ClaimUIDRange(dir string, base, size int, stateDir string) (*UIDClaim, error) {
	if base < 0 || size < 1 || base+size > maxUIDEnd {
		return nil, fmt.Errorf("sandbox: claim uid range %d+%d: out of bounds", base, size)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: claim uid range: %w", err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: claim uid range: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(dfd) // gives dir's lock back
	if err := lockClaimDir(dfd, dir); err != nil {
		return nil, err
	}
	live, err := liveClaims(dir)
	if err != nil {
		return nil, err
	}
	for _, l := range live {
		if l.overlaps(base, size) {
			return nil, &UIDRangeInUseError{Base: base, Size: size, OtherBase: l.base, OtherSize: l.size,
				PID: l.pid, StateDir: l.stateDir, Free: freeBase(live, base, size)}
		}
	}
	f, err := os.CreateTemp(dir, claimPrefix+strconv.Itoa(base)+"-"+strconv.Itoa(size)+"-*")
	if err != nil {
		return nil, fmt.Errorf("sandbox: claim uid range: %w", err)
	}
	c := &UIDClaim{base: base, size: size, path: f.Name(), f: f}
	if err := c.hold(stateDir); err != nil {
		c.Release()
		return nil, fmt.Errorf("sandbox: claim uid range: %w", err)
	}
	return c, nil
}

// hold locks c's fresh file and writes its record, readable by all.
func (c *UIDClaim) hold(stateDir string) error {
	if err := flockRetry(int(c.f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return &os.PathError{Op: "flock", Path: c.path, Err: err}
	}
	rec, _ := json.Marshal(claimRecord{PID: os.Getpid(), StateDir: stateDir})
	if _, err := c.f.Write(append(rec, '\n')); err != nil {
		return err
	}
	return c.f.Chmod(0o644)
}

// Base returns the first uid of the claimed range, [Base, Base+Size).
func (c *UIDClaim) Base() int { return c.base }

// Size returns how many uids the claimed range holds.
func (c *UIDClaim) Size() int { return c.size }

// Release gives the range up: its file is removed and its lock released.
// Later calls, and calls on a nil claim, do nothing; it is safe for
// concurrent use.
func (c *UIDClaim) Release() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		_ = os.Remove(c.path) // while locked: no claimer takes it for a dead one's
		_ = c.f.Close()
	})
}

// lockClaimDir takes the claim directory's lock, waiting for another
// claimer to finish (at most claimDirWait).
func lockClaimDir(dfd int, dir string) error {
	deadline := time.Now().Add(claimDirWait)
	for {
		err := flockRetry(dfd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("sandbox: claim uid range: %w", &os.PathError{Op: "flock", Path: dir, Err: err})
		}
		if time.Now().After(deadline) {
			holder := "another process"
			if pid := lockHolder(dfd); pid > 0 {
				holder += " (pid " + strconv.Itoa(pid) + ")"
			}
			return fmt.Errorf("sandbox: claim uid range: %s has held the claim directory %s for more than %v", holder, dir, claimDirWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// flockRetry is flock(2), again when a signal interrupts it.
func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// liveClaims lists the claims in dir whose holders live, removing the
// files of dead ones. The caller holds dir's lock, so no claim is being
// made meanwhile.
func liveClaims(dir string) ([]liveClaim, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: claim uid range: %w", err)
	}
	var live []liveClaim
	for _, e := range ents {
		base, size, ok := parseClaimName(e.Name())
		if !ok {
			continue
		}
		l, alive, err := checkClaim(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("sandbox: claim uid range: %w", err)
		}
		if alive {
			l.base, l.size = base, size
			live = append(live, l)
		}
	}
	return live, nil
}

// checkClaim tells whether the claim file at path has a live holder (who
// keeps it locked), and who that is; a dead one's file it removes. A file
// gone meanwhile is not alive; one this process may not read counts as
// alive, its holder unknown.
func checkClaim(path string) (l liveClaim, alive bool, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return l, false, nil
	case errors.Is(err, unix.EACCES):
		return l, true, nil
	case err != nil:
		return l, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	err = flockRetry(fd, unix.LOCK_SH|unix.LOCK_NB)
	switch {
	case err == nil: // nobody holds it: its gateway is gone
		_ = os.Remove(path) // best effort: another user's may stay, dead
		return l, false, nil
	case !errors.Is(err, unix.EWOULDBLOCK):
		return l, false, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	l.pid = lockHolder(fd)
	buf := make([]byte, 4096)
	var rec claimRecord
	if n, err := unix.Pread(fd, buf, 0); err == nil && json.Unmarshal(buf[:n], &rec) == nil {
		l.stateDir = rec.StateDir
	}
	return l, true, nil
}

// parseClaimName reads base and size from a claim file's name.
func parseClaimName(name string) (base, size int, ok bool) {
	rest, found := strings.CutPrefix(name, claimPrefix)
	if !found {
		return 0, 0, false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) != 3 {
		return 0, 0, false
	}
	base, err1 := strconv.Atoi(f[0])
	size, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || base < 0 || size < 1 {
		return 0, 0, false
	}
	return base, size, true
}

// freeBase is the lowest base at or above base whose size uids overlap
// none of live, or 0 when the uids run out first.
func freeBase(live []liveClaim, base, size int) int {
	for moved := true; moved; {
		moved = false
		for _, l := range live {
			if l.overlaps(base, size) {
				base, moved = l.base+l.size, true
			}
		}
	}
	if base+size > maxUIDEnd {
		return 0
	}
	return base
}
