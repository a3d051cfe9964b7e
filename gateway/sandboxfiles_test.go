package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/workspace"
)

// TestSandboxFiles: the sandbox's own file system, read-only, by absolute
// path, as the sandbox's user sees it (E2B code reads
// /proc/sys/kernel/random/boot_id so): /proc/self/status is the reading
// process's in the sandbox (its uid, not the gateway's root); a symlink,
// a directory, a missing path, an unreadable file and one too large each
// get their answer; a workspace path is the workspace's file; bad paths
// are 400.
func TestSandboxFiles(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			s := e.create(keyA, nil)
			base := "/v1/sessions/" + s.ID + "/sandbox-files"
			get := func(method, p string) (int, []byte) {
				t.Helper()
				st, _, b := e.raw(method, base+"?path="+url.QueryEscape(p), nil, "")
				return st, b
			}
			info := func(p string) (int, workspace.Entry) {
				t.Helper()
				var out workspace.Entry
				st := e.call(keyA, "GET", base+"/info?path="+url.QueryEscape(p), nil, &out)
				return st, out
			}
			x := e.exec(keyA, s.ID, "import os\nopen('in-ws.txt', 'w').write('ws!')\nboot = '/proc/sys/kernel/random/boot_id'\nprint(os.getuid(), open(boot).read().strip() if os.path.exists(boot) else '-')", 60)
			uid, bootID, _ := strings.Cut(strings.TrimSpace(x.Stdout), " ")
			if x.Status != "ok" || uid == "0" || bootID == "" {
				t.Fatalf("the kernel's uid and boot id: %+v", x)
			}

			// gVisor has no boot_id: the gateway sees what the kernel sees.
			if st, b := get("GET", "/proc/sys/kernel/random/boot_id"); bootID == "-" && st != http.StatusNotFound ||
				bootID != "-" && (st != http.StatusOK || strings.TrimSpace(string(b)) != bootID) {
				t.Fatalf("boot_id: %d %q, the kernel reads %q", st, b, bootID)
			}
			st, b := get("GET", "/proc/self/status")
			if st != http.StatusOK || !strings.Contains(string(b), "\nUid:\t"+uid+"\t") {
				t.Fatalf("/proc/self/status is not read as the sandbox's user %s: %d %q", uid, st, b)
			}
			if st, _ := get("HEAD", "/proc/self/status"); st != http.StatusOK {
				t.Fatalf("HEAD /proc/self/status: %d", st)
			}
			if st, e := info("/proc/self"); st != http.StatusOK || e.Type != "symlink" || e.Path != "/proc/self" || e.Name != "self" {
				t.Fatalf("/proc/self: %d %+v", st, e)
			} else if _, err := strconv.Atoi(e.SymlinkTarget); err != nil {
				t.Fatalf("/proc/self points to %q, not a pid", e.SymlinkTarget)
			}
			if st, e := info("/etc/../etc/passwd"); st != http.StatusOK || e.Path != "/etc/passwd" || e.Type != "file" || e.Size <= 0 {
				t.Fatalf("passwd: %d %+v", st, e)
			}
			if st, e := info("/etc"); st != http.StatusOK || e.Type != "dir" {
				t.Fatalf("/etc: %d %+v", st, e)
			}
			if st, _ := get("GET", "/etc"); st != http.StatusConflict {
				t.Fatalf("GET a directory: %d", st)
			}
			for _, p := range []string{"/etc", "/home/user", "/workspace/in-ws.txt"} { // HEAD: whether it exists
				if st, _ := get("HEAD", p); st != http.StatusOK {
					t.Fatalf("HEAD %s: %d", p, st)
				}
			}
			for _, m := range []string{"GET", "HEAD"} {
				if st, _ := get(m, "/no/such/file"); st != http.StatusNotFound {
					t.Fatalf("%s a missing file: %d", m, st)
				}
				if st, _ := get(m, "/home/user/no-such-file"); st != http.StatusNotFound {
					t.Fatalf("%s a missing workspace file: %d", m, st)
				}
			}
			if st, _ := info("/no/such/file"); st != http.StatusNotFound {
				t.Fatalf("info of a missing file: %d", st)
			}
			// A path is one word in the sandbox's shell, never code.
			for _, p := range []string{"/tmp/x'$(touch /home/user/pwned)'", "/tmp/$(touch /home/user/pwned)", "/tmp/`touch /home/user/pwned`"} {
				if st, _ := get("GET", p); st != http.StatusNotFound {
					t.Fatalf("%q: %d", p, st)
				}
				if st, _ := info(p); st != http.StatusNotFound {
					t.Fatalf("info %q: %d", p, st)
				}
			}
			if st, _ := get("GET", "/home/user/pwned"); st != http.StatusNotFound {
				t.Fatalf("a path ran as code in the sandbox: %d", st)
			}
			if st, b := get("GET", "/etc/shadow"); st != http.StatusForbidden && st != http.StatusNotFound {
				t.Fatalf("/etc/shadow is readable by the sandbox's user: %d %.40q", st, b)
			}
			if st, b := get("GET", "/dev/zero"); st != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "copy it into the workspace") {
				t.Fatalf("/dev/zero: %d %.200q", st, b)
			}

			// The workspace's own files, by their sandbox path.
			if st, b := get("GET", "/home/user/in-ws.txt"); st != http.StatusOK || string(b) != "ws!" {
				t.Fatalf("a workspace file: %d %q", st, b)
			}
			if st, e := info("/workspace/in-ws.txt"); st != http.StatusOK || e.Type != "file" || e.Size != 3 || e.Path != "/workspace/in-ws.txt" {
				t.Fatalf("a workspace file's info: %d %+v", st, e)
			}
			if st, e := info("/home/user"); st != http.StatusOK || e.Type != "dir" {
				t.Fatalf("the workspace: %d %+v", st, e)
			}

			for _, q := range []string{"", "?path=", "?path=etc/passwd", "?path=" + url.QueryEscape("/etc/\npasswd")} {
				var out map[string]any
				if st := e.call(keyA, "GET", base+q, nil, &out); st != http.StatusBadRequest {
					t.Fatalf("%q: %d %v", q, st, out)
				}
			}
			other := e.create(keyA, nil) // the route is the session's: another's id is another sandbox
			if st := e.call(keyB, "GET", "/v1/sessions/"+other.ID+"/sandbox-files?path=/etc/hostname", nil, &json.RawMessage{}); st != http.StatusNotFound {
				t.Fatalf("another tenant's session: %d", st)
			}
		})
	}
}
