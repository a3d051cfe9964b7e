package docker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// initScript is the kernel container's PID 1: tini's work, and the
// deadline (see init.py).
//
//go:embed init.py
var initScript string

// Where the deadline lives. The gateway writes DeadlineFile's twin in the
// session directory, <state dir>/<session>/deadline/at (a directory of
// the gateway's, mode 0755, bound read-only at DeadlineDir); the
// container's init reads it.
const (
	DeadlineDir  = "/run/glassroom/deadline"
	DeadlineFile = DeadlineDir + "/" + deadlineName
	deadlineName = "at"
	deadlineSub  = "deadline" // in the session directory
	// DeadlineExit is the exit code of a container whose init ended it at
	// its deadline (timeout(1)'s).
	DeadlineExit = 124
	// heldMargin is how far past its session's end a held sandbox's
	// deadline stays: the gateway ends the session first, with its reason.
	heldMargin = time.Minute
)

// initEntrypoint is the container's entrypoint: python running init.py
// on DeadlineFile; the kernel's argv follows.
func initEntrypoint() []string {
	return []string{"/usr/bin/python3", "-I", "-S", "-B", "-c", sandbox.WithoutComments("# glassroom sandbox init\n", initScript), DeadlineFile, "--"}
}

// deadline is one sandbox's deadline file, as this gateway keeps it: while
// held, min(its session's end + heldMargin, now + grace), renewed; once
// released (detached), min(end, now + grace), left as it is. It is safe
// for concurrent use.
type deadline struct {
	dir   string // host path of the directory bound at DeadlineDir
	grace time.Duration

	mu       sync.Mutex
	end      time.Time // the session's end (SetEnd); zero: not known
	at       time.Time // what the file says
	released bool
}

// newDeadline creates the sandbox's deadline directory in its session
// directory (or finds it: an adopted sandbox's) and writes a held
// deadline, now + grace, before the container can start.
func newDeadline(sessionDir string, grace time.Duration, now time.Time) (*deadline, error) {
	l := &deadline{dir: filepath.Join(sessionDir, deadlineSub), grace: grace}
	if err := os.Mkdir(l.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("docker: deadline directory: %w", err)
	}
	if st, err := os.Lstat(l.dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("docker: deadline directory %s: %w", l.dir, errors.Join(err, os.ErrInvalid))
	}
	if err := os.Chmod(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("docker: deadline directory: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writeLocked(now.Add(grace)); err != nil {
		return nil, err
	}
	return l, nil
}

// heldAt is the deadline of a held sandbox at now. Called with l.mu held.
func (l *deadline) heldAt(now time.Time) time.Time {
	at := now.Add(l.grace)
	if !l.end.IsZero() && l.end.Add(heldMargin).Before(at) {
		at = l.end.Add(heldMargin)
	}
	return at
}

// setEnd records the session's end and writes the held deadline it gives.
func (l *deadline) setEnd(end, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.end = end
	return l.writeLocked(l.heldAt(now))
}

// renew moves a held deadline on (now + grace, within the session's end);
// it writes only when that moves the file by a second or more.
func (l *deadline) renew(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	at := l.heldAt(now)
	if d := at.Sub(l.at); d > -time.Second && d < time.Second {
		return nil
	}
	return l.writeLocked(at)
}

// release writes the deadline of a sandbox no gateway holds any more,
// min(end, now + grace), and stops renewing it.
func (l *deadline) release(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	at := now.Add(l.grace)
	if !l.end.IsZero() && l.end.Before(at) {
		at = l.end
	}
	return l.writeLocked(at)
}

// current returns what the file says.
func (l *deadline) current() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

// writeLocked replaces the file (written aside, then renamed: the init
// never reads half a time). Called with l.mu held.
func (l *deadline) writeLocked(at time.Time) error {
	secs := at.Unix()
	if at.Nanosecond() > 0 {
		secs++ // never earlier than at
	}
	tmp := filepath.Join(l.dir, deadlineName+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(secs, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("docker: write deadline: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(l.dir, deadlineName)); err != nil {
		return fmt.Errorf("docker: write deadline: %w", err)
	}
	l.at = time.Unix(secs, 0)
	return nil
}

// ReadDeadline reads the deadline a gateway wrote for the sandbox of
// sessionDir (<state dir>/<session id>): zero and an error wrapping
// fs.ErrNotExist when there is none.
func ReadDeadline(sessionDir string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(sessionDir, deadlineSub, deadlineName))
	if err != nil {
		return time.Time{}, fmt.Errorf("docker: read deadline: %w", err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("docker: read deadline: %q: %w", b, err)
	}
	return time.Unix(secs, 0), nil
}

// deadlines is the runtime's set of held deadlines, which Run renews.
type deadlines struct {
	mu  sync.Mutex
	set map[string]*deadline
}

func (s *deadlines) add(id string, l *deadline) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[string]*deadline{}
	}
	s.set[id] = l
}

func (s *deadlines) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, id)
}

func (s *deadlines) all() []*deadline {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*deadline, 0, len(s.set))
	for _, l := range s.set {
		out = append(out, l)
	}
	return out
}

// renewDeadlines moves every held sandbox's deadline on.
func (r *Runtime) renewDeadlines(ctx context.Context) {
	now := time.Now()
	for _, l := range r.deadlines.all() {
		if ctx.Err() != nil {
			return
		}
		if err := l.renew(now); err != nil {
			r.log.Warn().Err(err).Str("dir", l.dir).Msg("renewing a sandbox's deadline failed")
		}
	}
}

// renewInterval is how often held deadlines are renewed: a quarter of the
// grace, within 250 ms and 5 min.
func renewInterval(grace time.Duration) time.Duration {
	return min(max(grace/4, 250*time.Millisecond), 5*time.Minute)
}
