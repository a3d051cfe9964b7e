package sessions

import (
	"context"
	"encoding/json"

	"github.com/glassroom/glassroom/kernel"
)

// Complete asks the kernel for completions of code at cursor. It does not
// wait in the execution queue: the kernel answers between executions (a
// busy kernel answers when the running cell ends). It blocks until the
// reply, ctx's end, or 30 s. Safe for concurrent use.
func (s *Kernel) Complete(ctx context.Context, code string, cursor int) (*Completion, error) {
	return s.direct.complete(ctx, code, cursor)
}

// Inspect asks the kernel for help on the name at cursor (detail 0: the
// docstring, 1: the source too). Like Complete, it bypasses the execution
// queue and blocks until the reply, ctx's end, or 30 s.
func (s *Kernel) Inspect(ctx context.Context, code string, cursor, detail int) (*Inspection, error) {
	return s.direct.inspect(ctx, code, cursor, detail)
}

// KernelRequest sends a Jupyter request to the kernel and returns its
// reply, bypassing the execution queue (a busy kernel answers shell
// requests when its cell ends, control requests at once). Only the
// requests that read the kernel's state (kernel_info, complete, inspect,
// is_complete, history, comm_info) and the debugger's debug_request (on
// control) are relayed; the
// content must be a JSON object of bounded size; the reply is bounded by
// the channel's ceiling. It blocks until the reply, ctx's end, or 30 s.
// Safe for concurrent use.
func (s *Kernel) KernelRequest(ctx context.Context, ch kernel.Channel, msgType string, content json.RawMessage) (*KernelReply, error) {
	return s.direct.request(ctx, ch, msgType, content)
}

// KernelInfo returns the content of the kernel's kernel_info_reply, asked
// once per kernel incarnation and cached. A kernel running a cell answers
// when the cell ends, so then an earlier incarnation's reply is used if
// there is one; else the wait is bounded by ctx and 30 s.
func (s *Kernel) KernelInfo(ctx context.Context) (json.RawMessage, error) {
	return s.direct.kernelInfo(ctx)
}

// KernelSession returns a random id of the current kernel incarnation: it
// changes when the kernel is restarted. The Jupyter face puts it in the
// session field of the headers it makes, as a kernel does with its own.
func (s *Kernel) KernelSession() string { return s.jup.kernelSession(s.kernelClient()) }
