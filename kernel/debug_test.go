package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/testkit"
	"github.com/glassroom/glassroom/testkit/dap"
)

// TestDebuggerConversation: JupyterLab's debugger session (dap.Script)
// on a bare ipykernel with debugpy, through the kernel client alone:
// debug_request on the control channel is answered while a cell is
// stopped at a breakpoint (the shell busy: the client does not hold
// control behind shell), and every debug_event, whatever its parent,
// reaches the side stream.
func TestDebuggerConversation(t *testing.T) {
	testkit.Python(t, "debugpy")
	k := startBareKernel(t)
	c := dial(t, k.info)
	info, err := c.KernelInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var impl struct {
		Implementation string `json:"implementation"`
	}
	if json.Unmarshal(info, &impl) != nil || impl.Implementation != "ipython" {
		t.Fatalf("kernel_info: %s", info)
	}
	dap.Script(t, dap.Client(c))
}

// TestDebuggerStoppedCellInterrupts: a cell stopped at a breakpoint ends
// with KeyboardInterrupt on an interrupt_request (what the session's
// execution timeout and a client's stop button send), the debugger then
// reports no stopped thread, and the kernel runs the next cell.
func TestDebuggerStoppedCellInterrupts(t *testing.T) {
	testkit.Python(t, "debugpy")
	k := startBareKernel(t)
	c := dial(t, k.info)
	st := dap.Stop(t, dap.Client(c))
	ctx, cancel := context.WithTimeout(context.Background(), dap.Wait)
	defer cancel()
	if err := c.Interrupt(ctx); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	var r dap.Result
	select {
	case r = <-st.Done:
	case <-ctx.Done():
		t.Fatal("the stopped cell did not end after the interrupt")
	}
	var ce *dap.CellError
	if !errors.As(r.Err, &ce) || ce.EName != "KeyboardInterrupt" {
		t.Fatalf("the stopped cell after an interrupt: %+v, want KeyboardInterrupt", r)
	}
	var info struct {
		IsStarted      bool  `json:"isStarted"`
		StoppedThreads []int `json:"stoppedThreads"`
	}
	if err := json.Unmarshal(st.Request("debugInfo", nil).Body, &info); err != nil || !info.IsStarted || len(info.StoppedThreads) != 0 {
		t.Fatalf("debugInfo after the interrupt: %+v %v", info, err)
	}
	if r := run(t, c, "print('next')", kernel.ExecuteOptions{}); r.err != nil || r.text("stdout") != "next\n" {
		t.Fatalf("the next cell: %+v", r)
	}
}
