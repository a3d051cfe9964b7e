package runtimetest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// plantCode plants, from inside the kernel, what would steer or follow
// the next kernel if it survived a restart: an IPython startup file and
// kernel config under IPYTHONDIR, files in every cache and config
// directory the kernel's environment names, a file in the ipc directory
// and in each of the extra scratch directories; and, in /tmp (IPYTHONDIR's
// parent), shapes a cleaner must cope with: a 2,000-deep chain of
// directories, unreadable directories, symlinks into the workspace (whose
// target must survive), a fifo, and names in a cleaner's way. It prints
// the planted paths, one per line.
const plantCode = `import os, pathlib
from ipykernel.kernelapp import IPKernelApp
ws = os.getcwd()
open("keep.txt", "w").write("kept")
ipy = pathlib.Path(os.environ["IPYTHONDIR"], "profile_default")
(ipy / "startup").mkdir(parents=True, exist_ok=True)
(ipy / "startup" / "00-planted.py").write_text("PLANTED = 1\nopen(%r, 'w').write('ran')\n" % os.path.join(ws, "planted-ran"))
(ipy / "ipython_kernel_config.py").write_text("c.IPKernelApp.exec_lines = ['PLANTED_CONFIG = 1']\n")
(ipy / "ipython_config.py").write_text("c.InteractiveShellApp.exec_lines = ['PLANTED_CONFIG = 1']\n")
planted = [str(ipy / "startup" / "00-planted.py"), str(ipy / "ipython_kernel_config.py")]
for var in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
    d = pathlib.Path(os.environ[var]); d.mkdir(parents=True, exist_ok=True); (d / "planted").write_text("x")
    planted.append(str(d / "planted"))
for d in [os.path.dirname(IPKernelApp.instance().connection_file)] + EXTRA:
    p = os.path.join(d, "planted-" + str(os.getpid())); open(p, "w").write("x"); planted.append(p)
tmp = os.path.dirname(os.environ["IPYTHONDIR"])
top = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
os.mkdir("deep", dir_fd=top)
cur = os.open("deep", os.O_RDONLY | os.O_DIRECTORY, dir_fd=top)
for i in range(2000):
    os.mkdir("d", dir_fd=cur)
    nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=cur); os.close(cur); cur = nxt
os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=cur)); os.close(cur); os.close(top)
locked = pathlib.Path(tmp, "locked"); (locked / "sub").mkdir(parents=True); (locked / "sub" / "f").write_text("x")
os.chmod(locked / "sub", 0); os.chmod(locked, 0)
os.symlink(ws, os.path.join(tmp, "to-workspace")); os.symlink(os.path.join(ws, "keep.txt"), os.path.join(tmp, "to-keep"))
pathlib.Path(tmp, ".glassroom-clear-1", "x").mkdir(parents=True); pathlib.Path(tmp, ".glassroom-clear-2").write_text("x")
os.mkfifo(os.path.join(tmp, "fifo"))
planted += [os.path.join(tmp, n) for n in ("deep", "locked", "to-workspace", "to-keep", ".glassroom-clear-1", ".glassroom-clear-2", "fifo")]
print("\n".join(planted))`

// checkCode prints, in the restarted kernel, whether the planted startup
// file or config ran, the workspace file the symlinks pointed at, and
// then each planted path still there (PLANTED holds the list).
const checkCode = `import os
print("PLANTED" in dir(), "PLANTED_CONFIG" in dir(), os.path.exists("planted-ran"), open("keep.txt").read())
for p in PATHS:
    if os.path.lexists(p):
        print("left:", p)`

// RestartStartsClean checks that a restart of k's sandbox starts the next
// kernel clean: what the code planted, before the restart, in the
// kernel's start-up and scratch state (IPYTHONDIR, the caches, /tmp, the
// ipc directory, and each of extraScratch as the kernel sees it, such as
// /dev/shm) is gone, and an IPython startup file planted there does not
// run; the workspace is kept. k is reconnected to the new kernel.
func RestartStartsClean(t *testing.T, k *Kernel, extraScratch ...string) {
	t.Helper()
	extra := make([]string, len(extraScratch))
	for i, d := range extraScratch {
		extra[i] = strconv.Quote(d)
	}
	out, ename := k.Run(t, "EXTRA = ["+strings.Join(extra, ", ")+"]\n"+plantCode)
	if ename != "" {
		t.Fatalf("planting: %s", out)
	}
	planted := strings.Fields(out)
	if len(planted) < 15 {
		t.Fatalf("planting: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	k.Reconnect(t)
	quoted := make([]string, len(planted))
	for i, p := range planted {
		quoted[i] = strconv.Quote(p)
	}
	out, ename = k.Run(t, "PATHS = ["+strings.Join(quoted, ", ")+"]\n"+checkCode)
	if ename != "" || strings.TrimSpace(out) != "False False False kept" {
		t.Fatalf("after the restart (want: no planted startup code or config ran, no planted file left, the workspace kept):\n%s", out)
	}
}
