package fileedit_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/glassroom/glassroom/workspace"
	"github.com/glassroom/glassroom/workspace/fileedit"
	"github.com/glassroom/glassroom/workspace/remote"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backends are the two real workspace.FS implementations over a fresh
// directory: the gateway's own (workspace.Root) and a pod's, reached over
// HTTP on loopback (workspace/remote).
var backends = map[string]func(t *testing.T) (string, workspace.FS){
	"root": func(t *testing.T) (string, workspace.FS) {
		dir := t.TempDir()
		r, err := workspace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return dir, r
	},
	"remote": func(t *testing.T) (string, workspace.FS) {
		dir := t.TempDir()
		r, err := workspace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		w, err := workspace.NewWatcher(r, 1000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		const token = "fileedit-test-token-0123456789abcdef"
		s, err := remote.NewServer(r, w, remote.ServerConfig{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s)
		c, err := remote.NewClient(remote.ClientConfig{BaseURL: ts.URL, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Close()
			ts.Close()
			w.Close()
			r.Close()
		})
		return dir, c
	},
}

func each(t *testing.T, f func(t *testing.T, dir string, fsys workspace.FS)) {
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			dir, fsys := open(t)
			f(t, dir, fsys)
		})
	}
}

func editor(t *testing.T, cfg fileedit.Config) *fileedit.Editor {
	t.Helper()
	e, err := fileedit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func str(s string) *string { return &s }
func num(n int) *int       { return &n }

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTemporaries fails if an edit left a temporary file behind.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, _ error) error {
		if d != nil && strings.HasPrefix(d.Name(), ".glassroom-upload-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestCommands(t *testing.T) {
	each(t, func(t *testing.T, dir string, fsys workspace.FS) {
		e := editor(t, fileedit.Config{ContextLines: 1})
		do := func(p string, c fileedit.Command) fileedit.Result {
			t.Helper()
			r, err := e.Do(fsys, p, c)
			if err != nil {
				t.Fatalf("%s %s: %v", c.Command, p, err)
			}
			return r
		}

		r := do("src/app.py", fileedit.Command{Command: "create", FileText: str("import os\n\ndef main():\n    print('hi')\n")})
		if !r.Created || r.Size != 39 || r.Lines != 4 || r.Path != "src/app.py" || read(t, dir, "src/app.py") != "import os\n\ndef main():\n    print('hi')\n" {
			t.Fatalf("create: %+v", r)
		}
		if r := do("/home/user/src/app.py", fileedit.Command{Command: "view"}); r.Path != "src/app.py" || r.StartLine != 1 || r.EndLine != 4 ||
			r.Text != "     1\timport os\n     2\t\n     3\tdef main():\n     4\t    print('hi')\n" {
			t.Fatalf("view: %+v", r)
		}
		if r := do("/workspace/src/app.py", fileedit.Command{Command: "view", ViewRange: []int{3, -1}}); r.Text != "     3\tdef main():\n     4\t    print('hi')\n" || r.Lines != 4 {
			t.Fatalf("view 3..-1: %+v", r)
		}
		if r := do("src/app.py", fileedit.Command{Command: "view", ViewRange: []int{2, 99}}); r.StartLine != 2 || r.EndLine != 4 {
			t.Fatalf("view 2..99 is clamped: %+v", r)
		}

		r = do("src/app.py", fileedit.Command{Command: "str_replace", OldStr: str("print('hi')"), NewStr: str("print('hello')\n    return 0")})
		if got := read(t, dir, "src/app.py"); got != "import os\n\ndef main():\n    print('hello')\n    return 0\n" {
			t.Fatalf("str_replace wrote %q", got)
		}
		if r.Lines != 5 || r.StartLine != 3 || r.EndLine != 5 || !strings.Contains(r.Text, "     5\t    return 0\n") {
			t.Fatalf("str_replace snippet: %+v", r)
		}
		// new_str absent deletes old_str.
		do("src/app.py", fileedit.Command{Command: "str_replace", OldStr: str("\n    return 0")})
		if got := read(t, dir, "src/app.py"); got != "import os\n\ndef main():\n    print('hello')\n" {
			t.Fatalf("deletion wrote %q", got)
		}

		r = do("src/app.py", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str("#!/usr/bin/env python3")})
		if got := read(t, dir, "src/app.py"); !strings.HasPrefix(got, "#!/usr/bin/env python3\nimport os\n") || r.StartLine != 1 || r.EndLine != 2 {
			t.Fatalf("insert at the top: %q %+v", got, r)
		}
		do("src/app.py", fileedit.Command{Command: "insert", InsertLine: num(5), NewStr: str("\nmain()\n")})
		if got := read(t, dir, "src/app.py"); got != "#!/usr/bin/env python3\nimport os\n\ndef main():\n    print('hello')\n\nmain()\n" {
			t.Fatalf("insert at the end: %q", got)
		}
		do("src/app.py", fileedit.Command{Command: "insert", InsertLine: num(2), NewStr: str("import sys")})
		if got := read(t, dir, "src/app.py"); !strings.HasPrefix(got, "#!/usr/bin/env python3\nimport os\nimport sys\n\ndef") {
			t.Fatalf("insert in the middle: %q", got)
		}

		// A file without a final newline keeps none; CRLF files keep CRLF.
		write(t, dir, "plain.txt", "a\nb")
		do("plain.txt", fileedit.Command{Command: "insert", InsertLine: num(2), NewStr: str("c")})
		if got := read(t, dir, "plain.txt"); got != "a\nb\nc" {
			t.Fatalf("insert after an unterminated last line: %q", got)
		}
		write(t, dir, "dos.txt", "one\r\ntwo\r\nthree\r\n")
		if r := do("dos.txt", fileedit.Command{Command: "view"}); strings.Contains(r.Text, "\r") {
			t.Fatalf("view shows CRs: %q", r.Text)
		}
		do("dos.txt", fileedit.Command{Command: "str_replace", OldStr: str("one\ntwo"), NewStr: str("1\n2")})
		do("dos.txt", fileedit.Command{Command: "insert", InsertLine: num(1), NewStr: str("1.5\n")})
		if got := read(t, dir, "dos.txt"); got != "1\r\n1.5\r\n2\r\nthree\r\n" {
			t.Fatalf("CRLF file: %q", got)
		}

		// create replaces, and an edit keeps the file's mode.
		os.Chmod(filepath.Join(dir, "src/app.py"), 0o755)
		if r := do("src/app.py", fileedit.Command{Command: "create", FileText: str("")}); r.Created || r.Size != 0 || r.Lines != 0 {
			t.Fatalf("create over a file: %+v", r)
		}
		if r := do("src/app.py", fileedit.Command{Command: "view"}); r.Text != "" || r.Lines != 0 || r.StartLine != 0 {
			t.Fatalf("view of an empty file: %+v", r)
		}
		do("src/app.py", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str("print(1)")})
		if got := read(t, dir, "src/app.py"); got != "print(1)" {
			t.Fatalf("insert into an empty file: %q", got)
		}
		if st, _ := os.Stat(filepath.Join(dir, "src/app.py")); st.Mode().Perm() != 0o755 {
			t.Fatalf("mode after edits: %v", st.Mode())
		}
		noTemporaries(t, dir)
	})
}

// TestStrReplaceNeedsExactlyOneMatch: zero or several matches fail with
// how many and where, and leave the file byte-identical, its mtime too.
func TestStrReplaceNeedsExactlyOneMatch(t *testing.T) {
	each(t, func(t *testing.T, dir string, fsys workspace.FS) {
		e := editor(t, fileedit.Config{})
		content := "x = 1\ny = 2\nx = 1\n  z = 3\nfor i in range(3):\n    x = 1\n"
		write(t, dir, "a.py", content)
		before, _ := os.Stat(filepath.Join(dir, "a.py"))
		var fe *fileedit.Error

		_, err := e.Do(fsys, "a.py", fileedit.Command{Command: "str_replace", OldStr: str("x = 1"), NewStr: str("x = 2")})
		if !errors.Is(err, fileedit.ErrManyMatches) || !errors.As(err, &fe) || fe.Matches != 3 || fmt.Sprint(fe.Lines) != "[1 3 6]" ||
			!strings.Contains(fe.Public(), "3 matches, at lines 1, 3 and 6") || !strings.Contains(fe.Public(), "a.py") {
			t.Fatalf("three matches: %v", err)
		}
		_, err = e.Do(fsys, "a.py", fileedit.Command{Command: "str_replace", OldStr: str("w = 0"), NewStr: str("w = 1")})
		if !errors.Is(err, fileedit.ErrNoMatch) || !errors.As(err, &fe) || fe.Matches != 0 || !strings.Contains(fe.Public(), "0 matches") {
			t.Fatalf("no match: %v", err)
		}
		_, err = e.Do(fsys, "a.py", fileedit.Command{Command: "str_replace", OldStr: str("\nz = 3\n"), NewStr: str("z = 4")})
		if !errors.Is(err, fileedit.ErrNoMatch) || !strings.Contains(err.Error(), "whitespace") {
			t.Fatalf("a near miss in whitespace: %v", err)
		}
		// Overlapping occurrences count: "aa" occurs twice in "aaa".
		write(t, dir, "b.txt", "aaa\n")
		if _, err := e.Do(fsys, "b.txt", fileedit.Command{Command: "str_replace", OldStr: str("aa"), NewStr: str("b")}); !errors.Is(err, fileedit.ErrManyMatches) ||
			!strings.Contains(err.Error(), "all on line 1") {
			t.Fatalf("overlapping matches: %v", err)
		}
		if read(t, dir, "b.txt") != "aaa\n" {
			t.Fatal("b.txt changed")
		}
		after, _ := os.Stat(filepath.Join(dir, "a.py"))
		if got := read(t, dir, "a.py"); got != content || !after.ModTime().Equal(before.ModTime()) {
			t.Fatalf("a failed str_replace changed the file: %q (mtime %v -> %v)", got, before.ModTime(), after.ModTime())
		}
		// A million matches are counted, the first lines named.
		write(t, dir, "many.txt", strings.Repeat(strings.Repeat("a", 999)+"\n", 1000))
		_, err = e.Do(fsys, "many.txt", fileedit.Command{Command: "str_replace", OldStr: str("a"), NewStr: str("b")})
		if !errors.Is(err, fileedit.ErrManyMatches) || !errors.As(err, &fe) || fe.Matches != 999000 || len(fe.Lines) != fileedit.MaxMatchLines ||
			!strings.Contains(fe.Public(), "999000 matches, at lines 1, 2, 3") || !strings.Contains(fe.Public(), "19, 20 and more") {
			t.Fatalf("many matches: %v", err)
		}
		// One match on the same file works.
		if _, err := e.Do(fsys, "a.py", fileedit.Command{Command: "str_replace", OldStr: str("y = 2"), NewStr: str("y = 3")}); err != nil {
			t.Fatal(err)
		}
		noTemporaries(t, dir)
	})
}

// TestHostileInputs: every bad path, argument or file gets a clear error
// of the right kind and changes nothing.
func TestHostileInputs(t *testing.T) {
	each(t, func(t *testing.T, dir string, fsys workspace.FS) {
		e := editor(t, fileedit.Config{MaxFileBytes: 1 << 20})
		outside := filepath.Join(filepath.Dir(dir), "outside-"+filepath.Base(dir))
		os.Mkdir(outside, 0o755)
		t.Cleanup(func() { os.RemoveAll(outside) })
		write(t, outside, "secret.txt", "secret\n")
		os.Symlink(outside, filepath.Join(dir, "escape"))
		os.Mkdir(filepath.Join(dir, "sub"), 0o755)
		os.Symlink(outside, filepath.Join(dir, "sub", "escape"))
		os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt"))
		write(t, dir, "ok.txt", "one\ntwo\n")
		write(t, dir, "bin.dat", "\x89PNG\x00\x01\x02")
		write(t, dir, "latin1.txt", "caf\xe9\n")
		write(t, dir, "big.txt", strings.Repeat("0123456789abcde\n", 70000)) // > 1 MiB
		os.Mkdir(filepath.Join(dir, "adir"), 0o755)
		huge := strings.Repeat("x", 1<<20+1)

		cases := []struct {
			name string
			path string
			cmd  fileedit.Command
			want error
			says string
		}{
			{"traversal", "../outside/secret.txt", fileedit.Command{Command: "view"}, workspace.ErrBadPath, "'..'"},
			{"absolute outside", "/etc/passwd", fileedit.Command{Command: "view"}, workspace.ErrBadPath, "absolute path"},
			{"traversal create", "a/../../x.txt", fileedit.Command{Command: "create", FileText: str("x")}, workspace.ErrBadPath, "'..'"},
			{"NUL in path", "a\x00b", fileedit.Command{Command: "view"}, workspace.ErrBadPath, "NUL"},
			{"symlinked dir", "escape/secret.txt", fileedit.Command{Command: "str_replace", OldStr: str("secret"), NewStr: str("pwned")}, workspace.ErrSymlink, "escape (a directory in the path is a symlink"},
			{"symlinked dir create", "escape/new.txt", fileedit.Command{Command: "create", FileText: str("pwned")}, workspace.ErrSymlink, "escape (a directory in the path is a symlink"},
			{"symlinked dir insert", "escape/secret.txt", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str("pwned")}, workspace.ErrSymlink, "escape"},
			{"symlinked dir view", "escape/secret.txt", fileedit.Command{Command: "view"}, workspace.ErrSymlink, "escape"},
			{"symlinked dir deeper", "sub/escape/secret.txt", fileedit.Command{Command: "view"}, workspace.ErrSymlink, "sub/escape (a directory"},
			{"file in the path", "ok.txt/x", fileedit.Command{Command: "view"}, workspace.ErrNotDir, "ok.txt"},
			{"symlink file", "link.txt", fileedit.Command{Command: "str_replace", OldStr: str("secret"), NewStr: str("pwned")}, workspace.ErrSymlink, "symlink"},
			{"symlink view", "link.txt", fileedit.Command{Command: "view"}, workspace.ErrSymlink, ""},
			{"missing", "nope.txt", fileedit.Command{Command: "str_replace", OldStr: str("a"), NewStr: str("b")}, workspace.ErrNotFound, ""},
			{"missing view", "nope.txt", fileedit.Command{Command: "view"}, workspace.ErrNotFound, ""},
			{"directory", "adir", fileedit.Command{Command: "view"}, workspace.ErrIsDir, ""},
			{"create over directory", "adir", fileedit.Command{Command: "create", FileText: str("x")}, workspace.ErrIsDir, ""},
			{"root", "", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str("x")}, workspace.ErrIsDir, ""},
			{"binary", "bin.dat", fileedit.Command{Command: "str_replace", OldStr: str("PNG"), NewStr: str("GIF")}, fileedit.ErrNotText, "NUL bytes or invalid UTF-8"},
			{"not UTF-8", "latin1.txt", fileedit.Command{Command: "view"}, fileedit.ErrNotText, ""},
			{"too large file", "big.txt", fileedit.Command{Command: "view"}, fileedit.ErrTooLarge, "1.1 MiB"},
			{"huge new_str", "ok.txt", fileedit.Command{Command: "str_replace", OldStr: str("one"), NewStr: &huge}, fileedit.ErrTooLarge, "new_str has 1.0 MiB"},
			{"huge file_text", "ok.txt", fileedit.Command{Command: "create", FileText: &huge}, fileedit.ErrTooLarge, ""},
			{"edit grows past the bound", "ok.txt", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str(huge[:1<<20-4])}, fileedit.ErrTooLarge, "would make it"},
			{"NUL in new_str", "ok.txt", fileedit.Command{Command: "str_replace", OldStr: str("one"), NewStr: str("o\x00e")}, fileedit.ErrInvalid, "NUL"},
			{"NUL in file_text", "ok.txt", fileedit.Command{Command: "create", FileText: str("\x00")}, fileedit.ErrInvalid, "NUL"},
			{"bad UTF-8 in old_str", "ok.txt", fileedit.Command{Command: "str_replace", OldStr: str("\xff")}, fileedit.ErrInvalid, "UTF-8"},
			{"insert_line past the end", "ok.txt", fileedit.Command{Command: "insert", InsertLine: num(3), NewStr: str("x")}, fileedit.ErrInvalid, "the file has 2 lines"},
			{"insert_line negative", "ok.txt", fileedit.Command{Command: "insert", InsertLine: num(-1), NewStr: str("x")}, fileedit.ErrInvalid, "out of range"},
			{"insert without line", "ok.txt", fileedit.Command{Command: "insert", NewStr: str("x")}, fileedit.ErrInvalid, "needs insert_line"},
			{"insert nothing", "ok.txt", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str("")}, fileedit.ErrInvalid, "new_str is empty"},
			{"empty old_str", "ok.txt", fileedit.Command{Command: "str_replace", OldStr: str(""), NewStr: str("x")}, fileedit.ErrInvalid, "old_str is empty"},
			{"no old_str", "ok.txt", fileedit.Command{Command: "str_replace", NewStr: str("x")}, fileedit.ErrInvalid, "needs old_str"},
			{"create without text", "new.txt", fileedit.Command{Command: "create"}, fileedit.ErrInvalid, "needs file_text"},
			{"misplaced argument", "ok.txt", fileedit.Command{Command: "view", OldStr: str("one")}, fileedit.ErrInvalid, "old_str is not an argument of view"},
			{"unknown command", "ok.txt", fileedit.Command{Command: "undo_edit"}, fileedit.ErrInvalid, "command must be"},
			{"view_range of one", "ok.txt", fileedit.Command{Command: "view", ViewRange: []int{1}}, fileedit.ErrInvalid, "[start, end]"},
			{"view_range from 0", "ok.txt", fileedit.Command{Command: "view", ViewRange: []int{0, 1}}, fileedit.ErrInvalid, "lines 1 to 2"},
			{"view_range past the end", "ok.txt", fileedit.Command{Command: "view", ViewRange: []int{3, -1}}, fileedit.ErrInvalid, "lines 1 to 2"},
			{"view_range backwards", "ok.txt", fileedit.Command{Command: "view", ViewRange: []int{2, 1}}, fileedit.ErrInvalid, "before its start"},
		}
		for _, c := range cases {
			_, err := e.Do(fsys, c.path, c.cmd)
			if !errors.Is(err, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, err, c.want)
				continue
			}
			var pub interface{ Public() string }
			if !errors.As(err, &pub) || !strings.Contains(pub.Public(), c.says) || strings.Contains(pub.Public(), dir) {
				t.Errorf("%s: public message %q (want it to say %q, and no host path)", c.name, pub.Public(), c.says)
			}
		}
		if got := read(t, outside, "secret.txt"); got != "secret\n" {
			t.Fatalf("the file outside changed: %q", got)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
			t.Fatal("a file was created outside")
		}
		if got := read(t, dir, "ok.txt"); got != "one\ntwo\n" {
			t.Fatalf("ok.txt changed: %q", got)
		}
		noTemporaries(t, dir)
	})
}

// racingFS writes the file behind the edit's back once the edit has read
// it, as the session's code might.
type racingFS struct {
	workspace.FS
	once  sync.Once
	write func()
}

type racingFile struct {
	io.ReadSeekCloser
	r *racingFS
}

func (f racingFile) Close() error {
	err := f.ReadSeekCloser.Close()
	f.r.once.Do(f.r.write)
	return err
}

func (r *racingFS) OpenFile(p string) (io.ReadSeekCloser, fs.FileInfo, error) {
	f, info, err := r.FS.OpenFile(p)
	if err != nil {
		return nil, nil, err
	}
	return racingFile{f, r}, info, nil
}

// TestAConcurrentWriteIsNotLost: the code writing the file while an edit
// works on it makes the edit fail (ErrChanged), and the code's content
// stays.
func TestAConcurrentWriteIsNotLost(t *testing.T) {
	each(t, func(t *testing.T, dir string, fsys workspace.FS) {
		e := editor(t, fileedit.Config{})
		write(t, dir, "f.txt", "v1\n")
		racing := &racingFS{FS: fsys, write: func() { write(t, dir, "f.txt", "v1 by the code\n") }}
		_, err := e.Do(racing, "f.txt", fileedit.Command{Command: "str_replace", OldStr: str("v1"), NewStr: str("v2")})
		if !errors.Is(err, fileedit.ErrChanged) {
			t.Fatalf("edit over a concurrent write: %v", err)
		}
		if got := read(t, dir, "f.txt"); got != "v1 by the code\n" {
			t.Fatalf("the concurrent write was lost: %q", got)
		}
	})
}

// TestConcurrentEditsAreSerialised: many edits of one file at once all
// take effect (none reads a version another is replacing).
func TestConcurrentEditsAreSerialised(t *testing.T) {
	each(t, func(t *testing.T, dir string, fsys workspace.FS) {
		e := editor(t, fileedit.Config{})
		write(t, dir, "log.txt", "end\n")
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.Do(fsys, "log.txt", fileedit.Command{Command: "insert", InsertLine: num(0), NewStr: str(fmt.Sprintf("line %d", i))})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		got := read(t, dir, "log.txt")
		for i := range n {
			if !strings.Contains(got, fmt.Sprintf("line %d\n", i)) {
				t.Errorf("line %d lost:\n%s", i, got)
			}
		}
	})
}

// TestReadersNeverSeeAHalfWrittenFile: while edits replace a large file
// over and over, a reader (as the kernel would be) always reads one whole
// version.
func TestReadersNeverSeeAHalfWrittenFile(t *testing.T) {
	each(t, func(t *testing.T, dir string, fsys workspace.FS) {
		e := editor(t, fileedit.Config{})
		body := strings.Repeat("the same line, again and again\n", 20000) // 620 kB
		size := len("version 000\n") + len(body) + len("end\n")
		write(t, dir, "big.txt", "version 000\n"+body+"end\n")
		const edits = 20
		var done atomic.Bool
		var reads, bad atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				b, err := os.ReadFile(filepath.Join(dir, "big.txt"))
				if err != nil || len(b) != size || !bytes.HasPrefix(b, []byte("version ")) || !bytes.HasSuffix(b, []byte("end\n")) {
					bad.Add(1)
				}
				reads.Add(1)
			}
		}()
		for i := range edits {
			from, to := fmt.Sprintf("version %03d\n", i), fmt.Sprintf("version %03d\n", i+1)
			if _, err := e.Do(fsys, "big.txt", fileedit.Command{Command: "str_replace", OldStr: &from, NewStr: &to}); err != nil {
				done.Store(true)
				wg.Wait()
				t.Fatal(err)
			}
		}
		done.Store(true)
		wg.Wait()
		if bad.Load() > 0 || reads.Load() == 0 {
			t.Fatalf("%d of %d reads saw a partial file", bad.Load(), reads.Load())
		}
		t.Logf("%d reads during %d edits, all whole", reads.Load(), edits)
	})
}
