package docker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
)

// TestDeadlineFollowsTheSession: a held sandbox's deadline is now +
// grace, within a minute past its session's end, and moves on when
// renewed; released (detached), it is min(end, now + grace) and is
// renewed no more. The file holds whole seconds, never earlier than the
// deadline.
func TestDeadlineFollowsTheSession(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	const grace = 2 * time.Hour
	l, err := newDeadline(dir, grace, now)
	if err != nil {
		t.Fatal(err)
	}
	file := func() time.Time {
		t.Helper()
		at, err := ReadDeadline(dir)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if got := file(); !got.Equal(now.Add(grace)) {
		t.Fatalf("a new sandbox's deadline is %v, want now + grace %v", got, now.Add(grace))
	}
	if st, err := os.Stat(filepath.Join(dir, deadlineSub)); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("deadline directory: %v %v", st, err)
	}
	end := now.Add(30 * time.Minute)
	if err := l.setEnd(end, now); err != nil {
		t.Fatal(err)
	}
	if got := file(); !got.Equal(end.Add(heldMargin)) {
		t.Fatalf("held with its session ending at %v: deadline %v, want a minute later", end, got)
	}
	if err := l.setEnd(now.Add(10*time.Hour), now); err != nil { // a longer lifetime: the grace bounds it
		t.Fatal(err)
	}
	if got := file(); !got.Equal(now.Add(grace)) {
		t.Fatalf("held with a far end: deadline %v, want now + grace", got)
	}
	later := now.Add(time.Hour)
	if err := l.renew(later); err != nil {
		t.Fatal(err)
	}
	if got := file(); !got.Equal(later.Add(grace)) {
		t.Fatalf("renewed an hour later: deadline %v, want %v", got, later.Add(grace))
	}
	if err := l.setEnd(later.Add(20*time.Minute+time.Nanosecond), later); err != nil {
		t.Fatal(err)
	}
	if got := file(); !got.Equal(later.Add(21*time.Minute + time.Second)) {
		t.Fatalf("a fraction of a second is rounded up: %v", got)
	}
	if err := l.release(later); err != nil {
		t.Fatal(err)
	}
	if got := file(); !got.Equal(later.Add(20*time.Minute + time.Second)) {
		t.Fatalf("released: deadline %v, want the session's end", got)
	}
	if err := l.renew(later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := l.setEnd(later.Add(5*time.Hour), later); err != nil {
		t.Fatal(err)
	}
	if got := file(); !got.Equal(later.Add(20*time.Minute + time.Second)) {
		t.Fatalf("a released deadline moved: %v", got)
	}

	l2, err := newDeadline(t.TempDir(), grace, now) // detached without a known end: the grace bounds it
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.release(now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := l2.current(); !got.Equal(now.Add(time.Minute + grace)) {
		t.Fatalf("released without an end: %v, want detach + grace", got)
	}
	if _, err := ReadDeadline(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadDeadline without a file: %v", err)
	}
}

// TestRenewInterval: a quarter of the grace, within 250 ms and 5 min.
func TestRenewInterval(t *testing.T) {
	for grace, want := range map[time.Duration]time.Duration{
		time.Second: 250 * time.Millisecond, 8 * time.Second: 2 * time.Second, 2 * time.Hour: 5 * time.Minute,
	} {
		if got := renewInterval(grace); got != want {
			t.Errorf("renewInterval(%v) = %v, want %v", grace, got, want)
		}
	}
}

// runInit runs the container's init (as the container's entrypoint gives
// it, on this host's python3, not as PID 1) on the deadline file of dir
// with argv as its kernel, and returns its exit code and how long it ran.
// ctx bounds it.
func runInit(t *testing.T, ctx context.Context, file string, argv ...string) (int, time.Duration) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		testkit.Unavailable(t, "python3: %v", err)
	}
	ep := initEntrypoint()
	args := append(append([]string{}, ep[1:len(ep)-2]...), file, "--")
	cmd := exec.CommandContext(ctx, python, append(args, argv...)...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("init: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("init did not end within its context (%v): the deadline was not kept", took)
	}
	return cmd.ProcessState.ExitCode(), took
}

// writeAt writes at, rounded up to a whole second, as the gateway does.
func writeAt(t *testing.T, file string, at time.Time) {
	t.Helper()
	if err := putAt(file, at); err != nil {
		t.Fatal(err)
	}
}

// putAt is writeAt for a goroutine.
func putAt(file string, at time.Time) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(at.Add(time.Second-1).Unix(), 10)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// TestInitEndsAtItsDeadline: the container's init runs its kernel and
// exits as it does (its code, 128+n for a signal), passes SIGTERM on,
// and ends it with DeadlineExit once the deadline file's time has passed
// (not before), or at once when the file is gone, holds no time, or the
// time passed before the kernel started; a deadline moved on in time
// keeps the kernel running.
func TestInitEndsAtItsDeadline(t *testing.T) {
	testkit.RealThing(t, "python3 running the container's init") // 15 s of real deadlines
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "at")
	writeAt(t, file, time.Now().Add(time.Hour))
	if code, _ := runInit(t, ctx, file, "/bin/sh", "-c", "exit 7"); code != 7 {
		t.Fatalf("a kernel's exit code 7 came out as %d", code)
	}
	if code, _ := runInit(t, ctx, file, "/bin/sh", "-c", "kill -TERM $$"); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("a kernel killed by SIGTERM came out as %d, want 143", code)
	}
	// Signals sent to the init reach the kernel.
	ictx, icancel := context.WithTimeout(ctx, 30*time.Second)
	python, _ := exec.LookPath("python3")
	ep := initEntrypoint()
	mark := filepath.Join(dir, "trapped")
	cmd := exec.CommandContext(ictx, python, append(append(append([]string{}, ep[1:len(ep)-2]...), file, "--"), "/bin/sh", "-c", "trap 'exit 3' TERM; touch "+mark+"; while :; do sleep 0.05; done")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(mark); return err == nil }, "the kernel under the init set its trap")
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	icancel()
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("SIGTERM to the init: exit %d, want the kernel's trap's 3", code)
	}

	at := time.Now().Add(2 * time.Second)
	writeAt(t, file, at)
	code, took := runInit(t, ctx, file, "/bin/sleep", "60")
	if code != DeadlineExit || time.Now().Before(at) {
		t.Fatalf("deadline %v: init exited %d after %v, want %d at the deadline", at, code, took, DeadlineExit)
	}

	// Moved on before it comes, four times: the kernel runs on past the
	// first deadline, and exits itself.
	writeAt(t, file, time.Now().Add(2*time.Second))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for i := 0; i < 4; i++ {
			time.Sleep(time.Second)
			_ = putAt(file, time.Now().Add(3*time.Second))
		}
	}()
	if code, took := runInit(t, ctx, file, "/bin/sh", "-c", "sleep 4; exit 5"); code != 5 {
		t.Fatalf("a renewed deadline: init exited %d after %v, want the kernel's 5", code, took)
	}
	<-renewed

	writeAt(t, file, time.Now().Add(-time.Second))
	if code, took := runInit(t, ctx, file, "/bin/sh", "-c", "exit 0"); code != DeadlineExit || took > 5*time.Second {
		t.Fatalf("a passed deadline: exit %d after %v, want %d at once, no kernel", code, took, DeadlineExit)
	}
	writeAt(t, file, time.Now().Add(time.Hour))
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		time.Sleep(time.Second)
		os.Remove(file)
	}()
	if code, took := runInit(t, ctx, file, "/bin/sleep", "60"); code != DeadlineExit || took > 10*time.Second {
		t.Fatalf("a removed deadline file: exit %d after %v, want %d within a poll", code, took, DeadlineExit)
	}
	<-removed
	if err := os.WriteFile(file, []byte("soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := runInit(t, ctx, file, "/bin/sleep", "60"); code != DeadlineExit {
		t.Fatalf("a deadline file without a time: exit %d, want %d", code, DeadlineExit)
	}
}
