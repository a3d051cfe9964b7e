package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
)

type editAnswer struct {
	api.EditResult
	Error struct{ Code, Message string }
}

// TestEditFiles drives PATCH /v1/sessions/{id}/files/{path} on a real
// gateway (local runtime) whose kernel reads what the edits wrote: each
// command, str_replace's exactly-one-match rule (a refused edit leaves the
// file byte-identical), hostile paths and arguments, and a kernel reading
// the file while it is edited never sees half of it.
func TestEditFiles(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Gateway: gateway.Config{MaxEditBytes: 1 << 20}})
	var s api.Session
	if st := g.Call(t, "Bearer "+apptest.KeyA, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
		t.Fatalf("create session: %d", st)
	}
	base := "/v1/sessions/" + s.ID
	edit := func(t *testing.T, path string, body any, want int) editAnswer {
		t.Helper()
		var a editAnswer
		if st := g.Call(t, "Bearer "+apptest.KeyA, "PATCH", base+"/files/"+path, body, &a); st != want {
			t.Fatalf("PATCH %s %v: %d, want %d: %+v", path, body, st, want, a)
		}
		return a
	}
	run := func(t *testing.T, code string) string {
		t.Helper()
		var x api.Execution
		body, _ := json.Marshal(map[string]any{"code": code})
		if st := g.Call(t, "Bearer "+apptest.KeyA, "POST", base+"/execute", string(body), &x); st != http.StatusOK || x.Status != api.StatusOK {
			t.Fatalf("execute %q: %d %+v", code, st, x)
		}
		return x.Stdout
	}
	download := func(t *testing.T, path string) []byte {
		t.Helper()
		return g.Fetch(t, "Bearer "+apptest.KeyA, "GET", base+"/files/"+path, nil, http.StatusOK)
	}

	t.Run("commands, read by the kernel", func(t *testing.T) {
		a := edit(t, "src/app.py", map[string]any{"command": "create", "file_text": "def greet():\n    return 'hello'\n\nprint(greet())\n"}, http.StatusCreated)
		if !a.Created || a.Path != "src/app.py" || a.Lines != 4 || a.Command != "create" {
			t.Fatalf("create: %+v", a)
		}
		if out := run(t, "import runpy; _ = runpy.run_path('src/app.py')"); out != "hello\n" {
			t.Fatalf("the kernel ran %q", out)
		}
		a = edit(t, "src/app.py", map[string]any{"command": "str_replace", "old_str": "'hello'", "new_str": "'goodbye'"}, http.StatusOK)
		if !strings.Contains(a.Text, "     2\t    return 'goodbye'\n") || a.StartLine != 1 || a.EndLine != 4 {
			t.Fatalf("str_replace: %+v", a)
		}
		edit(t, "/home/user/src/app.py", map[string]any{"command": "insert", "insert_line": 0, "new_str": "import sys"}, http.StatusOK)
		edit(t, "/workspace/src/app.py", map[string]any{"command": "insert", "insert_line": 5, "new_str": "print(greet().upper(), file=sys.stdout)"}, http.StatusOK)
		if out := run(t, "_ = runpy.run_path('/home/user/src/app.py')"); out != "goodbye\nGOODBYE\n" {
			t.Fatalf("the kernel ran %q", out)
		}
		a = edit(t, "src/app.py", map[string]any{"command": "view", "view_range": []int{2, 3}}, http.StatusOK)
		if a.Text != "     2\tdef greet():\n     3\t    return 'goodbye'\n" || a.Lines != 6 || a.StartLine != 2 || a.EndLine != 3 {
			t.Fatalf("view: %+v", a)
		}
		// The kernel's own file: an edit keeps its mode.
		run(t, "import os; open('run.sh', 'w').write('#!/bin/sh\\necho one\\n'); os.chmod('run.sh', 0o755)")
		edit(t, "run.sh", map[string]any{"command": "str_replace", "old_str": "one", "new_str": "two"}, http.StatusOK)
		if out := run(t, "import subprocess; print(subprocess.run(['./run.sh'], capture_output=True, text=True).stdout, end='')"); out != "two\n" {
			t.Fatalf("the edited script ran %q", out)
		}
		a = edit(t, "src/app.py", map[string]any{"command": "create", "file_text": "print('replaced')\n"}, http.StatusOK)
		if a.Created || a.Size != 18 {
			t.Fatalf("create over a file: %+v", a)
		}
	})

	t.Run("str_replace needs exactly one match and changes nothing otherwise", func(t *testing.T) {
		edit(t, "dup.py", map[string]any{"command": "create", "file_text": "x = 1\ny = 2\nx = 1\n"}, http.StatusCreated)
		before := download(t, "dup.py")
		mtime := run(t, "import os; print(os.stat('dup.py').st_mtime_ns)")
		a := edit(t, "dup.py", map[string]any{"command": "str_replace", "old_str": "x = 1", "new_str": "x = 3"}, http.StatusConflict)
		if a.Error.Code != "multiple_matches" || !strings.Contains(a.Error.Message, "2 matches, at lines 1 and 3") {
			t.Fatalf("two matches: %+v", a.Error)
		}
		a = edit(t, "dup.py", map[string]any{"command": "str_replace", "old_str": "z = 1", "new_str": "z = 3"}, http.StatusConflict)
		if a.Error.Code != "no_match" || !strings.Contains(a.Error.Message, "0 matches") {
			t.Fatalf("no match: %+v", a.Error)
		}
		if after := download(t, "dup.py"); !bytes.Equal(after, before) {
			t.Fatalf("a refused str_replace changed the file: %q -> %q", before, after)
		}
		if m := run(t, "print(os.stat('dup.py').st_mtime_ns)"); m != mtime {
			t.Fatalf("a refused str_replace touched the file: mtime %s -> %s", mtime, m)
		}
		if out := run(t, "print(sorted(f for f in os.listdir('.') if f.startswith('.glassroom')))"); out != "[]\n" {
			t.Fatalf("temporary files left: %s", out)
		}
	})

	t.Run("hostile input", func(t *testing.T) {
		run(t, "import os\nos.symlink('/etc', 'etc')\nos.symlink('/etc/hostname', 'hostname')\nos.mkdir('adir')\n"+
			"open('bin.dat', 'wb').write(b'\\x89PNG\\x00\\x00')\nopen('ok.txt', 'w').write('one\\ntwo\\n')")
		hostname, _ := os.ReadFile("/etc/hostname")
		bigNew := strings.Repeat("y", 1<<20+10)
		cases := []struct {
			name, path string
			body       any
			status     int
			code, says string
		}{
			{"traversal", "..%2f..%2fetc%2fpasswd", map[string]any{"command": "view"}, 400, "bad_path", "'..'"},
			{"encoded dots", "%2e%2e/x.txt", map[string]any{"command": "create", "file_text": "x"}, 400, "bad_path", "'..'"},
			{"absolute outside", "%2Fetc%2Fpasswd", map[string]any{"command": "view"}, 400, "bad_path", "absolute path outside /home/user"},
			{"symlinked dir", "etc/hostname", map[string]any{"command": "str_replace", "old_str": "a", "new_str": "b"}, 400, "bad_path", "path crosses a symlink: etc (a directory in the path is a symlink"},
			{"symlinked dir create", "etc/evil.txt", map[string]any{"command": "create", "file_text": "x"}, 400, "bad_path", "symlink: etc"},
			{"symlink", "hostname", map[string]any{"command": "insert", "insert_line": 0, "new_str": "pwned"}, 400, "bad_path", "symlink"},
			{"NUL in new_str", "ok.txt", `{"command":"str_replace","old_str":"one","new_str":"o\u0000e"}`, 400, "bad_request", "NUL"},
			{"NUL in file_text", "new.txt", `{"command":"create","file_text":"\u0000"}`, 400, "bad_request", "NUL"},
			{"insert_line out of range", "ok.txt", map[string]any{"command": "insert", "insert_line": 3, "new_str": "x"}, 400, "bad_request", "the file has 2 lines"},
			{"view_range out of range", "ok.txt", map[string]any{"command": "view", "view_range": []int{5, -1}}, 400, "bad_request", "lines 1 to 2"},
			{"unknown command", "ok.txt", map[string]any{"command": "delete"}, 400, "bad_request", "command must be"},
			{"no body", "ok.txt", nil, 400, "bad_request", "command must be"},
			{"unknown field", "ok.txt", map[string]any{"command": "view", "path": "x"}, 400, "bad_request", "unknown field"},
			{"misplaced argument", "ok.txt", map[string]any{"command": "insert", "insert_line": 0, "new_str": "x", "old_str": "one"}, 400, "bad_request", "old_str is not an argument of insert"},
			{"huge new_str", "ok.txt", map[string]any{"command": "str_replace", "old_str": "one", "new_str": bigNew}, 413, "too_large", "new_str has 1.0 MiB"},
			{"huge body", "ok.txt", map[string]any{"command": "create", "file_text": strings.Repeat("z", 3<<20)}, 413, "too_large", "request body exceeds"},
			{"binary", "bin.dat", map[string]any{"command": "view"}, 422, "not_text", "NUL bytes or invalid UTF-8"},
			{"directory", "adir", map[string]any{"command": "view"}, 409, "file_conflict", "is a directory"},
			{"missing", "nope.txt", map[string]any{"command": "str_replace", "old_str": "a", "new_str": "b"}, 404, "file_not_found", "nope.txt"},
		}
		for _, c := range cases {
			a := edit(t, c.path, c.body, c.status)
			if a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.says) || strings.Contains(a.Error.Message, "/tmp") {
				t.Errorf("%s: %d %+v, want %s saying %q", c.name, c.status, a.Error, c.code, c.says)
			}
		}
		if now, _ := os.ReadFile("/etc/hostname"); !bytes.Equal(now, hostname) {
			t.Fatal("/etc/hostname changed")
		}
		if _, err := os.Stat("/etc/evil.txt"); err == nil {
			t.Fatal("a file was created in /etc")
		}
		if got := download(t, "ok.txt"); string(got) != "one\ntwo\n" {
			t.Fatalf("ok.txt changed: %q", got)
		}
		// Another tenant cannot edit the session's files.
		var a editAnswer
		if st := g.Call(t, "Bearer "+apptest.KeyB, "PATCH", base+"/files/ok.txt", map[string]any{"command": "view"}, &a); st != http.StatusNotFound {
			t.Fatalf("key B edited A's file: %d %+v", st, a)
		}
	})

	t.Run("the kernel never reads a half-written file", func(t *testing.T) {
		body := strings.Repeat("a line that stays the same\n", 20000) // 540 kB
		size := len("version 000\n") + len(body) + len("end\n")
		edit(t, "big.txt", map[string]any{"command": "create", "file_text": "version 000\n" + body + "end\n"}, http.StatusCreated)
		// A thread of the kernel reads the file over and over until told
		// to stop; it has read it once before the execution returns.
		run(t, fmt.Sprintf(`import threading
stop, first, reads, bad = threading.Event(), threading.Event(), [0], []
def reader():
    while not stop.is_set():
        with open('big.txt', 'rb') as f:
            b = f.read()
        reads[0] += 1
        if len(b) != %d or not b.startswith(b'version ') or not b.endswith(b'end\n'):
            bad.append(len(b))
        first.set()
t = threading.Thread(target=reader)
t.start()
first.wait()`, size))
		const edits = 15
		for i := range edits {
			edit(t, "big.txt", map[string]any{"command": "str_replace", "old_str": fmt.Sprintf("version %03d\n", i), "new_str": fmt.Sprintf("version %03d\n", i+1)}, http.StatusOK)
		}
		out := run(t, "stop.set(); t.join(); print(reads[0], len(bad), bad[:5])")
		var reads, bad int
		fmt.Sscan(out, &reads, &bad)
		if reads == 0 || bad != 0 {
			t.Fatalf("the kernel's reads during %d edits: %s", edits, out)
		}
		if got := download(t, "big.txt"); !bytes.HasPrefix(got, []byte(fmt.Sprintf("version %03d\n", edits))) {
			t.Fatalf("after the edits: %q", got[:20])
		}
		t.Logf("the kernel read the file %d times during %d edits, always whole", reads, edits)
	})
}
