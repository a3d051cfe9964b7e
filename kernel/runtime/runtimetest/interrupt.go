package runtimetest

import (
	"context"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// EarlyInterrupt checks that an interrupt reaching a python3 kernel after it has
// begun a cell (busy) and before the cell's code runs still ends the cell,
// in KeyboardInterrupt, with a reply. A client interrupts as soon as it
// sees execute_input, and ipykernel used to drop the request (no reply) or
// IPython to swallow the interrupt in a hook (the code then ran on) when
// the signal came that early. A pre_execute hook that sleeps a second
// holds the kernel in that window; the interrupt is sent inside it.
func EarlyInterrupt(t *testing.T, rt Starter, id string) {
	k := Start(t, rt, sandbox.Spec{ID: id})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := k.Client.Execute(ctx, "import time\nget_ipython().events.register('pre_execute', lambda: time.sleep(1))",
		kernel.ExecuteOptions{}, nil); err != nil {
		t.Fatalf("register the slow hook: %v", err)
	}
	for i := range 3 {
		busy := make(chan struct{})
		done := make(chan *kernel.ExecuteReply, 1)
		errc := make(chan error, 1)
		go func() { // ends when the execution does (interrupted, or ctx)
			reply, err := k.Client.Execute(ctx, "while True: pass", kernel.ExecuteOptions{OnBusy: func() { close(busy) }}, nil)
			if err != nil {
				errc <- err
				return
			}
			done <- reply
		}()
		select {
		case <-busy:
		case err := <-errc:
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // inside the second the hook sleeps
		ictx, icancel := context.WithTimeout(ctx, 30*time.Second)
		if err := k.Client.Interrupt(ictx); err != nil {
			t.Fatalf("interrupt: %v", err)
		}
		select {
		case reply := <-done:
			if reply.EName != "KeyboardInterrupt" {
				t.Fatalf("cell %d: %s %s %s, want KeyboardInterrupt", i, reply.Status, reply.EName, reply.EValue)
			}
		case err := <-errc:
			t.Fatal(err)
		case <-ictx.Done():
			t.Fatalf("cell %d: an interrupt during the kernel's preparation of the cell was lost", i)
		}
		icancel()
	}
	// The kernel is fine, and an interrupt while it is idle hits nothing.
	if err := k.Client.Interrupt(ctx); err != nil {
		t.Fatalf("interrupt an idle kernel: %v", err)
	}
	reply, err := k.Client.Execute(ctx, "print('after')", kernel.ExecuteOptions{}, nil)
	if err != nil || reply.Status != "ok" {
		t.Fatalf("a cell after the interrupts: %v %+v", err, reply)
	}
}
