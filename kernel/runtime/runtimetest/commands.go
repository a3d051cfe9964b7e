package runtimetest

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
)

// CommandRun is what a command gave: its output by stream, and its exit.
type CommandRun struct {
	Stdout, Stderr string
	Exit           sandbox.CommandExit
}

// RunCommand starts spec in sb (a sandbox.CommandRunner), writes stdin (if
// any) and ends it, and reads the command to its end.
func RunCommand(t testing.TB, sb sandbox.Sandbox, spec sandbox.CommandSpec, stdin string) CommandRun {
	t.Helper()
	c := StartCommand(t, sb, spec)
	if stdin != "" {
		if err := c.Write([]byte(stdin)); err != nil {
			t.Fatalf("stdin: %v", err)
		}
	}
	if !spec.TTY {
		if err := c.CloseStdin(); err != nil {
			t.Fatalf("close stdin: %v", err)
		}
	}
	return ReadCommand(t, c)
}

// StartCommand starts spec in sb, killing the command when the test ends.
func StartCommand(t testing.TB, sb sandbox.Sandbox, spec sandbox.CommandSpec) sandbox.Command {
	t.Helper()
	cr, ok := sb.(sandbox.CommandRunner)
	if !ok {
		t.Fatalf("%T is no sandbox.CommandRunner", sb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cr.StartCommand(ctx, spec)
	if err != nil {
		t.Fatalf("start command %q: %v", spec.Cmd, err)
	}
	t.Cleanup(func() {
		_ = c.Kill()
		for range c.Output() {
		}
	})
	return c
}

// ReadCommand reads c's output to its end (at most two minutes).
func ReadCommand(t testing.TB, c sandbox.Command) CommandRun {
	t.Helper()
	var r CommandRun
	var out, errs strings.Builder
	timer := time.NewTimer(2 * time.Minute)
	defer timer.Stop()
	for {
		select {
		case o, ok := <-c.Output():
			if !ok {
				r.Stdout, r.Stderr, r.Exit = out.String(), errs.String(), c.Exit()
				return r
			}
			if o.Stream == sandbox.Stderr {
				errs.Write(o.Data)
			} else {
				out.Write(o.Data)
			}
		case <-timer.C:
			_ = c.Kill()
			t.Fatalf("the command did not end in 2 minutes; so far: %q %q", out.String(), errs.String())
		}
	}
}

// CommandsOptions says what differs between runtimes for Commands.
type CommandsOptions struct {
	// OwnProc is set for runtimes whose sandbox sees an emulated /proc
	// (gVisor): its oom_score_adj is not the host's, and the host's OOM
	// killer sees only the sandbox's own host processes (the sentry),
	// never a command apart from the kernels, so a command that fills the
	// sandbox's memory ends the kernels too (those subtests skip).
	OwnProc bool
	// PodNetwork is set for sandboxes whose network is their pod's (the
	// k8s runtime: a NetworkPolicy, not the sandbox, holds it): the
	// command sees the pod's interfaces, and must still not reach this
	// host's loopback.
	PodNetwork bool
	// OwnPIDs is set for runtimes that run each command in a pid
	// namespace of its own (local): its pid means nothing to the
	// sandbox's other processes, and PID is 0.
	OwnPIDs bool
}

// Commands exercises sandbox.CommandRunner on real sandboxes of rt: a
// command's output by stream and its exit status, its stdin, env and
// working directory, the sandbox's uid and workspace; a bad spec is a
// *sandbox.SpecError; Kill ends the command's whole process group and
// the kernel keeps its variables; a fork bomb and a memory hog in a
// command cost the kernel nothing; the OOM killer takes a command (at
// oom_score_adj 1000) before a kernel (at 500) that holds more memory; a session without a network gives a
// command none; a terminal is a real PTY (tty, echo, ^C, resize); the
// sandbox's Close ends its commands and refuses new ones.
func Commands(t *testing.T, rt Starter, opts CommandsOptions, newID func() string) {
	testkit.RealThing(t, "a real sandboxed kernel")
	k := Start(t, rt, sandbox.Spec{ID: newID(), Env: map[string]string{"SESSION_VAR": "from-session"},
		Limits: sandbox.Limits{MemoryMB: 1024, Pids: 256}})
	k.Run(t, "x = 'kept'\nimport os; os.makedirs('sub/dir', exist_ok=True)")
	keeps := func(when string) {
		t.Helper()
		if out, ename := k.Run(t, "print(x)"); ename != "" || strings.TrimSpace(out) != "kept" {
			t.Fatalf("the kernel's x %s: %q %s", when, out, ename)
		}
	}

	t.Run("output and exit status", func(t *testing.T) {
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "echo out; echo err >&2; exit 3"}, "")
		if r.Stdout != "out\n" || r.Stderr != "err\n" || r.Exit.Code != 3 {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("stdin, env, cwd, uid and workspace", func(t *testing.T) {
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{
			Cmd: "read a; echo got $a; echo $MINE $SESSION_VAR; pwd; id -u; id -un; echo ~",
			Cwd: "sub/dir", Env: map[string]string{"MINE": "mine"},
		}, "hello\n")
		if r.Exit.Code != 0 {
			t.Fatalf("got %+v", r)
		}
		uid, _ := k.Run(t, "import os; print(os.getuid())")
		// The uid has a name (sandbox.WriteIdentity), whoami works, home is the workspace.
		want := "got hello\nmine from-session\n" + sandbox.WorkDir + "/sub/dir\n" + strings.TrimSpace(uid) + "\n" + sandbox.IdentityUser + "\n" + sandbox.WorkDir + "\n"
		if r.Stdout != want {
			t.Fatalf("stdout %q, want %q", r.Stdout, want)
		}
		// A directory outside the workspace, as E2B's cwd="/" (the
		// launcher changes to it), and one that is missing.
		if r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "pwd", Cwd: "/usr/bin/../lib"}, ""); r.Stdout != "/usr/lib\n" || r.Exit.Code != 0 {
			t.Fatalf("cwd outside the workspace: %+v", r)
		}
		if r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "pwd", Cwd: "/no/such/dir"}, ""); r.Stdout != "" || r.Exit.Code != 1 || !strings.Contains(r.Stderr, "cwd /no/such/dir: No such file") {
			t.Fatalf("a missing cwd outside the workspace: %+v", r)
		}
		// The kernel sees what the command writes, and the other way.
		r = RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "echo from-command > /home/user/shared.txt"}, "")
		if out, _ := k.Run(t, "print(open('/home/user/shared.txt').read())"); strings.TrimSpace(out) != "from-command" {
			t.Fatalf("the kernel read %q", out)
		}
	})
	t.Run("python, curl and sudo, as E2B's templates have them", func(t *testing.T) {
		// sudo (the image's, or on the local runtime the same file at
		// sandbox.ShimDir) runs the command as the sandbox's user: it has
		// no root.
		cmd := "python -c 'print(6*7)' && curl --version >/dev/null && echo curl && sudo -E sh -c 'id -u' && sudo echo ok"
		uid, _ := k.Run(t, "import os; print(os.getuid())")
		want := "42\ncurl\n" + strings.TrimSpace(uid) + "\nok\n"
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: cmd}, "")
		if r.Exit.Code != 0 || r.Stdout != want {
			t.Fatalf("got %+v, want stdout %q", r, want)
		}
	})
	t.Run("no start-up files unless a login shell", func(t *testing.T) {
		// Code in the sandbox can write the workspace's start-up files; a
		// command's own env must not reach them, nor a terminal's shell.
		k.Run(t, `for f in ('.bash_profile', '.profile', '.bashrc', '.bash_login'):
    open(f, 'w').write('echo "planted ${MINE:-none} ' + f + '" >> /home/user/planted.log\n')`)
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "echo ran", Env: map[string]string{"MINE": "secret"}}, "")
		if r.Stdout != "ran\n" || r.Exit.Code != 0 {
			t.Fatalf("got %+v", r)
		}
		term := newTerminal(t, StartCommand(t, k.Sandbox, sandbox.CommandSpec{TTY: true}))
		term.send("echo term-$((40+2))\n")
		term.expect("term-42", "the terminal's answer")
		if out, _ := k.Run(t, "import os; print(os.path.exists('planted.log'))"); strings.TrimSpace(out) != "False" {
			log, _ := k.Run(t, "print(open('planted.log').read())")
			t.Fatalf("a planted start-up file ran in a command or terminal: %s", log)
		}
		// A login shell, asked for, reads them.
		r = RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "cat /home/user/planted.log", Env: map[string]string{"MINE": "mine"}, Login: true}, "")
		if !strings.Contains(r.Stdout, "planted mine .bash_profile") {
			t.Fatalf("a login shell did not read ~/.bash_profile: %+v", r)
		}
		k.Run(t, `import os
for f in ('.bash_profile', '.profile', '.bashrc', '.bash_login', 'planted.log'):
    os.remove(f)`)
	})
	t.Run("bad spec", func(t *testing.T) {
		cr := k.Sandbox.(sandbox.CommandRunner)
		for _, spec := range []sandbox.CommandSpec{
			{Cmd: ""}, {Cmd: "true", Cwd: "../etc"}, {Cmd: "true", Cwd: "missing"}, {Cmd: "true", Cwd: "/" + strings.Repeat("x", 5000)},
			{Cmd: "true", Env: map[string]string{"LD_PRELOAD": "x"}}, {Cmd: "a\x00b"},
			{Cmd: strings.Repeat("x", sandbox.MaxCommandBytes+1)},
		} {
			c, err := cr.StartCommand(context.Background(), spec)
			if !errors.Is(err, sandbox.ErrBadSpec) {
				if c != nil {
					_ = c.Kill()
					for range c.Output() {
					}
				}
				t.Fatalf("%.40q cwd=%q env=%v: %v, want a *SpecError", spec.Cmd, spec.Cwd, spec.Env, err)
			}
		}
	})
	t.Run("kill ends the process group", func(t *testing.T) {
		n := strconv.Itoa(100000 + int(time.Now().UnixNano()%100000))
		c := StartCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "sleep " + n + " & sleep " + n + " & echo started; wait"})
		first := <-c.Output()
		if string(first.Data) != "started\n" {
			t.Fatalf("first output %q", first.Data)
		}
		// Where the host cannot see the sandbox's processes (gVisor), the
		// kernel can: it shares the container's pid namespace.
		onHost := func() bool { return hostRuns("sleep\x00" + n) }
		inSandbox := func() bool {
			out, _ := k.Run(t, "import os\nprint(any(open('/proc/%s/cmdline' % p, 'rb').read().startswith(b'sleep\\x00"+n+"\\x00') for p in os.listdir('/proc') if p.isdigit()))")
			return strings.TrimSpace(out) == "True"
		}
		var runs func() bool
		testkit.Eventually(t, 30*time.Second, func() bool {
			switch {
			case onHost():
				runs = onHost
			case inSandbox():
				runs = inSandbox
			}
			return runs != nil
		}, "the command's sleeps to show on the host, or to the kernel (gVisor)")
		if err := c.Kill(); err != nil {
			t.Fatal(err)
		}
		r := ReadCommand(t, c)
		if r.Exit.Code == 0 {
			t.Fatalf("a killed command exited %+v", r.Exit)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { return !runs() }, "the command's sleeps to end")
		keeps("after a kill")
	})
	t.Run("pid", func(t *testing.T) {
		c := StartCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "sleep 1000"})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pid := c.PID(ctx)
		if opts.OwnPIDs {
			if pid != 0 {
				t.Fatalf("a command in its own pid namespace told pid %d", pid)
			}
			return
		}
		probe := func() int {
			return RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "kill -0 " + strconv.Itoa(pid) + " && grep -q sleep /proc/" + strconv.Itoa(pid) + "/cmdline"}, "").Exit.Code
		}
		if pid <= 0 || probe() != 0 {
			t.Fatalf("pid %d is not the running command's in another command", pid)
		}
		if err := c.Kill(); err != nil {
			t.Fatal(err)
		}
		ReadCommand(t, c)
		if code := probe(); code == 0 {
			t.Fatalf("pid %d still runs after the kill", pid)
		}
	})
	t.Run("fork bomb", func(t *testing.T) {
		c := StartCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "f() { f | f & }; f; sleep 1000"})
		select { // it runs a while, then it is killed like a timed-out command
		case <-time.After(3 * time.Second):
		case _, ok := <-c.Output():
			if !ok {
				t.Log("the fork bomb ended by itself")
			}
		}
		_ = c.Kill()
		ReadCommand(t, c)
		testkit.Eventually(t, time.Minute, func() bool {
			out, _ := k.Run(t, "print(x)")
			return strings.TrimSpace(out) == "kept"
		}, "the kernel to answer after the fork bomb")
		// The bomb's processes take a while to go (under gVisor, under
		// load): the next subtest starts once a command runs again.
		testkit.Eventually(t, time.Minute, func() bool {
			cr := k.Sandbox.(sandbox.CommandRunner)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := cr.StartCommand(ctx, sandbox.CommandSpec{Cmd: "true"})
			if err != nil {
				return false
			}
			_ = c.CloseStdin()
			for range c.Output() {
			}
			return c.Exit().Code == 0
		}, "a command to run again after the fork bomb")
	})
	// Under gVisor the host's OOM killer sees the sandbox as one process
	// (the sentry): a command that filled the memory limit would end the
	// whole sandbox, kernels and all. There the launcher's memory guard
	// kills the command first, and says so on its stderr.
	guarded := func(r CommandRun) {
		t.Helper()
		if opts.OwnProc && !strings.Contains(r.Stderr, "glassroom: the command was killed: the sandbox's memory is nearly spent") {
			t.Fatalf("the memory guard did not explain the kill: %+v", r)
		}
	}
	t.Run("memory hog", func(t *testing.T) {
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "python3 -c 'b = []\nwhile True: b.append(bytearray(16 << 20))'"}, "")
		if r.Exit.Code == 0 {
			t.Fatalf("a memory hog exited %+v", r)
		}
		keeps("after a memory hog in a command")
		guarded(r)
		// One allocation of nearly the whole limit, touched at once.
		r = RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "python3 -c 'b = bytearray(1000 << 20); print(len(b))'"}, "")
		if r.Exit.Code == 0 {
			t.Fatalf("a 1000 MiB allocation in a 1024 MiB sandbox exited %+v", r)
		}
		keeps("after one large allocation in a command")
		guarded(r)
	})
	t.Run("the OOM killer takes a command before a bigger kernel", func(t *testing.T) {
		if !opts.OwnProc { // gVisor's is its own, which the host's OOM killer never reads
			r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "cat /proc/self/oom_score_adj"}, "")
			if r.Stdout != "1000\n" || r.Exit.Code != 0 {
				t.Fatalf("a command's oom_score_adj: %+v, want 1000", r)
			}
		}
		// Where a memory cgroup bounds the sandbox, a kernel's address
		// space limit (the local runtime's) is a soft one, which the
		// kernel lifts here: 600 MiB would not fit beside its mappings.
		out, ename := k.Run(t, "import resource\nas_limits = resource.getrlimit(resource.RLIMIT_AS)\n"+
			"resource.setrlimit(resource.RLIMIT_AS, (as_limits[1], as_limits[1]))\nprint(as_limits[1] == resource.RLIM_INFINITY)")
		if ename != "" || strings.TrimSpace(out) != "True" {
			t.Fatalf("the kernel's address space limit: %q %s", out, ename)
		}
		// 600 MiB of touched memory in the kernel (of the sandbox's 1024):
		// at equal oom_score_adj the kernel, the biggest process, would be
		// the OOM killer's choice when the command below fills the rest.
		if out, ename := k.Run(t, "big = b'x' * (600 << 20)\nprint(len(big) >> 20)"); ename != "" || strings.TrimSpace(out) != "600" {
			t.Fatalf("the kernel's allocation: %q %s", out, ename)
		}
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "python3 -c 'b = []\nwhile True: b.append(b\"x\" * (16 << 20))'"}, "")
		if r.Exit.Code == 0 {
			t.Fatalf("a memory hog exited %+v", r)
		}
		out, ename = k.Run(t, "print(x, len(big) >> 20, big.count(b'x') >> 20)\ndel big\nresource.setrlimit(resource.RLIMIT_AS, as_limits)")
		if ename != "" || strings.TrimSpace(out) != "kept 600 600" {
			t.Fatalf("the kernel after a command filled the sandbox's memory: %q %s (the command: %+v)", out, ename, r.Exit)
		}
		guarded(r)
	})
	t.Run("no network", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		r := RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "echo proxy=$HTTP_PROXY; python3 -c '" +
			"import socket\nprint(sorted(n for _, n in socket.if_nameindex()))\n" +
			"try:\n socket.create_connection((\"127.0.0.1\", " + port + "), timeout=3); print(\"reached\")\nexcept OSError: print(\"unreachable\")'"}, "")
		podOK := opts.PodNetwork && strings.HasPrefix(r.Stdout, "proxy=\n[") && strings.HasSuffix(r.Stdout, "]\nunreachable\n")
		if r.Stdout != "proxy=\n['lo']\nunreachable\n" && !podOK {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		c := StartCommand(t, k.Sandbox, sandbox.CommandSpec{TTY: true, Cols: 100, Rows: 30})
		term := newTerminal(t, c)
		term.send("tty; stty size\n")
		term.expect(`/dev/pts/`, "tty")
		term.expect("30 100", "stty size")
		term.send("python3 -c 'print(6*7)'\n")
		term.expect("42", "python3's answer")
		// "ready" comes once sleep's process group has the terminal (the
		// echo of the input shows rea""dy).
		term.send("sh -c 'echo rea\"\"dy; exec sleep 1000'\n")
		term.expect("ready", "the output before sleep")
		term.send("\x03")
		term.send("echo interrupted-$((40+2))\n")
		term.expect("interrupted-42", "a prompt after ^C (sleep 1000 interrupted)")
		// The size is the terminal's once the sandbox has applied it: under
		// gVisor a stty right after the resize has once read the old one,
		// so a client that resizes again is answered (three tries).
		for try := 1; ; try++ {
			if err := c.Resize(120, 40); err != nil {
				t.Fatal(err)
			}
			term.send("stty size\n")
			if term.await("40 120", 10*time.Second) {
				break
			}
			if try == 3 {
				t.Fatalf("stty size after three resizes: no 40 120; the terminal showed %q", term.seen.String())
			}
		}
		term.send("exit 7\n")
		for range c.Output() {
		}
		if e := c.Exit(); e.Code != 7 {
			t.Fatalf("exit: %+v", e)
		}
	})
	t.Run("relay to a port of the sandbox", func(t *testing.T) {
		// An upper-casing echo server on the sandbox's loopback, one
		// connection; its first line is its port.
		srv := StartCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "exec python3 -c '" +
			"import socket\ns = socket.socket()\ns.bind((\"127.0.0.1\", 0))\ns.listen()\nprint(s.getsockname()[1], flush=True)\n" +
			"c, _ = s.accept()\nfor d in iter(lambda: c.recv(4096), b\"\"):\n c.sendall(d.upper())\nc.close()'"})
		var port int
		for o := range srv.Output() {
			if p, err := strconv.Atoi(strings.TrimSpace(string(o.Data))); err == nil {
				port = p
				break
			}
		}
		if port == 0 {
			t.Fatal("the server said no port")
		}
		c := StartCommand(t, k.Sandbox, sandbox.CommandSpec{Relay: port})
		if o := <-c.Output(); o.Stream != sandbox.Stderr || string(o.Data) != sandbox.RelayConnected {
			t.Fatalf("first output %s %q", o.Stream, o.Data)
		}
		if err := c.Write([]byte("hello through the relay")); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for got.Len() < len("hello through the relay") {
			o, ok := <-c.Output()
			if !ok {
				t.Fatalf("the relay ended after %q", got.String())
			}
			got.Write(o.Data)
		}
		if got.String() != "HELLO THROUGH THE RELAY" {
			t.Fatalf("echo %q", got.String())
		}
		// The client's end reaches the server, which closes: the relay ends.
		if err := c.CloseStdin(); err != nil {
			t.Fatal(err)
		}
		if r := ReadCommand(t, c); r.Exit.Code != 0 || r.Stdout != "" {
			t.Fatalf("after the half-close: %+v", r)
		}
		// Nothing listens: refused, with why.
		r := ReadCommand(t, StartCommand(t, k.Sandbox, sandbox.CommandSpec{Relay: 9}))
		if r.Exit.Code != 1 || !strings.HasPrefix(r.Stderr, "refused: nothing listens on port 9") {
			t.Fatalf("a port nothing listens on: %+v", r)
		}
	})
	keeps("after every command")
	t.Run("close", func(t *testing.T) {
		c := StartCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "sleep 1000"})
		if err := k.Sandbox.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case _, ok := <-c.Output():
			if ok {
				t.Fatal("output from a sleep")
			}
		case <-time.After(time.Minute):
			t.Fatal("the sandbox's Close left its command running")
		}
		_, err := k.Sandbox.(sandbox.CommandRunner).StartCommand(context.Background(), sandbox.CommandSpec{Cmd: "true"})
		if err == nil {
			t.Fatal("a closed sandbox started a command")
		}
	})
}

// terminal reads a terminal command's output in the background of the
// test's goroutine: expect waits for a text to appear.
type terminal struct {
	t    testing.TB
	c    sandbox.Command
	seen strings.Builder
	from int // where the next expect looks from
}

func newTerminal(t testing.TB, c sandbox.Command) *terminal { return &terminal{t: t, c: c} }

func (m *terminal) send(s string) {
	m.t.Helper()
	if err := m.c.Write([]byte(s)); err != nil {
		m.t.Fatalf("terminal input %q: %v", s, err)
	}
}

func (m *terminal) expect(want, what string) {
	m.t.Helper()
	if !m.await(want, time.Minute) {
		m.t.Fatalf("%s: no %q in a minute; the terminal showed %q", what, want, m.seen.String())
	}
}

// await reads the terminal until want shows (true) or d has passed
// (false); the terminal's end fails the test.
func (m *terminal) await(want string, d time.Duration) bool {
	m.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		if i := strings.Index(m.seen.String()[m.from:], want); i >= 0 {
			m.from += i + len(want)
			return true
		}
		select {
		case o, ok := <-m.c.Output():
			if !ok {
				m.t.Fatalf("waiting for %q: the terminal ended; it showed %q", want, m.seen.String())
			}
			m.seen.Write(o.Data)
		case <-timer.C:
			return false
		}
	}
}

// hostRuns reports whether a process of this host (its /proc) has a
// command line that contains args (NUL-separated).
func hostRuns(args string) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), args) {
			return true
		}
	}
	return false
}
