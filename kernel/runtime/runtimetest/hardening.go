package runtimetest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
)

// HardeningOptions says what differs between runtimes.
type HardeningOptions struct {
	// DeniedSocketErrno is the errno of a socket in a refused family
	// (EAFNOSUPPORT from the local runtime's filter, EPERM from Docker's
	// seccomp profiles).
	DeniedSocketErrno int
	// DeniedSyscallErrno is the errno of a refused system call (bpf,
	// io_uring_setup, unshare, ...): EPERM when zero.
	DeniedSyscallErrno int
	// OwnProc is set for runtimes whose kernel sees an emulated /proc
	// (gVisor): its oom_score_adj is not the host's, which the runtime's
	// own tests check.
	OwnProc bool
	// OOMScoreAdj is the kernel's oom_score_adj: 500 when zero.
	OOMScoreAdj int
}

// Hardening checks, against a real kernel of rt, the protections every
// runtime must give: the session environment policy, the system calls and
// socket families its seccomp filter refuses (threads and fork working),
// the OOM killer's preference, a bounded ipc directory, a kernel start
// that no workspace file can steer, and output streams sent in bounded
// chunks.
func Hardening(t *testing.T, rt Starter, opts HardeningOptions, newID func() string) {
	if opts.DeniedSyscallErrno == 0 {
		opts.DeniedSyscallErrno = int(syscall.EPERM)
	}
	t.Run("environment policy", func(t *testing.T) {
		for name, why := range map[string]string{"PYTHONPATH": "interpreter", "LD_PRELOAD": "loader", "JUPYTER_CONFIG_DIR": "start-up", "HOME": "glassroom sets it",
			"R_LIBS_USER": "R at kernel start", "R_PROFILE_USER": "R at kernel start", "DENO_DIR": "Deno at kernel start", "NODE_OPTIONS": "Deno at kernel start"} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			sb, err := rt.Start(ctx, sandbox.Spec{ID: newID(), Env: map[string]string{name: "/workspace"}})
			cancel()
			if err == nil {
				_ = sb.Close(context.Background())
			}
			if !errors.Is(err, sandbox.ErrBadSpec) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), why) {
				t.Errorf("env %s: want ErrBadSpec naming it and why (%q), got %v", name, why, err)
			}
		}
	})
	k := Start(t, rt, sandbox.Spec{ID: newID(), Env: map[string]string{"MY_SETTING": "ok"}})
	if out, _ := k.Run(t, "import os; print(os.environ['MY_SETTING'])"); strings.TrimSpace(out) != "ok" {
		t.Fatalf("allowed variable not set: %q", out)
	}
	t.Run("socket families", func(t *testing.T) {
		out, _ := k.Run(t, `import socket
res = []
for fam, typ in [(1, socket.SOCK_STREAM), (2, socket.SOCK_STREAM), (10, socket.SOCK_DGRAM), (16, socket.SOCK_RAW), (17, socket.SOCK_RAW), (38, socket.SOCK_SEQPACKET), (40, socket.SOCK_STREAM), (5, socket.SOCK_DGRAM), (30, socket.SOCK_SEQPACKET)]:
    try:
        socket.socket(fam, typ).close(); res.append("%d:ok" % fam)
    except OSError as e:
        res.append("%d:%d" % (fam, e.errno))
print(" ".join(res))`)
		got := strings.Fields(strings.TrimSpace(out))
		want := map[string]bool{"1:ok": true, "2:ok": true, "10:ok": true, "16:ok": true}
		for _, g := range got {
			fam, res, _ := strings.Cut(g, ":")
			allowed := fam == "1" || fam == "2" || fam == "10" || fam == "16"
			switch {
			case allowed && !want[g]:
				t.Errorf("family %s refused (%s)", fam, res)
			case !allowed && res != strconv.Itoa(opts.DeniedSocketErrno):
				t.Errorf("family %s: want errno %d, got %s", fam, opts.DeniedSocketErrno, res)
			}
		}
		if len(got) != 9 {
			t.Fatalf("output %q", out)
		}
	})
	t.Run("system calls into the host kernel's attack surface are refused", func(t *testing.T) {
		// In a child interpreter, so that a call let through (a new user
		// namespace) does not change the kernel itself.
		out, ename := k.Run(t, `import subprocess, sys
probe = """
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
th = threading.Thread(target=lambda: None); th.start(); th.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
works = "threads and fork work: %d" % (os.waitpid(pid, 0)[1] >> 8)
# ptrace last: a process that PTRACE_TRACEME let through stops at its next signal.
calls = [("bpf", 321, 0, 0, 0), ("io_uring_setup", 425, 1, 0), ("perf_event_open", 298, 0, 0, -1, -1, 0),
         ("keyctl", 250, 0), ("unshare(CLONE_NEWUSER)", 272, 0x10000000), ("unshare(CLONE_NEWNS)", 272, 0x20000),
         ("setns", 308, -1, 0), ("ptrace(PTRACE_TRACEME)", 101, 0, 0, 0, 0)]
print(" ".join("%s=%d" % (c[0], errno_of(*c[1:])) for c in calls))
print(works, flush=True)
os._exit(0)
"""
r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
print(r.stdout + r.stderr)`)
		if ename != "" {
			t.Fatalf("%s: %s", ename, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || lines[1] != "threads and fork work: 7" {
			t.Fatalf("threads or fork broken by the seccomp profile:\n%s", out)
		}
		calls := strings.Fields(lines[0])
		for _, c := range calls {
			if name, errno, _ := strings.Cut(c, "="); errno != strconv.Itoa(opts.DeniedSyscallErrno) {
				t.Errorf("%s: errno %s, want %d (refused)", name, errno, opts.DeniedSyscallErrno)
			}
		}
		if len(calls) != 8 {
			t.Fatalf("output %q", out)
		}
	})
	t.Run("the OOM killer picks the kernel before the host's processes", func(t *testing.T) {
		if opts.OwnProc {
			t.Skip("the kernel's /proc is emulated; the runtime's tests check the host's oom_score_adj")
		}
		out, _ := k.Run(t, "print(open('/proc/self/oom_score_adj').read().strip())")
		want := opts.OOMScoreAdj
		if want == 0 {
			want = 500 // a command's is 1000 (Commands)
		}
		if strings.TrimSpace(out) != strconv.Itoa(want) {
			t.Fatalf("oom_score_adj %q, want %d", out, want)
		}
	})
	t.Run("the socket directory is a small tmpfs", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("tmpfs mounts need root")
		}
		out, ename := k.Run(t, "open('/run/glassroom/ipc/fill', 'wb').write(b'x' * (8 << 20))")
		if ename != "OSError" || !strings.Contains(out, "No space left") {
			t.Fatalf("8 MiB into the socket directory: %s %s", ename, out)
		}
		k.Run(t, "import os; os.remove('/run/glassroom/ipc/fill')")
	})
	t.Run("output streams flush in bounded chunks", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		biggest, total := 0, 0
		_, err := k.Client.Execute(ctx, "import sys\nfor _ in range(20): sys.stdout.write('z' * 1_000_000)\nprint('end')", kernel.ExecuteOptions{}, func(ev kernel.Event) {
			if ev.Kind == kernel.EventStream {
				biggest = max(biggest, len(ev.Text))
				total += len(ev.Text)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if biggest > 128<<10 || biggest == 0 {
			t.Fatalf("largest stream message %d bytes (want ≤ 128 KiB)", biggest)
		}
		if k.Client.Cuts() != 0 {
			t.Fatalf("%d messages cut for size", k.Client.Cuts())
		}
		t.Logf("largest stream message %d bytes, %d bytes received", biggest, total)
	})
	t.Run("history is kept in memory, not written to a database", func(t *testing.T) {
		// No SQLite file and no saving thread woken after every cell (under
		// load that thread cost ~10% of the throughput), but the session's
		// history still answers %history and Jupyter's history_request.
		k.Run(t, "history_probe = 1")
		out, ename := k.Run(t, "import os\n"+
			"hm = get_ipython().history_manager\n"+
			"print(hm.hist_file, hm.save_thread, any(c == 'history_probe = 1' for _, _, c in hm.get_tail(50)))\n"+
			"print(os.path.exists('/tmp/ipython/profile_default/history.sqlite'))")
		if ename != "" || out != ":memory: None True\nFalse\n" {
			t.Fatalf("history: %q %s", out, ename)
		}
	})
	t.Run("workspace files cannot steer the kernel's start", func(t *testing.T) {
		// The Python entry of the language table (RunLanguages runs every
		// language's).
		py := Languages()[0]
		plant(t, k.Sandbox, py.PlantFiles)
		if py.PlantCode != "" { // what only the kernel can plant (the user site directory)
			if out, ename := k.Run(t, py.PlantCode); ename != "" || strings.Contains(strings.ToLower(out), "false") {
				t.Fatalf("planting from the kernel: %q %s", out, ename)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := k.Sandbox.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		k2 := k
		k2.Reconnect(t)
		out, _ := k2.Run(t, py.Check+"; import os; print(os.path.exists("+strconv.Quote(sandbox.WorkDir+"/"+Steered)+"))")
		if strings.TrimSpace(out) != py.CheckWant+"\nFalse" {
			t.Fatalf("after restart: %q (steered by: %q)", out, takeWorkspaceFile(t, k.Sandbox, Steered))
		}
	})
}

// chownTree gives every directory from ws down to file, and file, to the
// workspace's owner, as if the kernel had written them.
func chownTree(ws, file string) {
	var st os.FileInfo
	st, err := os.Stat(ws)
	if err != nil {
		return
	}
	uid, gid := ownerOf(st)
	for p := file; strings.HasPrefix(p, ws+"/"); p = filepath.Dir(p) {
		_ = os.Lchown(p, uid, gid)
	}
}

// plantRemote writes files (paths relative to the workspace) through the
// sandbox's own workspace access, for runtimes whose workspace is not on
// this host.
func plantRemote(t *testing.T, sb sandbox.Sandbox, files map[string]string) {
	t.Helper()
	fsys := openRemote(t, sb)
	for p, body := range files {
		dir := ""
		for _, part := range strings.Split(filepath.ToSlash(filepath.Dir(p)), "/") {
			if part == "." {
				continue
			}
			dir = filepath.Join(dir, part)
			if err := fsys.MakeDir(dir); err != nil {
				if _, serr := fsys.Stat(dir); serr != nil { // not there already
					t.Fatalf("mkdir %s: %v", dir, err)
				}
			}
		}
		if _, err := fsys.Write(p, strings.NewReader(body)); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
}

// plant writes files (paths relative to the workspace) into sb's
// workspace: on this host, or through its WorkspaceOpener (a pod's).
func plant(t *testing.T, sb sandbox.Sandbox, files map[string]string) {
	t.Helper()
	if ws := sb.Workspace(); ws != "" {
		PlantFiles(t, ws, files)
		return
	}
	plantRemote(t, sb, files)
}

// takeWorkspaceFile returns what the file p (relative to the workspace)
// of sb holds, nil when there is none, and removes it.
func takeWorkspaceFile(t *testing.T, sb sandbox.Sandbox, p string) []byte {
	t.Helper()
	if ws := sb.Workspace(); ws != "" {
		b, _ := os.ReadFile(filepath.Join(ws, p))
		if err := os.Remove(filepath.Join(ws, p)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	fsys := openRemote(t, sb)
	f, _, err := fsys.OpenFile(p)
	if err != nil {
		return nil // not there
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if err := fsys.Remove(p); err != nil {
		t.Fatalf("remove %s: %v", p, err)
	}
	return b
}

// openRemote opens sb's workspace through its WorkspaceOpener (a
// workspace not on this host); it is closed when the test ends.
func openRemote(t *testing.T, sb sandbox.Sandbox) workspace.FS {
	t.Helper()
	opener, ok := sb.(sandbox.WorkspaceOpener)
	if !ok {
		t.Fatalf("%T has no workspace on this host and no WorkspaceOpener", sb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fsys, tracker, err := opener.OpenWorkspace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fsys.Close(); _ = tracker.Close() })
	return fsys
}
