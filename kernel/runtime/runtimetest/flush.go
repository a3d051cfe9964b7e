package runtimetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// slowStreamSend makes the kernel's I/O thread take 300 ms to hand on each
// stream message and 1 s more to send it, then prints without a newline
// and sleeps past ipykernel's 0.2 s flush interval: the cell ends while the
// I/O thread's timed flush has taken "late output" and not yet queued it
// on iopub. Had the cell's end not waited for it, the idle status would be
// sent a second before the output, and the client would be done by then.
const slowStreamSend = `import sys, threading, time
_send = sys.stdout.session.send
def _slow(stream, msg, *args, **kwargs):
    if msg == "stream" and threading.current_thread() is not threading.main_thread():
        time.sleep(0.3)
    return _send(stream, msg, *args, **kwargs)
_really = sys.stdout.pub_thread._really_send
def _late(frames, *args, **kwargs):
    if any(isinstance(f, bytes) and (b'"msg_type": "stream"' in f or b'"msg_type":"stream"' in f) for f in frames):
        time.sleep(1)
    return _really(frames, *args, **kwargs)
sys.stdout.session.send = _slow
sys.stdout.pub_thread._really_send = _late
print("late output", end="")
time.sleep(0.25)`

// FlushInFlight checks that a cell's output comes before its end even when the
// kernel's I/O thread is still sending it as the cell ends. The launcher's
// flush returns at once when nothing is written and nothing is being
// sent; without the in-flight count it would return here, and the idle
// status would overtake the output (which then belongs to no execution).
func FlushInFlight(t *testing.T, rt Starter, id string) {
	k := Start(t, rt, sandbox.Spec{ID: id})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 3 {
		var out strings.Builder
		reply, err := k.Client.Execute(ctx, slowStreamSend, kernel.ExecuteOptions{}, func(ev kernel.Event) {
			if ev.Kind == kernel.EventStream {
				out.WriteString(ev.Text)
			}
		})
		if err != nil || reply.Status != "ok" {
			t.Fatalf("cell %d: %v %+v", i, err, reply)
		}
		if out.String() != "late output" {
			t.Errorf("cell %d: output %q before the cell's end, want %q", i, out.String(), "late output")
		}
		if _, err := k.Client.Execute(ctx, "del sys.stdout.session.send, sys.stdout.pub_thread._really_send", kernel.ExecuteOptions{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing written: a cell's end does not wait (the fast path), and
	// output printed and flushed by the cell itself still comes.
	var out strings.Builder
	if _, err := k.Client.Execute(ctx, "import sys\nprint('a'); sys.stdout.flush(); sys.stdout.flush()\nx = 1", kernel.ExecuteOptions{}, func(ev kernel.Event) {
		if ev.Kind == kernel.EventStream {
			out.WriteString(ev.Text)
		}
	}); err != nil || out.String() != "a\n" {
		t.Errorf("flushed output %q: %v", out.String(), err)
	}
}
