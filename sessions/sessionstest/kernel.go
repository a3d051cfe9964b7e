package sessionstest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// MissingDir in an execution's code makes the fake kernel reply a
// NotADirectoryError: a settings apply (an execution's cwd) that cannot
// enter a directory missing in the sandbox.
const MissingDir = "/home/user/missing"

// Kernel is a connection to a fake kernel process (a sessions.KernelConn,
// from Runtime.Dial): its Execute does what the code says (see the
// package doc). Besides the KernelConn methods, tests use Emit,
// SentMessages, Requests, SetCommInfo and SetSideDelay. Safe for
// concurrent use.
type Kernel struct {
	record    func(Call)           // the Runtime's
	inc       *sandbox.Incarnation // the process; the session's watch aborts the connection when it exits
	interrupt chan struct{}
	done      chan struct{}
	once      sync.Once
	mu        sync.Mutex
	err       error
	requests  atomic.Int32 // Request calls
	published atomic.Int64 // output messages sent (Published)
	sideDelay atomic.Int64 // a time.Duration

	// The side stream: what Emit pushed, for Side; what SendID sent.
	sideMu    sync.Mutex
	sideQ     []*kernel.Message
	accepted  int64
	sideReady chan struct{}
	sent      []*kernel.Message
	commInfo  string // the comm_info_reply content (default: no comms)
}

func newKernel(inc *sandbox.Incarnation, record func(Call)) *Kernel {
	return &Kernel{record: record, inc: inc, interrupt: make(chan struct{}, 1), done: make(chan struct{}),
		sideReady: make(chan struct{}, 1)}
}

// Execute implements sessions.KernelConn: it records the call
// (Runtime.Executions) and does what code says.
func (k *Kernel) Execute(ctx context.Context, code string, opts kernel.ExecuteOptions, onEvent func(kernel.Event)) (*kernel.ExecuteReply, error) {
	k.record(Call{Code: code, Silent: opts.Silent, NoHistory: opts.NoHistory})
	reply := func(r *kernel.ExecuteReply) (*kernel.ExecuteReply, error) {
		if opts.OnReply != nil {
			opts.OnReply()
		}
		return r, nil
	}
	dead := func() (*kernel.ExecuteReply, error) { return nil, &kernel.DeadError{Cause: k.Err()} }
	if opts.OnBusy != nil {
		opts.OnBusy()
	}
	if strings.Contains(code, MissingDir) {
		return reply(&kernel.ExecuteReply{Status: "error", EName: "NotADirectoryError", EValue: "cwd " + MissingDir + ": no such directory in the sandbox"})
	}
	inner := onEvent
	onEvent = func(ev kernel.Event) { // stamped as the kernel client stamps them
		ev.SideBefore = k.SideAccepted()
		inner(ev)
	}
	op, arg, _ := strings.Cut(code, ":")
	switch op {
	case "print":
		onEvent(kernel.Event{Kind: kernel.EventStream, Name: "stdout", Text: arg})
		return reply(&kernel.ExecuteReply{Status: "ok", ExecutionCount: 1})
	case "sleep":
		d, _ := time.ParseDuration(arg)
		select {
		case <-time.After(d):
			return reply(&kernel.ExecuteReply{Status: "ok"})
		case <-k.done:
			return dead()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "loop":
		select {
		case <-k.interrupt:
			return reply(&kernel.ExecuteReply{Status: "error", EName: "KeyboardInterrupt"})
		case <-k.done:
			return dead()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "stubborn":
		select {
		case <-k.done:
			return dead()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "slowobey", "spin":
		ignore, _ := strconv.Atoi(arg)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				k.published.Add(1)
			case <-k.interrupt:
				if op == "slowobey" && ignore == 0 {
					return reply(&kernel.ExecuteReply{Status: "error", EName: "KeyboardInterrupt"})
				}
				ignore--
			case <-k.done:
				return dead()
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	case "side":
		// a comm message, then an output: the kernel's order
		n, _ := json.Marshal(arg)
		k.Emit(&kernel.Message{Header: kernel.Header{MsgID: "side-" + arg, MsgType: kernel.MsgCommMsg},
			Content: json.RawMessage(`{"comm_id":"w","data":{"n":` + string(n) + `}}`)})
		onEvent(kernel.Event{Kind: kernel.EventStream, Name: "stdout", Text: arg})
		return reply(&kernel.ExecuteReply{Status: "ok", ExecutionCount: 1})
	case "usageerror": // IPython's UsageError: the text on stderr, an error reply, no error message
		onEvent(kernel.Event{Kind: kernel.EventStream, Name: "stderr", Text: "UsageError: " + arg + "\n"})
		return reply(&kernel.ExecuteReply{Status: "error", ExecutionCount: 1, EName: "UsageError", EValue: arg})
	case "die":
		k.inc.Exit("exit status 1")
		<-k.done
		return dead()
	case "lateexit":
		k.inc.Exit("exit status 0")
		select {
		case <-time.After(50 * time.Millisecond):
		case <-k.done:
			return dead()
		}
		onEvent(kernel.Event{Kind: kernel.EventStream, Name: "stdout", Text: arg})
		return reply(&kernel.ExecuteReply{Status: "ok", ExecutionCount: 1})
	case "drain":
		d, _ := time.ParseDuration(arg)
		if opts.OnReply != nil {
			opts.OnReply()
		}
		end := time.After(d)
		for {
			select {
			case <-end:
				return &kernel.ExecuteReply{Status: "ok"}, nil
			case <-time.After(10 * time.Millisecond):
				onEvent(kernel.Event{Kind: kernel.EventStream, Name: "stdout", Text: "."})
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	data, _ := json.Marshal(code)
	onEvent(kernel.Event{Kind: kernel.EventResult, Data: kernel.MimeBundle{"text/plain": data}, ExecutionCount: 1})
	return reply(&kernel.ExecuteReply{Status: "ok", ExecutionCount: 1})
}

// Input implements sessions.KernelConn: the fake never asks for input.
func (k *Kernel) Input(string) error { return kernel.ErrNoInputRequest }

// Published implements sessions.KernelConn: the outputs "slowobey" and
// "spin" have sent.
func (k *Kernel) Published() int64 { return k.published.Load() }

// Interrupt implements sessions.KernelConn.
func (k *Kernel) Interrupt(context.Context) error {
	select {
	case k.interrupt <- struct{}{}:
	default:
	}
	return k.Err()
}

// Complete implements sessions.KernelConn: one match, "fake".
func (k *Kernel) Complete(context.Context, string, int) (json.RawMessage, error) {
	return json.RawMessage(`{"matches":["fake"],"cursor_start":0,"cursor_end":0}`), nil
}

// Inspect implements sessions.KernelConn: nothing found.
func (k *Kernel) Inspect(context.Context, string, int, int) (json.RawMessage, error) {
	return json.RawMessage(`{"found":false}`), nil
}

// Request implements sessions.KernelConn: kernel_info_request and
// comm_info_request (SetCommInfo) get the fake's answers, any other an ok
// reply. Requests counts the calls.
func (k *Kernel) Request(_ context.Context, _ kernel.Channel, msgType string, _ any) (*kernel.Message, error) {
	if err := k.Err(); err != nil {
		return nil, &kernel.DeadError{Cause: err}
	}
	k.requests.Add(1)
	reply := strings.TrimSuffix(msgType, "request") + "reply"
	content := `{"status":"ok"}`
	switch msgType {
	case "kernel_info_request":
		content = `{"status":"ok","protocol_version":"5.3","implementation":"fake","language_info":{"name":"python"},"debugger":true}`
	case "comm_info_request":
		k.sideMu.Lock()
		if content = k.commInfo; content == "" {
			content = `{"status":"ok","comms":{}}`
		}
		k.sideMu.Unlock()
	}
	return &kernel.Message{Header: kernel.Header{MsgID: "r", MsgType: reply}, Content: json.RawMessage(content)}, nil
}

// Requests is how many Requests the connection has answered.
func (k *Kernel) Requests() int { return int(k.requests.Load()) }

// SetCommInfo sets the content of the comm_info_reply the kernel answers
// (a JSON object; "" for the default, no comms).
func (k *Kernel) SetCommInfo(content string) {
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	k.commInfo = content
}

// SetSideDelay makes Side take d longer to deliver what it has: a side
// stream slow to deliver, to test that outputs wait for it.
func (k *Kernel) SetSideDelay(d time.Duration) { k.sideDelay.Store(int64(d)) }

// Emit makes the kernel send msg on its side stream, as a message of no
// pending request (Side delivers it).
func (k *Kernel) Emit(msg *kernel.Message) {
	k.sideMu.Lock()
	k.sideQ = append(k.sideQ, msg)
	k.accepted++
	k.sideMu.Unlock()
	select {
	case k.sideReady <- struct{}{}:
	default:
	}
}

// Side implements sessions.KernelConn: what Emit sent, in order.
func (k *Kernel) Side(ctx context.Context, buf []*kernel.Message) ([]*kernel.Message, error) {
	for {
		k.sideMu.Lock()
		buf = append(buf, k.sideQ...)
		k.sideQ = nil
		k.sideMu.Unlock()
		if len(buf) > 0 {
			if d := time.Duration(k.sideDelay.Load()); d > 0 {
				time.Sleep(d)
			}
			return buf, nil
		}
		select {
		case <-k.sideReady:
		case <-ctx.Done():
			return buf, ctx.Err()
		case <-k.done:
			return buf, &kernel.DeadError{Cause: k.Err()}
		}
	}
}

// SideReady implements sessions.KernelConn without waiting: the fake
// emits a side message after the output its code sent before it has been
// handed to onEvent.
func (k *Kernel) SideReady(context.Context, *kernel.Message) error { return nil }

// SideAccepted implements sessions.KernelConn: how many messages Emit
// sent.
func (k *Kernel) SideAccepted() int64 {
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	return k.accepted
}

// SendID implements sessions.KernelConn: it records the message
// (SentMessages).
func (k *Kernel) SendID(_ kernel.Channel, msgID, msgType string, content, metadata json.RawMessage, buffers [][]byte) (kernel.Header, error) {
	if err := k.Err(); err != nil {
		return kernel.Header{}, &kernel.DeadError{Cause: err}
	}
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	h := kernel.Header{MsgID: msgID, MsgType: msgType}
	k.sent = append(k.sent, &kernel.Message{Header: h, Content: content, Metadata: metadata, Buffers: buffers})
	return h, nil
}

// SentMessages returns what SendID sent, oldest first.
func (k *Kernel) SentMessages() []*kernel.Message {
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	return append([]*kernel.Message(nil), k.sent...)
}

// Done implements sessions.KernelConn.
func (k *Kernel) Done() <-chan struct{} { return k.done }

// Err implements sessions.KernelConn.
func (k *Kernel) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Abort implements sessions.KernelConn.
func (k *Kernel) Abort(cause error) {
	k.once.Do(func() {
		k.mu.Lock()
		k.err = cause
		k.mu.Unlock()
		close(k.done)
	})
}

// Close implements sessions.KernelConn.
func (k *Kernel) Close() error { k.Abort(kernel.ErrClosed); return nil }
