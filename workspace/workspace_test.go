package workspace_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassroom/glassroom/workspace"
	"golang.org/x/sys/unix"
)

func TestCleanRejectsHostilePaths(t *testing.T) {
	bad := []string{"../x", "a/../../x", "a/..", "/etc/passwd", "a\x00b", `a\..\b`, "a//b", "./a", "a/./b",
		strings.Repeat("a/", 600), strings.Repeat("x", 256), "a\nb"}
	for _, p := range bad {
		if _, err := workspace.Clean(p); !errors.Is(err, workspace.ErrBadPath) {
			t.Errorf("Clean(%q) = %v, want ErrBadPath", p, err)
		}
	}
	good := map[string]string{"a": "a", "a/b.csv": "a/b.csv", "dir/": "dir", "": "", ".": "", "%2e%2e": "%2e%2e", "..a": "..a", "ü.txt": "ü.txt"}
	for in, want := range good {
		if got, err := workspace.Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func setup(t *testing.T) (*workspace.Root, string, string) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	other := filepath.Join(base, "other")
	os.Mkdir(ws, 0o755)
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "secret"), []byte("other session"), 0o644)
	os.WriteFile(filepath.Join(base, "outside"), []byte("host file"), 0o644)
	r, err := workspace.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, ws, base
}

func TestSymlinksNeverLeaveTheWorkspace(t *testing.T) {
	r, ws, base := setup(t)
	os.Symlink("/etc/shadow", filepath.Join(ws, "shadow"))
	os.Symlink(filepath.Join(base, "other"), filepath.Join(ws, "otherws"))
	os.Symlink(filepath.Join(base, "outside"), filepath.Join(ws, "out"))
	os.Symlink(".", filepath.Join(ws, "self"))
	for _, p := range []string{"shadow", "otherws/secret", "out", "self/out"} {
		if f, _, err := r.OpenFile(p); err == nil {
			f.Close()
			t.Errorf("read through symlink %s succeeded", p)
		}
	}
	// Writing through a symlinked directory must fail and leave the target alone.
	if _, err := r.Write("otherws/secret", strings.NewReader("pwned")); err == nil {
		t.Error("write through a symlinked dir succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(base, "other", "secret")); string(b) != "other session" {
		t.Fatalf("other workspace changed: %q", b)
	}
	// Writing to a symlink's name replaces the link, never the target.
	if _, err := r.Write("out", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "outside")); string(b) != "host file" {
		t.Fatalf("symlink target overwritten: %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(ws, "out")); fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("symlink not replaced by a regular file")
	}
	// Listing a symlinked dir fails; removing a symlink removes only the link.
	if _, _, err := r.List("otherws"); err == nil {
		t.Error("listed through a symlink")
	}
	if err := r.Remove("otherws"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "other", "secret")); err != nil {
		t.Fatal("removing a symlink removed its target")
	}
	// Absolute and traversal paths never reach the filesystem.
	for _, p := range []string{"../outside", "/etc/passwd"} {
		if _, _, err := r.OpenFile(p); !errors.Is(err, workspace.ErrBadPath) {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestSymlinkSwapRace swaps a directory for a symlink to the outside in a
// loop while the gateway reads and writes through that directory: no
// operation may ever reach the outside.
func TestSymlinkSwapRace(t *testing.T) {
	r, ws, base := setup(t)
	d := filepath.Join(ws, "d")
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "outside"), []byte("inside"), 0o644)
	link := d + ".link"
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	var swaps atomic.Int64 // times the symlink to the outside stood at d
	var stuck atomic.Value // why the swapper stopped early, if it did
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// One atomic exchange puts the symlink where the directory was,
			// the next one puts the directory back: d always exists.
			if unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) != nil {
				continue
			}
			swaps.Add(1)
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				stuck.Store(err.Error()) // the test's own files: should not happen
				return
			}
		}
	}()
	// Race until the swaps, the reads that got through and the reads that
	// hit a swap have all happened: a race that never raced proves nothing.
	var reads, refused int
	deadline := time.Now().Add(30 * time.Second)
	for (swaps.Load() < 100 || reads < 10 || refused < 10) && time.Now().Before(deadline) {
		if f, _, err := r.OpenFile("d/outside"); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != "inside" {
				t.Fatalf("read outside the workspace: %q", b)
			}
			reads++
		} else {
			refused++
		}
		r.Write("d/outside", strings.NewReader("inside"))
	}
	close(stop)
	<-done
	if b, _ := os.ReadFile(filepath.Join(base, "outside")); string(b) != "host file" {
		t.Fatalf("host file changed through a swapped symlink: %q", b)
	}
	if why := stuck.Load(); why != nil {
		t.Fatalf("the swapper stopped: %v", why)
	}
	if swaps.Load() < 100 || reads < 10 || refused < 10 {
		t.Fatalf("the race did not race: %d swaps, %d reads through, %d reads that met a swap", swaps.Load(), reads, refused)
	}
	t.Logf("%d swaps, %d reads through, %d reads that met a swap", swaps.Load(), reads, refused)
}

func TestWriteListRemove(t *testing.T) {
	r, ws, _ := setup(t)
	n, err := r.Write("data/sub/a.csv", strings.NewReader("x,y\n1,2\n"))
	if err != nil || n != 8 {
		t.Fatalf("write: %d %v", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "data/sub/a.csv")); string(b) != "x,y\n1,2\n" {
		t.Fatalf("content %q", b)
	}
	ents, _, err := r.List("data")
	if err != nil || len(ents) != 1 || ents[0].Type != "dir" || ents[0].Path != "data/sub" {
		t.Fatalf("list: %+v %v", ents, err)
	}
	f, info, err := r.OpenFile("data/sub/a.csv")
	if err != nil || info.Size() != 8 {
		t.Fatal(err)
	}
	f.Close()
	// Entries carry their permission bits.
	if err := os.Chmod(filepath.Join(ws, "data/sub/a.csv"), 0o640); err != nil {
		t.Fatal(err)
	}
	if e, err := r.Stat("data/sub/a.csv"); err != nil || e.Mode != 0o640 || e.Type != "file" {
		t.Fatalf("stat: %+v %v", e, err)
	}
	if ents, _, err := r.List("data/sub"); err != nil || len(ents) != 1 || ents[0].Mode != 0o640 {
		t.Fatalf("list of a 0640 file: %+v %v", ents, err)
	}
	if _, _, err := r.OpenFile("data"); !errors.Is(err, workspace.ErrIsDir) {
		t.Fatalf("open dir: %v", err)
	}
	if err := r.Remove("data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "data")); !os.IsNotExist(err) {
		t.Fatal("tree not removed")
	}
	if err := r.Remove(""); !errors.Is(err, workspace.ErrBadPath) {
		t.Fatalf("removing the root: %v", err)
	}
	if _, _, err := r.OpenFile("nope"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	if err := r.MakeDir("made/deep/dir"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(ws, "made/deep/dir")); err != nil || !st.IsDir() {
		t.Fatalf("make dir: %v", err)
	}
	if err := r.MakeDir("made/deep/dir"); err != nil {
		t.Fatalf("existing dir: %v", err)
	}
	r.Write("made/file", strings.NewReader("x"))
	if err := r.MakeDir("made/file/sub"); !errors.Is(err, workspace.ErrNotDir) {
		t.Fatalf("file in the way: %v", err)
	}
}

func TestQuotaFailsCleanly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	r, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Write("keep.txt", strings.NewReader("old"))
	_, err = r.Write("keep.txt", bytes.NewReader(make([]byte, 2<<20)))
	if !errors.Is(err, workspace.ErrFull) {
		t.Fatalf("want ErrFull, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "old" {
		t.Fatalf("failed upload changed the file: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary file left: %v", ents)
	}
}

func TestWatcher(t *testing.T) {
	r, ws, _ := setup(t)
	os.WriteFile(filepath.Join(ws, "old.txt"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("1"), 0o644)
	w, err := workspace.NewWatcher(r, 64, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Reset()
	os.WriteFile(filepath.Join(ws, "new.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(ws, "old.txt"), []byte("22"), 0o644)
	os.Remove(filepath.Join(ws, "gone.txt"))
	os.WriteFile(filepath.Join(ws, "tmp.txt"), []byte("x"), 0o644)
	os.Remove(filepath.Join(ws, "tmp.txt"))
	os.MkdirAll(filepath.Join(ws, "out/deep"), 0o755)
	os.WriteFile(filepath.Join(ws, "out/deep/chart.png"), []byte("png"), 0o644)
	got, truncated := w.Changes()
	want := "gone.txt:deleted:0 new.txt:created:5 old.txt:modified:2 out/deep/chart.png:created:3"
	var parts []string
	for _, c := range got {
		parts = append(parts, c.Path+":"+c.Change+":"+itoa(c.Size))
	}
	if strings.Join(parts, " ") != want || truncated {
		t.Fatalf("changes:\n got %s\nwant %s (truncated %v)", strings.Join(parts, " "), want, truncated)
	}
	// A second round sees only its own changes, including in the new dir.
	os.WriteFile(filepath.Join(ws, "out/deep/chart.png"), []byte("png2"), 0o644)
	got, _ = w.Changes()
	if len(got) != 1 || got[0].Change != "modified" {
		t.Fatalf("second round: %+v", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestClosedRootNeverTouchesAReusedDescriptor: after Close, the descriptor
// number is free and the next Open (another session's workspace) usually
// gets it. Calls on the closed root must fail, not write there.
func TestClosedRootNeverTouchesAReusedDescriptor(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ra, err := workspace.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	ra.Close()
	rb, err := workspace.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if _, err := ra.Write("pwned.txt", strings.NewReader("x")); !errors.Is(err, workspace.ErrClosed) {
		t.Fatalf("write on a closed root: %v", err)
	}
	if _, _, err := ra.List(""); !errors.Is(err, workspace.ErrClosed) {
		t.Fatalf("list on a closed root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b, "pwned.txt")); err == nil {
		t.Fatal("closed root wrote into another workspace")
	}
}

// TestSharedInotify: watchers of several workspaces share instances; each
// sees only its own workspace's changes, whichever watcher drained the
// shared queue, and they may drain concurrently.
func TestSharedInotify(t *testing.T) {
	n := workspace.NewInotify(2)
	defer n.Close()
	type ws struct {
		dir string
		w   *workspace.Watcher
	}
	var all []ws
	for i := 0; i < 3; i++ {
		dir := t.TempDir()
		r, err := workspace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		w, err := n.Watch(r, 64, 100)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		all = append(all, ws{dir, w})
	}
	if n.Instances() != 2 {
		t.Fatalf("3 watchers at 2 per instance: %d instances", n.Instances())
	}
	for _, x := range all {
		x.w.Reset()
	}
	for i, x := range all {
		os.WriteFile(filepath.Join(x.dir, "f"+strconv.Itoa(i)), []byte("x"), 0o644)
	}
	// The second watcher drains first: it reads the first one's event too.
	got1, _ := all[1].w.Changes()
	got0, _ := all[0].w.Changes()
	if len(got0) != 1 || got0[0].Path != "f0" || len(got1) != 1 || got1[0].Path != "f1" {
		t.Fatalf("changes attributed wrongly: %+v %+v", got0, got1)
	}
	var wg sync.WaitGroup
	for i, x := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				x.w.Reset()
				os.WriteFile(filepath.Join(x.dir, "g"+strconv.Itoa(i)), []byte(strconv.Itoa(k)), 0o644)
				if got, _ := x.w.Changes(); len(got) != 1 || got[0].Path != "g"+strconv.Itoa(i) {
					t.Errorf("watcher %d round %d: %+v", i, k, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestWriteKeepsTheModeOfAReplacedFile: replacing a file (an upload, an
// edit) keeps its permission bits, so an executable script stays
// executable; a new file is 0644, and a symlink in the way is replaced,
// its target's mode not copied.
func TestWriteKeepsTheModeOfAReplacedFile(t *testing.T) {
	r, ws, base := setup(t)
	script := filepath.Join(ws, "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho old\n"), 0o644)
	os.Chmod(script, 0o750)
	if _, err := r.Write("run.sh", strings.NewReader("#!/bin/sh\necho new\n")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(script); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("replaced script: %v %v, want -rwxr-x---", st.Mode(), err)
	}
	if _, err := r.Write("fresh.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(ws, "fresh.txt")); st.Mode().Perm() != 0o644 {
		t.Fatalf("new file: %v", st.Mode())
	}
	outside := filepath.Join(base, "outside")
	os.Chmod(outside, 0o700)
	os.Symlink(outside, filepath.Join(ws, "link"))
	if _, err := r.Write("link", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(ws, "link")); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Fatalf("symlink replaced by %v %v", st.Mode(), err)
	}
}

// TestSymlinkEntries: a symlink's entry says where it points (an
// absolute sandbox path when in the workspace, else the link's text) and
// what that is when it is in the workspace; its target is never followed
// out of it, and a cycle of links ends.
func TestSymlinkEntries(t *testing.T) {
	r, ws, _ := setup(t)
	if _, err := r.Write("d/file.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"d/rel":      "file.txt",
		"d/abs":      "/home/user/d/file.txt",
		"d/alias":    "/workspace/d",
		"d/outside":  "/etc/passwd",
		"d/escape":   "../../etc",
		"d/cycle-a":  "cycle-b",
		"d/cycle-b":  "cycle-a",
		"d/dangling": "nope",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][2]string{
		"rel":      {"/home/user/d/file.txt", "file"},
		"abs":      {"/home/user/d/file.txt", "file"},
		"alias":    {"/home/user/d", "dir"},
		"outside":  {"/etc/passwd", ""},
		"escape":   {"../../etc", ""},
		"cycle-a":  {"/home/user/d/cycle-b", ""},
		"dangling": {"/home/user/d/nope", ""},
	}
	ents, _, err := r.List("d")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range ents {
		w, ok := want[e.Name]
		if !ok {
			continue
		}
		seen++
		if e.Type != "symlink" || e.SymlinkTarget != w[0] || e.TargetType != w[1] {
			t.Errorf("%s: %+v, want target %q type %q", e.Name, e, w[0], w[1])
		}
	}
	if seen != len(want) {
		t.Fatalf("listed %d of the links: %+v", seen, ents)
	}
	if e, err := r.Stat("d/rel"); err != nil || e.SymlinkTarget != "/home/user/d/file.txt" || e.TargetType != "file" {
		t.Fatalf("stat of a link: %+v %v", e, err)
	}
}

// TestMetadata: a regular file's metadata is set, replaced and cleared
// as a whole, shown by Stat and List, kept by a rename and dropped by a
// new write; bad pairs and directories are refused.
func TestMetadata(t *testing.T) {
	r, _, _ := setup(t)
	if _, err := r.Write("f.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	meta := func(p string) map[string]string {
		t.Helper()
		e, err := r.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return e.Metadata
	}
	if err := r.SetMetadata("f.txt", map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if m := meta("f.txt"); len(m) != 2 || m["a"] != "1" || m["b"] != "2" {
		t.Fatalf("set: %v", m)
	}
	if err := r.SetMetadata("f.txt", map[string]string{"c": "3"}); err != nil {
		t.Fatal(err)
	}
	if m := meta("f.txt"); len(m) != 1 || m["c"] != "3" {
		t.Fatalf("replaced: %v", m)
	}
	if err := r.Rename("f.txt", "g.txt"); err != nil {
		t.Fatal(err)
	}
	if ents, _, _ := r.List(""); len(ents) != 1 || ents[0].Metadata["c"] != "3" {
		t.Fatalf("after a rename, listed: %+v", ents)
	}
	if _, err := r.Write("g.txt", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if m := meta("g.txt"); m != nil {
		t.Fatalf("a new write kept %v", m)
	}
	for _, bad := range []map[string]string{{"bad key": "v"}, {"": "v"}, {"k": "line\n"}, {"k": "é"}} {
		if err := r.SetMetadata("g.txt", bad); !errors.Is(err, workspace.ErrBadMetadata) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	if err := r.MakeDir("d"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetMetadata("d", map[string]string{"k": "v"}); !errors.Is(err, workspace.ErrIsDir) {
		t.Fatalf("on a directory: %v", err)
	}
}

// TestDirWatchSync: Sync's mark comes after the events of every change
// made before it, whatever the watch has not read yet, and its directory
// is gone with the watch.
func TestDirWatchSync(t *testing.T) {
	r, ws, _ := setup(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where Sync makes its directory (os.TempDir)
	w, err := r.WatchDir("", false, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		for j := range 5 {
			if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d-%d", i, j)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		seq, err := w.Sync()
		if err != nil || seq != uint64(i) {
			t.Fatalf("sync %d: %d, %v", i, seq, err)
		}
		created := 0
		for ev := range w.Events() {
			if ev.Type == workspace.DirSync {
				if ev.Name != strconv.Itoa(i) {
					t.Fatalf("mark %q, want %d", ev.Name, i)
				}
				break
			}
			if ev.Type == workspace.DirCreate && strings.HasPrefix(ev.Name, fmt.Sprintf("f%d-", i)) {
				created++
			}
		}
		if created != 5 {
			t.Fatalf("round %d: %d creates before the mark, want 5", i, created)
		}
	}
	if marks, _ := filepath.Glob(filepath.Join(tmp, "glassroom-watch-sync-*")); len(marks) != 1 {
		t.Fatalf("sync directories %v, want one", marks)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("%v left after Close", left)
	}
	if _, err := w.Sync(); err == nil {
		t.Fatal("sync after close: no error")
	}
}
