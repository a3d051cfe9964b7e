package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ExecuteOptions modify an execute_request.
type ExecuteOptions struct {
	Silent     bool
	NoHistory  bool
	AllowStdin bool
	// StopOnError asks the kernel to abort requests queued behind this one
	// if it fails. Off by default: ipykernel also aborts requests that merely
	// arrive shortly after the error, and callers queue executions themselves.
	StopOnError bool
	// UserExpression names expressions the kernel evaluates after the
	// code, whatever its outcome; their results come back in
	// ExecuteReply.UserExpressions.
	UserExpression map[string]string
	// OnReply, if set, is called on Execute's goroutine when the
	// execute_reply arrives (output may still follow until idle).
	OnReply func()
	// OnBusy, if set, is called on Execute's goroutine when the kernel
	// reports (status busy) that it began the request: an interrupt sent
	// before then finds the kernel idle and is lost.
	OnBusy func()
	// MsgID, if set, is the execute_request's msg_id (unless it is longer
	// than MaxMsgIDBytes or a pending request has it: then a new one):
	// what the kernel names as the parent of everything the code sends,
	// on the side stream too (a widget's comm_open, the msg_id ipywidgets'
	// Output widget captures), so a caller that names the execution so
	// matches them to it.
	MsgID string
	// CommEvents: the comm messages the code sends (comm_open, comm_msg,
	// comm_close whose parent is this request) come to onEvent as
	// EventComm events, in the kernel's order with the output, instead
	// of on the side stream (and SideAccepted does not count them). A
	// caller that relays both keeps the order that ipywidgets' Output
	// widget needs: its msg_id set, the output it captures, its msg_id
	// reset. As on the side stream, those that find the request's event
	// queue full (a flood the caller does not keep up with) are dropped
	// and counted in SideDropped. Comm messages the kernel sends for this
	// request after Execute returned (a thread's) take the side stream.
	CommEvents bool
}

// MaxMsgIDBytes bounds the msg_id a caller chooses (ExecuteOptions.MsgID).
const MaxMsgIDBytes = 256

// Execute runs code and calls onEvent, on the calling goroutine, for each
// output in kernel order. It returns after the execute_reply has arrived
// and iopub has gone idle for this request, so every output has been
// delivered. input_request events are answered with Input.
//
// If ctx ends first, Execute returns its error and stops delivering
// events; the code keeps running in the kernel (use Interrupt).
// If the kernel dies, Execute returns a DeadError.
func (c *Client) Execute(ctx context.Context, code string, opts ExecuteOptions, onEvent func(Event)) (*ExecuteReply, error) {
	ue := opts.UserExpression
	if ue == nil {
		ue = map[string]string{}
	}
	msg, cl, err := c.sendCall(Shell, "execute_request", map[string]any{
		"code": code, "silent": opts.Silent, "store_history": !opts.NoHistory,
		"user_expressions": ue, "allow_stdin": opts.AllowStdin, "stop_on_error": opts.StopOnError,
	}, opts.MsgID, opts.CommEvents)
	if err != nil {
		return nil, err
	}
	defer c.calls.unregister(msg.Header.MsgID)
	var rep *reply
	replies := cl.reply
	idle, truncated := false, false
	var grace <-chan time.Time // runs once the reply is in; reset by output
	var graceTimer *time.Timer
	var statuses int64         // the router's status count when grace last started
	var drain <-chan time.Time // runs once the reply is in; never reset
	var drainTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
			drainTimer.Stop()
		}
	}()
	var batch []Event
	for rep == nil || !idle {
		select {
		case <-cl.events.ready:
			batch = cl.events.takeAll(batch[:0])
			// Output after the reply holds the wait for idle open; comm
			// traffic does not (a thread's flood names the last request
			// as its parent, after its idle too).
			if graceTimer != nil && slices.ContainsFunc(batch, func(ev Event) bool { return ev.Kind != EventComm }) {
				graceTimer.Reset(c.cfg.IdleGrace)
			}
			for _, ev := range batch {
				truncated = truncated || ev.Truncated
				switch ev.Kind {
				case EventStatus:
					idle = idle || ev.State == "idle"
					if ev.State == "busy" && opts.OnBusy != nil {
						opts.OnBusy()
						opts.OnBusy = nil
					}
				case EventCut:
					truncated = true
				default:
					if onEvent != nil {
						onEvent(ev)
					}
				}
				c.order.release(ev.order) // handled: the side messages the kernel sent after it may go
			}
		case <-grace:
			if n := c.router.statuses.Load(); n != statuses {
				// The kernel's loop published statuses meanwhile (a
				// backlog of earlier requests): the idle, published after
				// them, may still be on its way.
				statuses = n
				graceTimer.Reset(c.cfg.IdleGrace)
				continue
			}
			// The idle status was dropped (iopub is PUB/SUB) or is stuck
			// behind a backlog: output may be missing, so say so.
			c.log.Debug().Msg("iopub idle not seen after the reply; assuming it was dropped")
			idle, truncated = true, true
		case <-drain:
			c.log.Debug().Msg("output still arriving long after the reply; stopped reading it")
			idle, truncated = true, true
		case r := <-replies:
			rep = &r
			replies = nil // received; never select it again
			statuses = c.router.statuses.Load()
			graceTimer = time.NewTimer(c.cfg.IdleGrace)
			grace = graceTimer.C
			drainTimer = time.NewTimer(c.cfg.MaxDrain)
			drain = drainTimer.C
			if opts.OnReply != nil {
				opts.OnReply()
			}
		case <-c.dead:
			return nil, c.deadError()
		case <-ctx.Done():
			return nil, fmt.Errorf("kernel: execute: %w", ctx.Err())
		}
	}
	if rep.cut {
		// The reply was over the shell ceiling: its status is unknown, the
		// kernel and its state are fine.
		return &ExecuteReply{Status: "ok", Truncated: true}, nil
	}
	var r struct {
		Status         string          `json:"status"`
		ExecutionCount int             `json:"execution_count"`
		EName          string          `json:"ename"`
		EValue         string          `json:"evalue"`
		Traceback      json.RawMessage `json:"traceback"`
		Payload        json.RawMessage `json:"payload"`
		UserExpr       json.RawMessage `json:"user_expressions"`
	}
	if err := json.Unmarshal(rep.msg.Content, &r); err != nil {
		return nil, fmt.Errorf("%w: execute_reply: %w", ErrMalformed, err)
	}
	tb, cut, err := decodeStrings(r.Traceback, MaxTracebackEntries, MaxTracebackBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: execute_reply traceback: %w", ErrMalformed, err)
	}
	payload, pcut := decodePayload(r.Payload)
	ues, ucut := decodeUserExpressions(r.UserExpr)
	return &ExecuteReply{Status: r.Status, ExecutionCount: r.ExecutionCount, EName: r.EName, EValue: r.EValue,
		Traceback: tb, Payload: payload, UserExpressions: ues, Truncated: truncated || cut || pcut || ucut}, nil
}

// Bounds of what an execute_reply may hand back besides its status.
const (
	// MaxPayloads is how many payload entries are kept (a pager page,
	// set_next_input, ask_exit, edit_magic: a cell makes one or two).
	MaxPayloads = 16
	// MaxPayloadBytes bounds the payload entries kept, together.
	MaxPayloadBytes = 1 << 20
	// MaxUserExpressionsBytes bounds the user_expressions object.
	MaxUserExpressionsBytes = 256 << 10
)

// decodePayload keeps the reply's payload entries that are JSON objects
// with a string "source", within MaxPayloads and MaxPayloadBytes; cut
// reports that some were left out.
func decodePayload(raw json.RawMessage) (kept []json.RawMessage, cut bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil, true
	}
	size := 0
	for _, e := range entries {
		var p struct {
			Source string `json:"source"`
		}
		if json.Unmarshal(e, &p) != nil || p.Source == "" {
			cut = true
			continue
		}
		if len(kept) == MaxPayloads || size+len(e) > MaxPayloadBytes {
			cut = true
			continue
		}
		size += len(e)
		kept = append(kept, e)
	}
	return kept, cut
}

// decodeUserExpressions keeps the reply's user_expressions when they are
// a JSON object within MaxUserExpressionsBytes.
func decodeUserExpressions(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if len(raw) > MaxUserExpressionsBytes || json.Unmarshal(raw, &obj) != nil {
		return nil, true
	}
	return raw, false
}

// ErrNoInputRequest is returned by Input when the kernel is not waiting for input.
var ErrNoInputRequest = errors.New("kernel: no input request is pending")

// Input answers the kernel's outstanding input_request with value.
func (c *Client) Input(value string) error {
	req := c.input.take()
	if req == nil {
		return ErrNoInputRequest
	}
	body, err := json.Marshal(map[string]string{"value": value})
	if err != nil {
		return fmt.Errorf("kernel: input reply: %w", err)
	}
	return c.sendMsg(Stdin, &Message{Header: newHeader(c.session, "input_reply"), Parent: req.Header, Content: body})
}

// Request sends msgType on ch (Shell or Control) and returns the reply
// message. Use it for kernel_info, complete, inspect, is_complete and
// history; the typed helpers below cover the common ones.
func (c *Client) Request(ctx context.Context, ch Channel, msgType string, content any) (*Message, error) {
	msg, cl, err := c.send(ch, msgType, content)
	if err != nil {
		return nil, err
	}
	defer c.calls.unregister(msg.Header.MsgID)
	select {
	case r := <-cl.reply:
		if r.cut {
			return nil, fmt.Errorf("kernel: %s: %w", msgType, ErrCut)
		}
		return r.msg, nil
	case <-c.dead:
		return nil, c.deadError()
	case <-ctx.Done():
		return nil, fmt.Errorf("kernel: %s: %w", msgType, ctx.Err())
	}
}

// KernelInfo returns the kernel_info_reply content.
func (c *Client) KernelInfo(ctx context.Context) (json.RawMessage, error) {
	r, err := c.Request(ctx, Shell, "kernel_info_request", struct{}{})
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// Complete returns the complete_reply content for code at cursorPos.
func (c *Client) Complete(ctx context.Context, code string, cursorPos int) (json.RawMessage, error) {
	r, err := c.Request(ctx, Shell, "complete_request", map[string]any{"code": code, "cursor_pos": cursorPos})
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// Inspect returns the inspect_reply content for code at cursorPos.
func (c *Client) Inspect(ctx context.Context, code string, cursorPos, detail int) (json.RawMessage, error) {
	r, err := c.Request(ctx, Shell, "inspect_request", map[string]any{"code": code, "cursor_pos": cursorPos, "detail_level": detail})
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// Interrupt sends interrupt_request on the control channel and waits for
// the reply. The running execution then ends with KeyboardInterrupt.
func (c *Client) Interrupt(ctx context.Context) error {
	_, err := c.Request(ctx, Control, "interrupt_request", struct{}{})
	return err
}

// Shutdown asks the kernel to exit (restart tells it a new kernel will
// follow) and waits for the reply. The runtime must still reap the process.
func (c *Client) Shutdown(ctx context.Context, restart bool) error {
	_, err := c.Request(ctx, Control, "shutdown_request", map[string]bool{"restart": restart})
	return err
}
