package sessions

import (
	"context"
	"encoding/json"

	"github.com/glassroom/glassroom/kernel"
	"github.com/rs/zerolog"
)

// KernelConn is what a session needs of its connection to a running
// kernel. *kernel.Client implements it; the tests of the session's state
// machine use a fake. Implementations must be safe for concurrent use.
type KernelConn interface {
	// Execute runs code, calling onEvent on the calling goroutine for each
	// output, and returns once the kernel has replied and gone idle.
	Execute(ctx context.Context, code string, opts kernel.ExecuteOptions, onEvent func(kernel.Event)) (*kernel.ExecuteReply, error)
	// Input answers the outstanding input request.
	Input(value string) error
	// Interrupt interrupts the running execution.
	Interrupt(ctx context.Context) error
	// Complete and Inspect return the kernel's reply content.
	Complete(ctx context.Context, code string, cursorPos int) (json.RawMessage, error)
	Inspect(ctx context.Context, code string, cursorPos, detail int) (json.RawMessage, error)
	// Request sends msgType with content on ch (shell or control) and
	// returns the reply (Session.KernelRequest relays Jupyter clients'
	// requests that read the kernel's state).
	Request(ctx context.Context, ch kernel.Channel, msgType string, content any) (*kernel.Message, error)
	// Side waits for the kernel's messages of no pending request (comm
	// traffic, debug events, a comm handler's output: kernel.Client.Side)
	// and appends them to buf; it blocks until there is one, ctx ends or
	// the kernel dies. One goroutine at a time calls it (the session's
	// side owner, side.go). SideAccepted counts the messages the side
	// stream has taken in so far, in the kernel's order with the
	// requests' output (each event carries the count at its routing:
	// kernel.Event.SideBefore). SideReady waits until the requests'
	// output the kernel sent before side message m has been handled
	// (kernel.Client.SideReady).
	Side(ctx context.Context, buf []*kernel.Message) ([]*kernel.Message, error)
	SideAccepted() int64
	SideReady(ctx context.Context, m *kernel.Message) error
	// SendID sends a message that has no reply (a client's comm_open,
	// comm_msg, comm_close on shell) with the msg_id given, without
	// waiting for the kernel, and returns its header.
	SendID(ch kernel.Channel, msgID, msgType string, content, metadata json.RawMessage, buffers [][]byte) (kernel.Header, error)
	// Done is closed when the kernel is dead or the connection closed; Err
	// then says why.
	Done() <-chan struct{}
	Err() error
	// Abort declares the kernel dead with cause.
	Abort(cause error)
	// Close disconnects and waits for the connection's goroutines.
	Close() error
}

// DialFunc connects to the kernel described by info. The caller must Close
// the connection.
type DialFunc func(ctx context.Context, info kernel.ConnectionInfo, cfg kernel.Config, log zerolog.Logger) (KernelConn, error)

func dialKernel(ctx context.Context, info kernel.ConnectionInfo, cfg kernel.Config, log zerolog.Logger) (KernelConn, error) {
	c, err := kernel.Dial(ctx, info, cfg, log)
	if err != nil {
		return nil, err
	}
	return c, nil
}
