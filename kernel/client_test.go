package kernel_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"

	"github.com/glassroom/glassroom/kernel"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const python = "/usr/bin/python3"

// bareKernel starts an unsandboxed ipykernel on ipc sockets in a temp dir.
// The sandboxed runtimes are tested in their own packages.
type bareKernel struct {
	info kernel.ConnectionInfo
	cmd  *exec.Cmd
	done chan struct{}
}

func startBareKernel(t testing.TB) *bareKernel {
	t.Helper()
	testkit.RealThing(t, "ipykernel")
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s missing: run `make deps` (installs python3-ipykernel)", python)
	}
	dir, err := os.MkdirTemp("", "gk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	info := kernel.NewIPCConnection(filepath.Join(dir, "k"))
	cf := filepath.Join(dir, "kernel.json")
	if err := info.WriteFile(cf, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "ipykernel_launcher", "-f", cf)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "MPLBACKEND=module://matplotlib_inline.backend_inline", "MPLCONFIGDIR=" + dir}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &bareKernel{info: info, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(k.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-k.done })
	deadline := time.Now().Add(20 * time.Second)
	for _, ch := range kernel.Channels {
		for kernel.CheckSocket(info.SocketPath(ch)) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("kernel did not bind %s: %s", ch, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return k
}

func dial(t testing.TB, info kernel.ConnectionInfo) *kernel.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kernel.Dial(ctx, info, kernel.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type collected struct {
	events []kernel.Event
	reply  *kernel.ExecuteReply
	err    error
}

func run(t testing.TB, c *kernel.Client, code string, opts kernel.ExecuteOptions) collected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out collected
	out.reply, out.err = c.Execute(ctx, code, opts, func(ev kernel.Event) { out.events = append(out.events, ev) })
	return out
}

// runStarted runs code, whose first output says it has got to what the
// test needs running, on a goroutine, and returns once that output has
// arrived (not after some time that usually suffices); the channel gets
// the execution once it ends.
func runStarted(t testing.TB, c *kernel.Client, code string) <-chan collected {
	t.Helper()
	started := make(chan struct{})
	done := make(chan collected, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out collected
		first := true
		out.reply, out.err = c.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
			out.events = append(out.events, ev)
			if first && ev.Kind == kernel.EventStream {
				first = false
				close(started)
			}
		})
		done <- out
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the cell ended before its first output: %+v", r)
	case <-time.After(30 * time.Second):
		t.Fatalf("the cell's first output never came within 30s: %q", code)
	}
	return done
}

func (c collected) text(name string) string {
	var b strings.Builder
	for _, ev := range c.events {
		if ev.Kind == kernel.EventStream && ev.Name == name {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func (c collected) first(kind kernel.EventKind) *kernel.Event {
	for i := range c.events {
		if c.events[i].Kind == kind {
			return &c.events[i]
		}
	}
	return nil
}

func TestExecuteKeepsState(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	if r := run(t, c, "x = 41", kernel.ExecuteOptions{}); r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("x = 41: %+v", r)
	}
	r := run(t, c, "x + 1", kernel.ExecuteOptions{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.first(kernel.EventResult)
	if res == nil || string(res.Data["text/plain"]) != `"42"` {
		t.Fatalf("want execute_result 42, got %+v", r.events)
	}
	if r.reply.ExecutionCount != 2 || res.ExecutionCount != 2 {
		t.Fatalf("execution count: reply %d result %d", r.reply.ExecutionCount, res.ExecutionCount)
	}
}

func TestStreamsInOrder(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	r := run(t, c, "import sys\nfor i in range(5):\n    print('out', i, flush=True)\n    print('err', i, file=sys.stderr, flush=True)", kernel.ExecuteOptions{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	var seq []string
	for _, ev := range r.events {
		if ev.Kind == kernel.EventStream {
			seq = append(seq, ev.Name+":"+strings.TrimSpace(ev.Text))
		}
	}
	want := []string{}
	for i := 0; i < 5; i++ {
		want = append(want, "stdout:out "+string(rune('0'+i)), "stderr:err "+string(rune('0'+i)))
	}
	if strings.Join(seq, "|") != strings.Join(want, "|") {
		t.Fatalf("stream order:\n got %v\nwant %v", seq, want)
	}
}

func TestMatplotlibPNG(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	r := run(t, c, "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1,2,3],[1,4,9])\nplt.show()", kernel.ExecuteOptions{})
	if r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("plot: %+v %v", r.reply, r.err)
	}
	d := r.first(kernel.EventDisplay)
	if d == nil {
		t.Fatalf("no display_data in %+v", r.events)
	}
	var b64 string
	if err := json.Unmarshal(d.Data["image/png"], &b64); err != nil {
		t.Fatalf("image/png: %v", err)
	}
	png, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG (%v): %q", err, png[:min(len(png), 16)])
	}
}

func TestError(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	r := run(t, c, "1/0", kernel.ExecuteOptions{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	e := r.first(kernel.EventError)
	if r.reply.Status != "error" || e == nil || e.EName != "ZeroDivisionError" || e.EValue == "" || len(e.Traceback) == 0 {
		t.Fatalf("want ZeroDivisionError with traceback, got reply %+v events %+v", r.reply, r.events)
	}
	if r.reply.EName != "ZeroDivisionError" {
		t.Fatalf("reply ename %q", r.reply.EName)
	}
}

func TestInputRoundTrip(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	var prompt string
	reply, err := c.Execute(ctx, "name = input('name?')\nprint('hello', name)", kernel.ExecuteOptions{AllowStdin: true}, func(ev kernel.Event) {
		switch ev.Kind {
		case kernel.EventInputRequest:
			prompt = ev.Prompt
			if err := c.Input("ada"); err != nil {
				t.Errorf("input: %v", err)
			}
		case kernel.EventStream:
			out.WriteString(ev.Text)
		}
	})
	if err != nil || reply.Status != "ok" {
		t.Fatalf("execute: %v %+v", err, reply)
	}
	if prompt != "name?" || !strings.Contains(out.String(), "hello ada") {
		t.Fatalf("prompt %q output %q", prompt, out.String())
	}
	if err := c.Input("again"); !errors.Is(err, kernel.ErrNoInputRequest) {
		t.Fatalf("input without request: %v", err)
	}
}

func TestInterrupt(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	done := runStarted(t, c, "print('looping', flush=True)\nwhile True: pass")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Interrupt(ctx); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	select {
	case r := <-done:
		e := r.first(kernel.EventError)
		if r.err != nil || e == nil || e.EName != "KeyboardInterrupt" {
			t.Fatalf("want KeyboardInterrupt, got %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("execution not interrupted within 2 s")
	}
	if r := run(t, c, "1 + 1", kernel.ExecuteOptions{}); r.err != nil || string(r.first(kernel.EventResult).Data["text/plain"]) != `"2"` {
		t.Fatalf("kernel unusable after interrupt: %+v", r)
	}
}

func TestDeathIsReported(t *testing.T) {
	// SIGSTOP freezes the kernel with its sockets open: only the heartbeat
	// can tell.
	for _, how := range []string{"os._exit", "SIGKILL", "SIGSTOP"} {
		t.Run(how, func(t *testing.T) {
			k := startBareKernel(t)
			c := dial(t, k.info)
			start := time.Now()
			var done <-chan collected
			switch how {
			case "os._exit":
				d := make(chan collected, 1)
				go func() { d <- run(t, c, "import os; os._exit(1)", kernel.ExecuteOptions{}) }()
				done = d
			case "SIGKILL", "SIGSTOP":
				// The signal comes once the cell runs (its first output).
				done = runStarted(t, c, "print('sleeping', flush=True)\nimport time; time.sleep(60)")
				start = time.Now()
				sig := syscall.SIGKILL
				if how == "SIGSTOP" {
					sig = syscall.SIGSTOP
				}
				k.cmd.Process.Signal(sig)
			}
			select {
			case r := <-done:
				err := r.err
				if !errors.Is(err, kernel.ErrDead) {
					t.Fatalf("want ErrDead, got %v", err)
				}
				if how == "SIGSTOP" && !errors.Is(err, kernel.ErrHeartbeat) {
					t.Fatalf("a frozen kernel must be caught by the heartbeat, got %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("death not reported within 5 s")
			}
			t.Logf("%s reported dead after %v", how, time.Since(start).Round(time.Millisecond))
			if _, err := c.KernelInfo(context.Background()); !errors.Is(err, kernel.ErrDead) {
				t.Fatalf("call after death: %v", err)
			}
		})
	}
}

func TestCompleteInspectKernelInfo(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.KernelInfo(ctx)
	if err != nil || !bytes.Contains(info, []byte(`"protocol_version"`)) {
		t.Fatalf("kernel_info: %v %s", err, info)
	}
	comp, err := c.Complete(ctx, "import o", 8)
	if err != nil || !bytes.Contains(comp, []byte(`"os"`)) {
		t.Fatalf("complete: %v %s", err, comp)
	}
	insp, err := c.Inspect(ctx, "len", 3, 0)
	if err != nil || !bytes.Contains(insp, []byte(`"found": true`)) && !bytes.Contains(insp, []byte(`"found":true`)) {
		t.Fatalf("inspect: %v %s", err, insp)
	}
}

// TestForgedMessagesFromKernelAreDropped has the code inside the kernel
// publish messages on the real iopub socket, for its own execution: one
// with a bad signature and one signed with a wrong key. The client must
// drop both and deliver only the genuine output.
func TestForgedMessagesFromKernelAreDropped(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	code := `import json, hmac, hashlib, uuid, datetime
kern = get_ipython().kernel
parent = kern.get_parent("shell")
def frames(text, key):
    header = json.dumps({"msg_id": uuid.uuid4().hex, "session": "x", "username": "x", "date": datetime.datetime.now().isoformat(), "msg_type": "stream", "version": "5.3"}).encode()
    ph = json.dumps(parent["header"], default=str).encode()
    content = json.dumps({"name": "stdout", "text": text}).encode()
    sig = hmac.new(key, header + ph + b"{}" + content, hashlib.sha256).hexdigest().encode() if key else b"0" * 64
    return [b"stream", b"<IDS|MSG>", sig, header, ph, b"{}", content]
kern.iopub_socket.send_multipart(frames("FORGED-UNSIGNED\n", None))
kern.iopub_socket.send_multipart(frames("FORGED-WRONG-KEY\n", b"guessed"))
kern.iopub_socket.send_multipart(frames("SIGNED-BY-KERNEL\n", kern.session.key))
print("genuine")`
	r := run(t, c, code, kernel.ExecuteOptions{})
	if r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("execute: %v %+v %+v", r.err, r.reply, r.events)
	}
	out := r.text("stdout")
	if strings.Contains(out, "FORGED") {
		t.Fatalf("forged message delivered: %q", out)
	}
	// The control: the same frames signed with the kernel's key do arrive,
	// so the forgeries were dropped for their signatures, not their shape.
	if !strings.Contains(out, "SIGNED-BY-KERNEL") || !strings.Contains(out, "genuine") {
		t.Fatalf("genuine output missing: %q", out)
	}
}

// TestExecuteEndsWhenIopubDropsIdle: a slow subscriber makes the kernel's
// PUB socket drop messages past its high-water mark, the idle status
// included. Execute must still end, shortly after the reply.
func TestExecuteEndsWhenIopubDropsIdle(t *testing.T) {
	k := startBareKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kernel.Dial(ctx, k.info, kernel.Config{MessageRate: 1000}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	n := 0
	reply, err := c.Execute(ctx, "for i in range(20000): print(i, flush=True)", kernel.ExecuteOptions{}, func(kernel.Event) { n++ })
	if err != nil || reply.Status != "ok" {
		t.Fatalf("execute: %v %+v after %v", err, reply, time.Since(start))
	}
	t.Logf("%d of 20000 outputs delivered, ended after %v", n, time.Since(start).Round(time.Millisecond))
	if r := run(t, c, "1 + 1", kernel.ExecuteOptions{}); r.err != nil || r.first(kernel.EventResult) == nil {
		t.Fatalf("next execute: %+v", r)
	}
}

// TestExecuteWaitsBehindABacklog: requests sent before an execution
// (a client's burst of widget updates) leave a backlog of their status
// messages on iopub, ahead of the execution's output and idle. A reader
// slower than the kernel gets the reply well before them; Execute must
// keep waiting while that backlog drains, not declare the idle lost after
// IdleGrace and drop the result.
func TestExecuteWaitsBehindABacklog(t *testing.T) {
	k := startBareKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := kernel.Dial(ctx, k.info, kernel.Config{MessageRate: 200, IdleGrace: 100 * time.Millisecond, MaxDrain: time.Minute}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 300 {
		if _, err := c.Send(kernel.Shell, "kernel_info_request", json.RawMessage(`{}`), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	var result *kernel.Event
	reply, err := c.Execute(ctx, "40 + 2", kernel.ExecuteOptions{}, func(ev kernel.Event) {
		if ev.Kind == kernel.EventResult {
			result = &ev
		}
	})
	if err != nil || reply.Status != "ok" || reply.Truncated || result == nil || !strings.Contains(string(result.Data["text/plain"]), "42") {
		t.Fatalf("execute behind the backlog: %v %+v, result %+v", err, reply, result)
	}
}

// TestIdleClientSendsNoHeartbeat: an idle client pings nothing (no timers,
// no wake-ups), so a kernel frozen while idle is not noticed until the next
// request, which then finds it within the heartbeat timeout.
func TestIdleClientSendsNoHeartbeat(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	k.cmd.Process.Signal(syscall.SIGSTOP)
	defer k.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-c.Done():
		t.Fatalf("an idle client declared the kernel dead: %v", c.Err())
	case <-time.After(4 * time.Second):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.KernelInfo(ctx); !errors.Is(err, kernel.ErrHeartbeat) {
		t.Fatalf("request to a frozen kernel: %v", err)
	}
	t.Logf("frozen kernel found %v after the request", time.Since(start).Round(time.Millisecond))
}

// TestLongExecutionKeepsHeartbeat: a request longer than the heartbeat
// timeout is not mistaken for a dead kernel (the pongs are received).
func TestLongExecutionKeepsHeartbeat(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	if r := run(t, c, "import time; time.sleep(4.5); print('done')", kernel.ExecuteOptions{}); r.text("stdout") != "done\n" {
		t.Fatalf("long execution: %+v", r)
	}
}

// TestDialWhileBusy: a second client (a gateway that restarted while a
// long cell ran) connects to a kernel whose shell is busy: the probe goes
// through the control channel, which ipykernel serves while a cell runs.
func TestDialWhileBusy(t *testing.T) {
	k := startBareKernel(t)
	first := dial(t, k.info)
	done := runStarted(t, first, "print('running', flush=True)\nimport time; time.sleep(20); z = 5")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	second, err := kernel.Dial(ctx, k.info, kernel.Config{ConnectTimeout: 5 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatalf("dial while a cell runs: %v", err)
	}
	defer second.Close()
	first.Interrupt(context.Background())
	<-done
}

// TestPayloadsAndUserExpressions: a real ipykernel's execute_reply hands
// back its payloads (the pager of obj?, set_next_input of %load) and the
// user_expressions it evaluated, kept bounded.
func TestPayloadsAndUserExpressions(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	r := run(t, c, "x = 41", kernel.ExecuteOptions{UserExpression: map[string]string{"next": "x + 1", "bad": "1/0"}})
	if r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("x = 41: %+v", r)
	}
	var ue map[string]struct {
		Status string
		Data   map[string]string
		EName  string
	}
	if err := json.Unmarshal(r.reply.UserExpressions, &ue); err != nil {
		t.Fatalf("user_expressions %s: %v", r.reply.UserExpressions, err)
	}
	if ue["next"].Status != "ok" || ue["next"].Data["text/plain"] != "42" || ue["bad"].Status != "error" || ue["bad"].EName != "ZeroDivisionError" {
		t.Fatalf("user_expressions: %s", r.reply.UserExpressions)
	}
	source := func(r collected) (kinds []string) {
		for _, p := range r.reply.Payload {
			var e struct{ Source string }
			_ = json.Unmarshal(p, &e)
			kinds = append(kinds, e.Source)
		}
		return kinds
	}
	if r := run(t, c, "len?", kernel.ExecuteOptions{}); r.err != nil || !slices.Equal(source(r), []string{"page"}) || !strings.Contains(string(r.reply.Payload[0]), "Return the number of items") {
		t.Fatalf("len? payload: %v %s", r.err, r.reply.Payload)
	}
	script := filepath.Join(t.TempDir(), "loaded.py")
	if err := os.WriteFile(script, []byte("print('loaded')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, c, "%load "+script, kernel.ExecuteOptions{}); r.err != nil || !slices.Equal(source(r), []string{"set_next_input"}) || !strings.Contains(string(r.reply.Payload[0]), "print('loaded')") {
		t.Fatalf("%%load payload: %v %s", r.err, r.reply.Payload)
	}
	if r := run(t, c, "1", kernel.ExecuteOptions{}); r.reply.Payload != nil || r.reply.UserExpressions != nil {
		t.Fatalf("a plain cell: payload %s, user_expressions %s", r.reply.Payload, r.reply.UserExpressions)
	}
}
