package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
	"github.com/glassroom/glassroom/workspace"
	"golang.org/x/sys/unix"
)

// outsideSize is the size of the file outside the workspace: a sparse
// terabyte and change, so a count that includes it cannot be mistaken.
const outsideSize = 1<<40 + 4242

// diskTree is a workspace holding insideBytes in regular files (dir "a"
// among them) next to a directory outside it that holds a file of
// outsideSize named like one of a's. It returns the workspace and the
// outside directory.
func diskTree(t *testing.T) (ws, outside string, insideBytes int64) {
	t.Helper()
	base := t.TempDir()
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "a")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	big := filepath.Join(outside, "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, outsideSize); err != nil {
		t.Fatal(err)
	}
	write := func(p string, n int) {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		insideBytes += int64(n)
	}
	write("top.txt", 100)
	write("a/big", 10) // the same name as outside's: a walk by path that follows a swapped-in symlink finds that
	for i := range 50 {
		write(fmt.Sprintf("a/f%02d", i), 1)
	}
	return ws, outside, insideBytes
}

// TestDiskUsedSkipsSymlinks: a symlink in the workspace to a directory
// or a file outside it adds nothing to the disk use.
func TestDiskUsedSkipsSymlinks(t *testing.T) {
	ws, outside, inside := diskTree(t)
	for name, target := range map[string]string{"dirlink": outside, "filelink": filepath.Join(outside, "big"), "a/up": ".."} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if got := diskUsed(context.Background(), ws, nil, 0); got != inside {
		t.Fatalf("disk used %d, want %d (the workspace's files only)", got, inside)
	}
}

// TestDiskUsedNeverFollowsASwappedInSymlink: while the code swaps a
// directory of the workspace for a symlink to one outside it and back, as
// fast as it can, no walk counts the outside file.
func TestDiskUsedNeverFollowsASwappedInSymlink(t *testing.T) {
	ws, outside, inside := diskTree(t)
	dir, link := filepath.Join(ws, "a"), filepath.Join(ws, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			t.Skipf("renameat2(RENAME_EXCHANGE) unsupported here: %v", err)
		}
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the code: a and link trade places, atomically, in a loop
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(time.Second)
	walks := 0
	for ; walks < 5000 && time.Now().Before(deadline); walks++ {
		// A walk may see a both as "a" and as "link" (it moved between the
		// two names while read), never what is outside.
		if got := diskUsed(context.Background(), ws, nil, 0); got >= outsideSize || got > 2*inside {
			t.Fatalf("walk %d: disk used %d: counted what a swapped-in symlink points to (the workspace holds %d)", walks, got, inside)
		}
	}
	t.Logf("%d walks", walks)
}

// TestDiskWalkShared: requests for a session's metrics that arrive while
// its disk walk runs wait for that walk and take its figure; 16 at once
// cost one walk, not 16.
func TestDiskWalkShared(t *testing.T) {
	ws, _, inside := diskTree(t)
	release := make(chan struct{})
	w := &diskWalk{count: func(ctx context.Context, dir string, files workspace.FS, limit int64) int64 {
		<-release
		return diskUsed(ctx, dir, files, limit)
	}}
	const n = 16
	got := make(chan int64, n)
	for range n {
		go func() {
			b, ok := w.used(context.Background(), ws, nil, 0)
			if !ok {
				b = -1
			}
			got <- b
		}()
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return w.waiting.Load() == n-1 }, "15 requests waiting for the first one's walk")
	// A request whose context ends while it waits has no count: it is
	// not a workspace of 0 bytes.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if b, ok := w.used(ended, ws, nil, 0); ok || b != 0 {
		t.Fatalf("a wait cut short: %d %v", b, ok)
	}
	close(release)
	for range n {
		if b := <-got; b != inside {
			t.Fatalf("disk used %d, want %d", b, inside)
		}
	}
	if walks := w.walks.Load(); walks != 1 {
		t.Fatalf("%d walks for %d requests at once, want 1", walks, n)
	}
	// A request after the walk ended walks again: no stale figure.
	if err := os.WriteFile(filepath.Join(ws, "later"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, ok := w.used(context.Background(), ws, nil, 0); !ok || b != inside+5 || w.walks.Load() != 2 {
		t.Fatalf("after the walk: %d bytes in %d walks, want %d in 2", b, w.walks.Load(), inside+5)
	}
}

// TestMetricsHistoryRing: the ring keeps the last samples in time order
// across its wrap, drops one older than the newest, and between filters
// by an inclusive range (a zero bound open).
func TestMetricsHistoryRing(t *testing.T) {
	h := newMetricsLog(nil, 3)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	stamps := func(ms []Metrics) []int {
		var out []int
		for _, m := range ms {
			out = append(out, int(m.Timestamp.Sub(t0)/time.Second))
		}
		return out
	}
	if got := h.between(time.Time{}, time.Time{}); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
	for i := range 5 {
		h.add(Metrics{Timestamp: at(i)}, 0)
		if i == 1 {
			if got := stamps(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []int{0, 1}) {
				t.Fatalf("before the wrap: %v", got)
			}
		}
	}
	h.add(Metrics{Timestamp: at(3)}, 0) // older than the newest: dropped
	if got := stamps(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("after the wrap: %v", got)
	}
	if got := stamps(h.between(at(3), at(4))); !slices.Equal(got, []int{3, 4}) {
		t.Fatalf("3..4: %v", got)
	}
	if got := stamps(h.between(time.Time{}, at(2))); !slices.Equal(got, []int{2}) {
		t.Fatalf("..2: %v", got)
	}
	if got := h.between(at(5), time.Time{}); len(got) != 0 {
		t.Fatalf("5..: %v", got)
	}
	// Samples a client asks for (within the interval, 5 s here) replace
	// one another; the sampler's do not, and one past the interval stays.
	h.add(Metrics{Timestamp: at(5)}, 5*time.Second)
	h.add(Metrics{Timestamp: at(6)}, 5*time.Second)
	h.add(Metrics{Timestamp: at(7)}, 5*time.Second)
	if got := stamps(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []int{3, 4, 7}) {
		t.Fatalf("polled samples: %v", got)
	}
	h.add(Metrics{Timestamp: at(8)}, 0)
	h.add(Metrics{Timestamp: at(9)}, 5*time.Second)
	h.add(Metrics{Timestamp: at(20)}, 5*time.Second)
	if got := stamps(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []int{8, 9, 20}) {
		t.Fatalf("after a sampler's sample, and past the interval: %v", got)
	}
}
