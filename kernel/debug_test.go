package kernel_test

import (
	"context"
	"encoding/json"
	"testing"

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
