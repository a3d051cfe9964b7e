package sessionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The check process's protocol: it writes checkStarted first, then exits
// with 0 (the file is sound), checkExitIO (it could not be read: the
// error is on stderr), checkExitLocked (another process holds it), or
// anything else, a crash included (the file is corrupt).
const (
	checkStarted    = "sessionstore-check: started\n"
	checkExitIO     = 3
	checkExitLocked = 4
)

// CheckMain is the store's integrity check, run by Open in a process of
// its own: args holds the file's path. It opens the file read-only (a
// shared lock), runs bbolt's consistency check and reads every record,
// and returns the process's exit code (see Config.CheckCommand). A
// corrupt file may crash it: that is what the separate process is for.
func CheckMain(args []string, stdout, stderr io.Writer) int {
	_, _ = io.WriteString(stdout, checkStarted)
	if len(args) != 1 {
		fmt.Fprintln(stderr, "sessionstore-check: want one argument, the store's path")
		return checkExitIO
	}
	// A forged tree may recurse without end or ask for huge allocations:
	// a small stack ceiling ends the first, and this process, not the
	// gateway, is the OOM killer's choice for the second.
	debug.SetMaxStack(64 << 20)
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	db, err := bolt.Open(args[0], 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(stderr, err)
		var pe *fs.PathError
		var errno syscall.Errno
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return checkExitLocked
		case errors.As(err, &pe), errors.As(err, &errno):
			return checkExitIO
		}
		return 1
	}
	defer func() { _ = db.Close() }() // read-only: nothing to lose
	err = db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drained: the check's goroutine ends
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if b == nil { // bbolt writes only buckets at the top
				return fmt.Errorf("top-level key %q is not a bucket", printable(string(name), 80))
			}
			return b.ForEach(func(k, v []byte) error {
				if len(k) == 0 {
					return errors.New("empty key")
				}
				return nil
			})
		})
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// verdict is the outcome of a check.
type verdict struct {
	corrupt string // why the file is corrupt, "" when sound
}

// check runs CheckCommand on path. It returns the verdict on a file the
// check could judge, or an error when it could not (the file is then
// left as it is). A check killed by SIGKILL (the OOM killer's choice
// under memory pressure: the check asks to be its first) is run once
// more before its death counts against the file.
func (s *Store) check(path string) (verdict, error) {
	v, killed, err := s.checkOnce(path)
	if killed {
		v, _, err = s.checkOnce(path)
	}
	return v, err
}

// checkOnce is one run of the check; killed reports a death by SIGKILL.
func (s *Store) checkOnce(path string) (_ verdict, killed bool, _ error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CheckTimeout)
	defer cancel()
	argv := s.cfg.CheckCommand
	cmd := exec.CommandContext(ctx, argv[0], append(append([]string{}, argv[1:]...), path)...)
	var stdout, stderr head
	stdout.max, stderr.max = 4096, 4096
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if !strings.HasPrefix(stdout.String(), checkStarted) {
		return verdict{}, false, fmt.Errorf("sessionstore: the check (%s) did not run: %w %s", strings.Join(argv, " "), errors.Join(err, ctx.Err()), stderr.line())
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return verdict{corrupt: fmt.Sprintf("its check did not end within %v", s.cfg.CheckTimeout)}, false, nil
	case err == nil:
		return verdict{}, false, nil
	case !errors.As(err, &exit):
		return verdict{}, false, fmt.Errorf("sessionstore: check: %w", err)
	case exit.ExitCode() == checkExitLocked:
		return verdict{}, false, fmt.Errorf("%w (%s)", ErrLocked, path)
	case exit.ExitCode() == checkExitIO:
		return verdict{}, false, fmt.Errorf("sessionstore: check %s: %s", path, stderr.line())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		killed = true
	}
	why := stderr.line()
	if why == "" {
		why = exit.String()
	}
	return verdict{corrupt: why}, killed, nil
}

// head keeps the first max bytes written to it.
type head struct {
	b   bytes.Buffer
	max int
}

func (t *head) Write(p []byte) (int, error) {
	if room := t.max - t.b.Len(); room > 0 {
		t.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *head) String() string { return t.b.String() }

// line is the first non-empty line written, printable and short: what
// the check said (a Go panic's first line names it).
func (t *head) line() string {
	for _, l := range strings.Split(t.b.String(), "\n") {
		if l = printable(strings.TrimSpace(l), 300); l != "" {
			return l
		}
	}
	return ""
}

// printable keeps at most n bytes of s, without control characters.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
