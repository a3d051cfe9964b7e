package runtimetest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
)

// ContextOptions says what Contexts needs to know of a runtime.
type ContextOptions struct {
	// NewID returns a fresh session id.
	NewID func() string
	// FirstRestartEndsContexts says that a restart of the sandbox's first
	// kernel ends every context's kernel (docker: they are processes of
	// its container), which then report it (an exit reason with
	// "restarted") and start again with their own Restart. Otherwise they
	// run on, untouched.
	FirstRestartEndsContexts bool
	// OOMReason is what the exit reason of a context whose kernel the
	// sandbox's memory limit killed contains.
	OOMReason string
	// OOMEndsSandbox says that a kernel exceeding the sandbox's memory
	// ends every kernel of the sandbox (the first and the other contexts
	// report their exit), not just itself.
	OOMEndsSandbox bool
}

// contextMemoryMB is the memory of the sandbox Contexts starts, and
// holdMB what its first kernel holds of it while a context's kernel grows
// without bound. That one meets the sandbox's limit at about
// contextMemoryMB - holdMB - 150 MB (the other kernels): the largest
// process of the sandbox, so the OOM killer's choice, and long before its
// own address space reaches contextMemoryMB (the local runtime's
// per-process limit, which an idle kernel's 600 MB of address space for
// 70 MB resident brings within 1500 MB resident), so only a limit
// counting all the kernels together stops it.
const (
	contextMemoryMB = 2048
	holdMB          = 700
)

// Contexts exercises sandbox.ContextStarter on real kernels of rt: two
// python3 contexts and the first kernel keep their own variables and
// share the workspace; starts run concurrently, a name is taken once, a
// bad working directory or a kernel the runtime has not installed is a
// *sandbox.SpecError; a context starts, restarts and closes alone (each
// thawing a frozen sandbox first); the first kernel's restart, and its
// death, leave the contexts running on their own ipc directories (or,
// with opts.FirstRestartEndsContexts, end them with a reason, and they
// restart once it runs again); the session's memory limit covers all
// kernels together; the sandbox's Close ends every context and refuses
// new ones. It logs the time to the first result of a new session and of
// a new context.
func Contexts(t *testing.T, rt Starter, opts ContextOptions) {
	testkit.RealThing(t, "a real sandboxed kernel")
	began := time.Now()
	first := Start(t, rt, sandbox.Spec{ID: opts.NewID(), Limits: sandbox.Limits{MemoryMB: contextMemoryMB}})
	first.Run(t, "x = 'first'")
	sessionTook := time.Since(began)
	cs, ok := first.Sandbox.(sandbox.ContextStarter)
	if !ok {
		t.Fatalf("%T is no sandbox.ContextStarter", first.Sandbox)
	}
	top := t // contexts and clients live until the whole test ends
	startContext := func(name, cwd string) (Kernel, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		sb, err := cs.StartContext(ctx, sandbox.ContextSpec{Name: name, Kernel: sandbox.DefaultKernel, Cwd: cwd})
		if err != nil {
			return Kernel{}, err
		}
		top.Cleanup(func() { _ = sb.Close(context.Background()) })
		return Kernel{Sandbox: sb}, nil
	}
	mustStart := func(t *testing.T, name, cwd string) Kernel {
		t.Helper()
		k, err := startContext(name, cwd)
		if err != nil {
			t.Fatalf("start context %s: %v", name, err)
		}
		k.reconnect(t, top)
		return k
	}
	// freeze freezes the sandbox, if it can, for what must thaw it first.
	freeze := func(t *testing.T) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if fz, ok := first.Sandbox.(sandbox.Freezer); ok {
			if err := fz.Freeze(ctx); err != nil && !errors.Is(err, sandbox.ErrNoFreeze) {
				t.Fatalf("freeze: %v", err)
			}
		}
	}
	thawed := func(t *testing.T, what string) {
		t.Helper()
		if fz, ok := first.Sandbox.(sandbox.Freezer); ok && fz.Frozen() {
			t.Fatalf("the sandbox is still frozen after %s", what)
		}
	}
	expect := func(t *testing.T, k Kernel, code, want string) {
		t.Helper()
		if out, ename := k.Run(t, code); strings.TrimSpace(out) != want || ename != "" {
			t.Fatalf("%s: %q (%s), want %q", code, out, ename, want)
		}
	}

	t.Run("time to the first result", func(t *testing.T) {
		began := time.Now()
		k := mustStart(t, "timing", "")
		k.Run(t, "1 + 1")
		t.Logf("first result of a new session after %v, of a new context after %v",
			sessionTook.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		closeKernel(t, k)
	})

	var a, b Kernel
	t.Run("concurrent starts, one name once", func(t *testing.T) {
		names := []string{"a", "b", "a"}
		ks := make([]Kernel, len(names))
		errs := make([]error, len(names))
		var wg sync.WaitGroup
		for i, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ks[i], errs[i] = startContext(name, "")
			}()
		}
		wg.Wait()
		if errs[1] != nil {
			t.Fatalf("start context b: %v", errs[1])
		}
		b = ks[1]
		switch {
		case errs[0] == nil && errors.Is(errs[2], sandbox.ErrContextExists):
			a = ks[0]
		case errs[2] == nil && errors.Is(errs[0], sandbox.ErrContextExists):
			a = ks[2]
		default:
			t.Fatalf("two starts of context a: %v and %v, want one to start and one ErrContextExists", errs[0], errs[2])
		}
		a.reconnect(t, top)
		b.reconnect(t, top)
	})
	if a.Client == nil || b.Client == nil {
		t.FailNow()
	}

	t.Run("a context is the sandbox's, no Freezer", func(t *testing.T) {
		for _, k := range []Kernel{a, b} {
			if k.Sandbox.ID() != first.Sandbox.ID() || k.Sandbox.Limits() != first.Sandbox.Limits() || k.Sandbox.Workspace() != first.Sandbox.Workspace() {
				t.Fatalf("context: id %q, limits %+v, workspace %q; the sandbox's: %q, %+v, %q", k.Sandbox.ID(), k.Sandbox.Limits(), k.Sandbox.Workspace(),
					first.Sandbox.ID(), first.Sandbox.Limits(), first.Sandbox.Workspace())
			}
			if _, ok := k.Sandbox.(sandbox.Freezer); ok {
				t.Fatal("a context is a Freezer")
			}
			if _, ok := k.Sandbox.(sandbox.ContextStarter); ok {
				t.Fatal("a context is a ContextStarter")
			}
		}
		if a.Sandbox.Connection() == b.Sandbox.Connection() || a.Sandbox.Connection() == first.Sandbox.Connection() {
			t.Fatal("contexts share a connection")
		}
	})

	t.Run("own variables, one workspace", func(t *testing.T) {
		a.Run(t, "x = 'a'")
		b.Run(t, "x = 'b'")
		expect(t, first, "print(x)", "first")
		expect(t, a, "print(x)", "a")
		expect(t, b, "print(x)", "b")
		a.Run(t, "import os; os.makedirs('sub', exist_ok=True); open('from-a.txt', 'w').write('written by a')")
		expect(t, b, "print(open('from-a.txt').read())", "written by a")
		expect(t, first, "print(open('/workspace/from-a.txt').read())", "written by a")
		c := mustStart(t, "c", "/workspace/sub")
		expect(t, c, "import os; print(os.getcwd(), os.environ['HOME'])", "/home/user/sub /home/user")
		expect(t, c, "print(open('../from-a.txt').read())", "written by a")
		closeKernel(t, c)
	})

	t.Run("bad specs", func(t *testing.T) {
		first.Run(t, "open('a-file', 'w').write('x')")
		for _, cwd := range []string{"no-such-dir", "a-file", "/etc"} {
			if _, err := startContext("bad", cwd); !errors.Is(err, sandbox.ErrBadSpec) {
				t.Errorf("cwd %q: %v, want ErrBadSpec", cwd, err)
			}
		}
		for _, k := range sandbox.Kernels() {
			if sandbox.CheckInstalled(rt, k.Name) == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := cs.StartContext(ctx, sandbox.ContextSpec{Name: "bad", Kernel: k.Name})
			cancel()
			if !errors.Is(err, sandbox.ErrBadSpec) {
				t.Errorf("kernel %s, not installed: %v, want ErrBadSpec", k.Name, err)
			}
			break
		}
	})

	t.Run("a context restarts alone", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		freeze(t)
		if err := a.Sandbox.Restart(ctx); err != nil {
			t.Fatalf("restart context a: %v", err)
		}
		thawed(t, "a context's restart")
		a.reconnect(t, top)
		if _, ename := a.Run(t, "x"); ename != "NameError" {
			t.Fatal("context a's variables survived its restart")
		}
		expect(t, a, "print(open('from-a.txt').read())", "written by a")
		expect(t, b, "print(x)", "b")
		first.reconnect(t, top) // its ipc directory is untouched
		expect(t, first, "print(x)", "first")
		a.Run(t, "x = 'a'")
	})

	t.Run("the first kernel restarts", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := first.Sandbox.Restart(ctx); err != nil {
			t.Fatalf("restart the first kernel: %v", err)
		}
		first.reconnect(t, top)
		if _, ename := first.Run(t, "x"); ename != "NameError" {
			t.Fatal("the first kernel's variables survived its restart")
		}
		first.Run(t, "x = 'first'")
		for name, k := range map[string]*Kernel{"a": &a, "b": &b} {
			if !opts.FirstRestartEndsContexts {
				k.reconnect(t, top) // its sockets survived the emptying of the first kernel's ipc directory
				expect(t, *k, "print(x)", name)
				continue
			}
			select {
			case <-k.Sandbox.Exited():
			case <-time.After(30 * time.Second):
				t.Fatal("a context of a restarted first kernel reports no exit")
			}
			t.Logf("a context after the first kernel's restart: %s", k.Sandbox.ExitReason())
			if !strings.Contains(k.Sandbox.ExitReason(), "restarted") {
				t.Fatalf("exit reason %q, want it to say the first kernel restarted", k.Sandbox.ExitReason())
			}
			if err := k.Sandbox.Restart(ctx); err != nil {
				t.Fatalf("restart a context after the first kernel's restart: %v", err)
			}
			k.reconnect(t, top)
			if _, ename := k.Run(t, "x"); ename != "NameError" {
				t.Fatal("variables survived")
			}
		}
		if opts.FirstRestartEndsContexts {
			a.Run(t, "x = 'a'")
			b.Run(t, "x = 'b'")
		}
	})

	t.Run("the first kernel dies", func(t *testing.T) {
		Dies(t, first, "import os; os._exit(3)", "3")
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if !opts.FirstRestartEndsContexts {
			expect(t, a, "print(x)", "a")
			expect(t, b, "print(x)", "b")
		} else {
			for _, k := range []Kernel{a, b} {
				select {
				case <-k.Sandbox.Exited():
				case <-time.After(30 * time.Second):
					t.Fatal("a context of a dead first kernel reports no exit")
				}
				t.Logf("a context after the first kernel's death: %s", k.Sandbox.ExitReason())
				if !strings.Contains(k.Sandbox.ExitReason(), "stopped") {
					t.Fatalf("exit reason %q, want it to say the sandbox stopped", k.Sandbox.ExitReason())
				}
			}
			if err := a.Sandbox.Restart(ctx); !errors.Is(err, sandbox.ErrUnavailable) {
				t.Fatalf("restart a context while the first kernel is dead: %v, want ErrUnavailable", err)
			}
		}
		if err := first.Sandbox.Restart(ctx); err != nil {
			t.Fatalf("restart the dead first kernel: %v", err)
		}
		first.reconnect(t, top)
		first.Run(t, "x = 'first'")
		if opts.FirstRestartEndsContexts {
			for name, k := range map[string]*Kernel{"a": &a, "b": &b} {
				if err := k.Sandbox.Restart(ctx); err != nil {
					t.Fatalf("restart a context once the first kernel runs again: %v", err)
				}
				k.reconnect(t, top)
				k.Run(t, "x = '"+name+"'")
			}
		}
	})

	t.Run("a context closes alone", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		freeze(t)
		if err := b.Sandbox.Close(ctx); err != nil {
			t.Fatalf("close context b: %v", err)
		}
		thawed(t, "a context's close")
		select {
		case <-b.Sandbox.Exited():
		default:
			t.Fatal("a closed context's kernel has not exited")
		}
		expect(t, first, "print(x)", "first")
		expect(t, a, "print(x)", "a")
		freeze(t)
		b = mustStart(t, "b", "") // the name is free again
		thawed(t, "a context's start")
		b.Run(t, "x = 'b'")
	})

	t.Run("the session's memory covers all its kernels", func(t *testing.T) {
		first.Run(t, "hold = bytearray("+itoa(holdMB)+" << 20)")
		Dies(t, a, "b = []\nwhile True: b.append(bytearray(16 << 20))", opts.OOMReason)
		t.Logf("the context that exceeded the memory: %s", a.Sandbox.ExitReason())
		if opts.OOMEndsSandbox {
			for _, k := range []Kernel{first, b} {
				testkit.Eventually(t, 30*time.Second, func() bool { return sandbox.IsDone(k.Sandbox.Exited()) },
					"the sandbox's other kernels live on after an OOM that ends the sandbox")
			}
			t.Logf("the OOM ended every kernel: the first kernel %q, context b %q", first.Sandbox.ExitReason(), b.Sandbox.ExitReason())
			return
		}
		expect(t, first, "print(len(hold) >> 20, x)", itoa(holdMB)+" first")
		expect(t, b, "print(x)", "b")
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := a.Sandbox.Restart(ctx); err != nil {
			t.Fatalf("restart the killed context: %v", err)
		}
		a.reconnect(t, top)
		expect(t, a, "print(1 + 1)", "2")
	})

	t.Run("closing the sandbox ends every context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if !opts.OOMEndsSandbox {
			freeze(t)
		}
		if err := first.Sandbox.Close(ctx); err != nil {
			t.Fatalf("close the sandbox: %v", err)
		}
		for _, k := range []Kernel{a, b} {
			if !sandbox.IsDone(k.Sandbox.Exited()) {
				t.Fatal("a context's kernel outlived its sandbox")
			}
			if err := k.Sandbox.Close(ctx); err != nil {
				t.Fatalf("close a context of a closed sandbox: %v", err)
			}
		}
		if _, err := cs.StartContext(ctx, sandbox.ContextSpec{Name: "late", Kernel: sandbox.DefaultKernel}); !errors.Is(err, sandbox.ErrClosed) {
			t.Fatalf("StartContext after Close: %v, want ErrClosed", err)
		}
	})
}

// closeKernel closes k's context, failing the test on error.
func closeKernel(t *testing.T, k Kernel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_ = k.Client.Close()
	if err := k.Sandbox.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// ContextEgress checks that a context of a sandbox with a network reaches
// the session's egress proxy as the first kernel does (through the
// launcher's forwarder: its own, or the first kernel's where they share a
// network namespace). The proxy is a stand-in on a unix socket in a
// directory of the test that answers every request itself; nothing
// leaves the host.
func ContextEgress(t *testing.T, rt Starter, id string) {
	testkit.RealThing(t, "a real sandboxed kernel")
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o711) // the sandbox's uid reaches the socket
	}
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var served sync.WaitGroup
	t.Cleanup(func() { l.Close(); served.Wait() })
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	served.Add(1)
	go func() { // ends when the listener closes
		defer served.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer served.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				body := "via the proxy: " + strings.TrimSpace(line)
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
			}()
		}
	}()
	first := Start(t, rt, sandbox.Spec{ID: id, EgressSocket: sock})
	cs, ok := first.Sandbox.(sandbox.ContextStarter)
	if !ok {
		t.Fatalf("%T is no sandbox.ContextStarter", first.Sandbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sb, err := cs.StartContext(ctx, sandbox.ContextSpec{Name: "net", Kernel: sandbox.DefaultKernel})
	if err != nil {
		t.Fatalf("start context: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	c := Kernel{Sandbox: sb}
	c.Reconnect(t)
	// The bash kernel, a program of its own, gets the network too (the
	// launcher starts the forwarder, or joins the sandbox's, first).
	bsb, err := cs.StartContext(ctx, sandbox.ContextSpec{Name: "net-bash", Kernel: "bash"})
	if err != nil {
		t.Fatalf("start bash context: %v", err)
	}
	t.Cleanup(func() { _ = bsb.Close(context.Background()) })
	b := Kernel{Sandbox: bsb}
	b.Reconnect(t)
	const fetch = "import urllib.request\nprint(urllib.request.urlopen('http://egress.test/%s', timeout=20).read().decode())"
	for name, k := range map[string]Kernel{"first": first, "context": c, "bash": b} {
		code := strings.Replace(fetch, "%s", name, 1)
		if name == "bash" {
			code = "python3 -c \"" + strings.ReplaceAll(code, "\n", ";") + "\""
		}
		out, ename := k.Run(t, code)
		if want := "via the proxy: GET http://egress.test/" + name + " HTTP/1.1"; ename != "" || strings.TrimSpace(out) != want {
			t.Fatalf("%s kernel: %q (%s), want %q", name, out, ename, want)
		}
	}
}
