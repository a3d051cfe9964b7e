package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
	"github.com/glassroom/glassroom/workspace"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "0123456789abcdef0123456789abcdef-test"

// serve starts a real Server over a fresh directory on loopback and a
// Client of it.
func serve(t *testing.T, quota int64) (dir string, c *Client) {
	t.Helper()
	dir = t.TempDir()
	root, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workspace.NewWatcher(root, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(root, w, ServerConfig{Token: token, QuotaBytes: quota})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	c, err = NewClient(ClientConfig{BaseURL: ts.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		ts.Close()
		w.Close()
		root.Close()
	})
	return dir, c
}

func wantKind(t *testing.T, err error, kind workspace.Kind) {
	t.Helper()
	var pe *workspace.PathError
	if !errors.Is(err, kind) || !errors.As(err, &pe) {
		t.Fatalf("want %q, got %v", kind, err)
	}
	if strings.Contains(pe.Public(), "/tmp") || strings.Contains(pe.Public(), os.TempDir()) {
		t.Fatalf("public error names a host path: %q", pe.Public())
	}
}

func TestRoundTrip(t *testing.T) {
	dir, c := serve(t, 0)
	body := bytes.Repeat([]byte("0123456789"), 100000) // 1 MB
	n, err := c.Write("data/sub/big.bin", bytes.NewReader(body))
	if err != nil || n != int64(len(body)) {
		t.Fatalf("write: %d %v", n, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "data/sub/big.bin")); !bytes.Equal(got, body) {
		t.Fatal("file on disk differs")
	}
	entries, truncated, err := c.List("data")
	if err != nil || truncated || len(entries) != 1 || entries[0].Path != "data/sub" || entries[0].Type != "dir" {
		t.Fatalf("list: %+v %v %v", entries, truncated, err)
	}
	st, err := c.Stat("data/sub/big.bin")
	if err != nil || st.Size != int64(len(body)) || st.Type != "file" || st.Name != "big.bin" {
		t.Fatalf("stat: %+v %v", st, err)
	}
	if err := c.SetMetadata("data/sub/big.bin", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Stat("data/sub/big.bin"); err != nil || st.Metadata["k"] != "v" {
		t.Fatalf("metadata through the server: %+v %v", st, err)
	}
	if err := c.SetMetadata("data/sub/big.bin", map[string]string{"bad key": "v"}); !errors.Is(err, workspace.ErrBadMetadata) {
		t.Fatalf("bad metadata: %v", err)
	}
	f, info, err := c.OpenFile("data/sub/big.bin")
	if err != nil || info.Size() != int64(len(body)) || info.Name() != "big.bin" {
		t.Fatalf("open: %v %v", info, err)
	}
	defer f.Close()
	head := make([]byte, 10)
	if _, err := io.ReadFull(f, head); err != nil || string(head) != "0123456789" {
		t.Fatalf("head %q %v", head, err)
	}
	if _, err := f.Seek(-5, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(f)
	if err != nil || string(tail) != "56789" {
		t.Fatalf("tail after seek %q %v", tail, err)
	}
	// http.ServeContent over the remote file: what the gateway does for downloads.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("Range", "bytes=999990-")
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	http.ServeContent(rec, req, "big.bin", info.ModTime(), f)
	if rec.Code != http.StatusPartialContent || rec.Body.String() != "0123456789" {
		t.Fatalf("ServeContent range: %d %q", rec.Code, rec.Body.String())
	}
	if err := c.MakeDir("a/b/c"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "a/b/c")); err != nil || !st.IsDir() {
		t.Fatalf("mkdir: %v", err)
	}
	if err := c.Remove("data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("remove: %v", err)
	}
	_, err = c.Stat("data")
	wantKind(t, err, workspace.ErrNotFound)
	_, _, err = c.OpenFile("a")
	wantKind(t, err, workspace.ErrIsDir)
}

func TestTraversalIsRefusedOnBothSides(t *testing.T) {
	dir, c := serve(t, 0)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, filepath.Join(outside, "secret"))
	for _, p := range []string{rel, "../x", "/etc/passwd", "a/../../x", "a\x00b", `a\b`, "a//b", strings.Repeat("a", 1100)} {
		_, _, err := c.OpenFile(p)
		wantKind(t, err, workspace.ErrBadPath)
		_, err = c.Write(p, strings.NewReader("x"))
		wantKind(t, err, workspace.ErrBadPath)
	}
	// The server checks too: a raw request that skips the client's check.
	srv := c.base.String()
	for _, p := range []string{rel, "../x", "/etc/passwd"} {
		req, _ := http.NewRequest(http.MethodGet, srv+filePath+"?path="+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || bytes.Contains(b, []byte("s3cret")) || !bytes.Contains(b, []byte(workspace.ErrBadPath)) {
			t.Fatalf("raw %q: %d %s", p, resp.StatusCode, b)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestSymlinksAreNeverFollowed(t *testing.T) {
	dir, c := serve(t, 0)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "file-link")); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.OpenFile("link/secret")
	wantKind(t, err, workspace.ErrSymlink)
	_, _, err = c.OpenFile("file-link")
	wantKind(t, err, workspace.ErrSymlink)
	// The write fails as workspace.Root's does (the symlink is not a
	// directory to it); what matters is below: nothing lands outside.
	if _, err = c.Write("link/planted", strings.NewReader("x")); !errors.Is(err, workspace.ErrSymlink) && !errors.Is(err, workspace.ErrNotDir) {
		t.Fatalf("write through a symlink: %v", err)
	}
	if _, _, err = c.List("link"); !errors.Is(err, workspace.ErrSymlink) && !errors.Is(err, workspace.ErrNotDir) {
		t.Fatalf("list through a symlink: %v", err)
	}
	st, err := c.Stat("link")
	if err != nil || st.Type != "symlink" {
		t.Fatalf("stat of a symlink: %+v %v", st, err)
	}
	if err := c.Remove("link"); err != nil { // the link goes, never its target
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("target removed through a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !os.IsNotExist(err) {
		t.Fatal("a write went through a symlink")
	}
}

// TestSymlinkSwapRace swaps a directory and a symlink to outside the
// workspace as fast as it can while the client reads and writes through
// it: no call may ever see or touch the outside.
func TestSymlinkSwapRace(t *testing.T) {
	dir, c := serve(t, 0)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("OUTSIDE"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "f"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := d + ".link"
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64 // times the symlink to the outside stood at d
	var stuck atomic.Value // why the swapper stopped early, if it did
	wg.Add(1)
	go func() { // the hostile kernel
		defer wg.Done()
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
		if f, _, err := c.OpenFile("d/f"); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			if bytes.Contains(b, []byte("OUTSIDE")) {
				t.Fatal("read a file outside the workspace")
			}
			reads++
		} else {
			refused++
		}
		_, _ = c.Write("d/new", strings.NewReader("planted"))
		_, _, _ = c.List("d")
	}
	close(stop)
	wg.Wait()
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Fatalf("the outside directory changed: %v", ents)
	}
	if why := stuck.Load(); why != nil {
		t.Fatalf("the swapper stopped: %v", why)
	}
	if swaps.Load() < 100 || reads < 10 || refused < 10 {
		t.Fatalf("the race did not race: %d swaps, %d reads through, %d reads that met a swap", swaps.Load(), reads, refused)
	}
	t.Logf("%d swaps, %d reads through, %d reads that met a swap", swaps.Load(), reads, refused)
}

func TestQuota(t *testing.T) {
	dir, c := serve(t, 1<<20)
	if _, err := c.Write("a.bin", bytes.NewReader(make([]byte, 600<<10))); err != nil {
		t.Fatal(err)
	}
	_, err := c.Write("b.bin", bytes.NewReader(make([]byte, 600<<10)))
	wantKind(t, err, workspace.ErrFull)
	if _, err := os.Stat(filepath.Join(dir, "b.bin")); !os.IsNotExist(err) {
		t.Fatal("an upload over quota left a file")
	}
	// Replacing a file counts its old size as free; a failed replacement
	// keeps the old content.
	if _, err := c.Write("a.bin", bytes.NewReader(bytes.Repeat([]byte{1}, 900<<10))); err != nil {
		t.Fatalf("replace within quota: %v", err)
	}
	_, err = c.Write("a.bin", bytes.NewReader(make([]byte, 2<<20)))
	wantKind(t, err, workspace.ErrFull)
	if b, _ := os.ReadFile(filepath.Join(dir, "a.bin")); len(b) != 900<<10 || b[0] != 1 {
		t.Fatalf("old content lost: %d bytes", len(b))
	}
	// Files the kernel wrote count too.
	if err := os.WriteFile(filepath.Join(dir, "kernel.bin"), make([]byte, 100<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Write("c.bin", bytes.NewReader(make([]byte, 50<<10)))
	wantKind(t, err, workspace.ErrFull)
	list, _, _ := c.List("")
	if len(list) != 2 {
		t.Fatalf("temporary upload files visible: %+v", list)
	}
}

func TestTracker(t *testing.T) {
	dir, c := serve(t, 0)
	tr := c.Tracker()
	tr.Reset()
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out", "plot.png"), []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write("upload.csv", strings.NewReader("a,b\n")); err != nil {
		t.Fatal(err)
	}
	changes, truncated := tr.Changes()
	if truncated || len(changes) != 2 || changes[0] != (workspace.Change{Path: "out/plot.png", Size: 3, Change: "created"}) ||
		changes[1] != (workspace.Change{Path: "upload.csv", Size: 4, Change: "created"}) {
		t.Fatalf("changes %+v %v", changes, truncated)
	}
	tr.Reset()
	if err := os.Remove(filepath.Join(dir, "upload.csv")); err != nil {
		t.Fatal(err)
	}
	changes, _ = tr.Changes()
	if len(changes) != 1 || changes[0].Change != "deleted" {
		t.Fatalf("changes %+v", changes)
	}
}

func TestTokenAndClose(t *testing.T) {
	_, c := serve(t, 0)
	bad, err := NewClient(ClientConfig{BaseURL: c.base.String(), Token: "wrong-token-wrong-token-wrong-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, _, err = bad.List("")
	wantKind(t, err, workspace.ErrIO)
	if !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("error %v", err)
	}
	if _, err := bad.Tracker().Changes(); !err {
		t.Fatal("changes without the token reported complete")
	}
	if _, err := NewServer(nil, nil, ServerConfig{Token: "short"}); err == nil {
		t.Fatal("short token accepted")
	}
	c.Close()
	_, _, err = c.List("")
	wantKind(t, err, workspace.ErrClosed)
}

// TestHostileServer: whatever a fake server (the sandboxed code answering
// in the agent's place) sends, the client stays within the workspace's
// rules and its bounds.
func TestHostileServer(t *testing.T) {
	var answer func(w http.ResponseWriter, r *http.Request)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w, r) }))
	defer ts.Close()
	c, err := NewClient(ClientConfig{BaseURL: ts.URL, Token: token, MaxAnswerBytes: 1 << 20, MaxChanges: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	answer = func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"entries":[{"name":"../../etc","type":"dir"},{"name":"a/b","type":"file"},{"name":"ok","type":"file","size":3,"path":"/etc/passwd"},{"name":"neg","type":"file","size":-1},{"name":"t","type":"weird"}]}`)
	}
	entries, _, err := c.List("sub")
	if err != nil || len(entries) != 1 || entries[0].Path != "sub/ok" {
		t.Fatalf("hostile listing: %+v %v", entries, err)
	}
	answer = func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"entries":[`+strings.Repeat(`{"name":"x","type":"file"},`, 100000)+`{}]}`)
	}
	_, _, err = c.List("")
	wantKind(t, err, workspace.ErrIO)
	answer = func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"kind":"pwned: /etc/shadow","detail":"`+strings.Repeat("\\u001b[31m", 100)+strings.Repeat("x", 5000)+`"}`)
	}
	_, err = c.Stat("f")
	var pe *workspace.PathError
	if !errors.As(err, &pe) || pe.Kind != workspace.ErrIO || pe.Path != "f" || len(pe.Detail) > 160 || strings.ContainsRune(pe.Detail, 0x1b) {
		t.Fatalf("hostile error: %#v", err)
	}
	answer = func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"changes":[{"path":"../x","change":"created"},{"path":"ok","change":"pwned"},{"path":"good","change":"modified","size":2}],"truncated":false}`)
	}
	changes, truncated := c.Tracker().Changes()
	if len(changes) != 1 || changes[0].Path != "good" || !truncated {
		t.Fatalf("hostile changes: %+v %v", changes, truncated)
	}
	answer = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(SizeHeader, "5")
		io.WriteString(w, "12345 and much more than announced")
	}
	f, info, err := c.OpenFile("f")
	if err != nil || info.Size() != 5 {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(b) != "12345" {
		t.Fatalf("read past the announced size: %q %v", b, err)
	}
	answer = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	}
	_, err = c.Stat("f")
	wantKind(t, err, workspace.ErrIO)
}

// TestWatchAndUsage: a directory watch served over the wire delivers what
// the code does in the workspace, recursively, and ends with Close; a
// watch of a missing directory is refused with its kind; beyond the
// server's watches at once, one more is busy. Usage counts the files.
func TestWatchAndUsage(t *testing.T) {
	dir, c := serve(t, 0)
	if err := os.MkdirAll(filepath.Join(dir, "w/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := c.WatchDirectory("w", true, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w/sub/a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for !seen["create sub/a.txt"] || !seen["write sub/a.txt"] {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("the watch ended; seen %v", seen)
			}
			seen[ev.Type+" "+ev.Name] = true
		case <-timeout:
			t.Fatalf("events seen: %v", seen)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Events(); ok {
		t.Fatal("events after Close")
	}
	_, err = c.WatchDirectory("missing", false, 1, 1)
	wantKind(t, err, workspace.ErrNotFound)

	var held []workspace.DirWatcher
	defer func() {
		for _, hw := range held {
			hw.Close()
		}
	}()
	for range 8 {
		// The server frees the closed watch's slot once it sees the
		// client gone: a busy answer meanwhile is tried again.
		var hw workspace.DirWatcher
		if !testkit.Within(10*time.Second, func() bool {
			hw, err = c.WatchDirectory("w", false, 1, 1)
			return !errors.Is(err, workspace.ErrBusy)
		}) || err != nil {
			t.Fatal(err)
		}
		held = append(held, hw)
	}
	_, err = c.WatchDirectory("w", false, 1, 1)
	wantKind(t, err, workspace.ErrBusy)

	u, err := c.Usage(t.Context(), 1000)
	if err != nil || u.Bytes != 5 || u.Truncated {
		t.Fatalf("usage %+v %v", u, err)
	}
}

// TestWatchSync: a sync over the wire is a barrier: its mark comes after
// the events of a write made before it, numbers grow, and a hostile
// stream's sync events without a number are dropped.
func TestWatchSync(t *testing.T) {
	dir, c := serve(t, 0)
	w, err := c.WatchDirectory("", false, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	syncer, ok := w.(workspace.DirSyncer)
	if !ok {
		t.Fatalf("%T is no DirSyncer", w)
	}
	var last uint64
	for i := range 3 {
		name := fmt.Sprintf("f%d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		seq, err := syncer.Sync()
		if err != nil || seq <= last {
			t.Fatalf("sync %d: %d %v (last %d)", i, seq, err, last)
		}
		last = seq
		wrote := false
		for done := false; !done; {
			select {
			case ev := <-w.Events():
				switch {
				case ev.Name == name && ev.Type == workspace.DirWrite:
					wrote = true
				case ev.Type == workspace.DirSync && ev.Name == strconv.FormatUint(seq, 10):
					if !wrote {
						t.Fatalf("the mark of sync %d came before the write of %s", i, name)
					}
					done = true
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no mark for sync %d", i)
			}
		}
	}

	// A hostile server: sync events without a number never reach the
	// watcher, and an unnamed watch has no syncs.
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		io.WriteString(rw, `{"type":"sync","name":"../x"}`+"\n"+`{"type":"sync","name":"0"}`+"\n"+`{"type":"sync","name":"7"}`+"\n")
	}))
	defer ts.Close()
	hc, err := NewClient(ClientConfig{BaseURL: ts.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	hw, err := hc.WatchDirectory("", false, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	var got []string
	for ev := range hw.Events() {
		got = append(got, ev.Type+" "+ev.Name)
	}
	if !slices.Equal(got, []string{"sync 7"}) {
		t.Fatalf("hostile sync events: %v", got)
	}
	if _, err := hw.(workspace.DirSyncer).Sync(); err == nil {
		t.Fatal("a watch the server did not name synced")
	}
}

// TestRename: a move over the wire, parents made, never replacing (an
// existing target is ErrExists, a missing source ErrNotFound).
func TestRename(t *testing.T) {
	dir, c := serve(t, 0)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename("a.txt", "sub/dir/a.txt"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "sub/dir/a.txt")); err != nil || string(got) != "a" {
		t.Fatalf("moved file: %q %v", got, err)
	}
	wantKind(t, c.Rename("b.txt", "sub/dir/a.txt"), workspace.ErrExists)
	wantKind(t, c.Rename("missing.txt", "c.txt"), workspace.ErrNotFound)
	wantKind(t, c.Rename("b.txt", "../escape.txt"), workspace.ErrBadPath)
}
