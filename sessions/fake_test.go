package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
)

// A fake runtime, sandbox and kernel, to test the session's state machine
// fast and in parallel. The fake kernel's behaviour is chosen by the code
// it runs:
//
//	"print:TEXT"  prints TEXT and replies ok
//	"sleep:DUR"   takes DUR, replies ok
//	"loop"        runs until interrupted, then replies KeyboardInterrupt
//	"stubborn"    ignores interrupts; ends only when the connection ends
//	"slowobey:N"  runs, printing (its Published count rises), until its
//	              N+1th interrupt, then replies KeyboardInterrupt (a kernel
//	              slow to obey on a busy machine)
//	"spin"        ignores interrupts but keeps printing: it makes progress
//	              and never obeys
//	"die"         the kernel process exits with "exit status 1"
//	"lateexit:T"  the kernel process exits, then (its reply still on the
//	              wire) prints T and replies ok, 50 ms later
//	"drain:DUR"   replies at once, then keeps sending output for DUR
//	"side:TEXT"   sends a comm_msg on its side stream, then prints TEXT
//	anything else replies ok with the code as its result
//
// except that code containing fakeFailApply replies an error (a settings
// apply that cannot enter a missing directory). Every Execute is recorded
// (calls).
type fakeRuntime struct {
	cmds sync.WaitGroup // the fake commands' goroutines
	// ttyGate, when set, holds every StartCommand of a terminal: it is
	// sent the starting command's release channel, which StartCommand
	// waits on.
	ttyGate chan chan struct{}
	// startGate, when set, holds every Start: it is sent the starting
	// sandbox's tenant and release channel, which Start waits on.
	startGate chan fakeStart
	// closeFails makes that many sandbox Closes fail; closePanics makes
	// the next one panic.
	closeFails  atomic.Int32
	closePanics atomic.Bool
	mu          sync.Mutex
	started     int
	live        int
	incs        map[string]*sandbox.Incarnation // by ConnectionInfo.IP
	failRestart atomic.Bool                     // the sandbox's next restarts fail
	panicDial   atomic.Bool                     // the next dials panic
	dir         string
	startDelay  time.Duration // each Start takes this long
	inStart     atomic.Int32  // Starts in progress
	maxInStart  atomic.Int32  // the most at once
	executed    atomic.Int32  // Execute calls on all fake kernels
	ids         []string      // the ids of the sandboxes started, in order
	calls       []fakeCall    // every Execute on any fake kernel, in order (under mu)
}

// fakeStart is a Start held by fakeRuntime.startGate.
type fakeStart struct {
	tenant  string
	release chan struct{}
}

// fakeCall is one Execute on a fake kernel.
type fakeCall struct {
	code   string
	silent bool
	noHist bool
}

// fakeFailApply in an execution's code makes the fake reply an error.
const fakeFailApply = "/home/user/missing"

func (r *fakeRuntime) record(c fakeCall) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *fakeRuntime) executions() []fakeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fakeCall(nil), r.calls...)
}

func (r *fakeRuntime) startedIDs() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := map[string]bool{}
	for _, id := range r.ids {
		set[id] = true
	}
	return set
}

func newFakeRuntime(dir string) *fakeRuntime {
	return &fakeRuntime{dir: dir, incs: map[string]*sandbox.Incarnation{}}
}

// incarnation starts a fake kernel process.
func (r *fakeRuntime) incarnation() *sandbox.Incarnation {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
	inc := sandbox.NewIncarnation(kernel.ConnectionInfo{IP: "fake-" + strconv.Itoa(r.started)})
	r.incs[inc.Connection().IP] = inc
	return inc
}

// dial is the sessions.Config.Dial of the fake: it connects to the
// incarnation the info names.
func (r *fakeRuntime) dial(_ context.Context, info kernel.ConnectionInfo, _ kernel.Config, _ zerolog.Logger) (sessions.KernelConn, error) {
	if r.panicDial.Load() {
		panic("fake: truncated READY")
	}
	r.mu.Lock()
	inc := r.incs[info.IP]
	r.mu.Unlock()
	if inc == nil {
		return nil, errors.New("fake: no such kernel")
	}
	k := newFakeKernel(inc)
	k.executed = &r.executed
	k.record = r.record
	return k, nil
}

func (r *fakeRuntime) Name() string { return "fake" }

func (r *fakeRuntime) Start(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	n := r.inStart.Add(1)
	defer r.inStart.Add(-1)
	for {
		m := r.maxInStart.Load()
		if n <= m || r.maxInStart.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(r.startDelay)
	if r.startGate != nil {
		release := make(chan struct{})
		r.startGate <- fakeStart{spec.Tenant, release}
		<-release
	}
	sb := &fakeSandbox{id: spec.ID, rt: r, ws: r.dir, inc: r.incarnation()}
	r.mu.Lock()
	r.live++
	r.ids = append(r.ids, spec.ID)
	r.mu.Unlock()
	return sb, nil
}

func (r *fakeRuntime) liveSandboxes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}

type fakeSandbox struct {
	id     string
	rt     *fakeRuntime
	ws     string
	mu     sync.Mutex
	inc    *sandbox.Incarnation
	closed bool
	// children are its contexts' sandboxes (StartContext).
	children []*fakeSandbox
}

func (s *fakeSandbox) current() *sandbox.Incarnation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inc
}
func (s *fakeSandbox) ID() string                        { return s.id }
func (s *fakeSandbox) Connection() kernel.ConnectionInfo { return s.current().Connection() }
func (s *fakeSandbox) Limits() sandbox.Limits            { return sandbox.Limits{MemoryMB: 1} }
func (s *fakeSandbox) Workspace() string                 { return s.ws }
func (s *fakeSandbox) Exited() <-chan struct{}           { return s.current().Exited() }
func (s *fakeSandbox) ExitReason() string                { return s.current().ExitReason() }
func (s *fakeSandbox) Restart(context.Context) error {
	s.current().Exit("killed for restart")
	if s.rt.failRestart.Load() {
		return errors.New("fake: restart failed")
	}
	inc := s.rt.incarnation()
	s.mu.Lock()
	s.inc = inc
	s.mu.Unlock()
	return nil
}
func (s *fakeSandbox) Close(context.Context) error {
	if s.rt.closePanics.CompareAndSwap(true, false) {
		panic("fake: sandbox close panicked")
	}
	if s.rt.closeFails.Add(-1) >= 0 {
		return errors.New("fake: the engine did not answer")
	}
	s.rt.closeFails.Store(0)
	s.mu.Lock()
	children := s.children
	s.children = nil
	s.mu.Unlock()
	for _, c := range children {
		_ = c.Close(context.Background())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.inc.Exit("closed")
		s.rt.mu.Lock()
		s.rt.live--
		s.rt.mu.Unlock()
	}
	return nil
}

type fakeKernel struct {
	executed  *atomic.Int32
	record    func(fakeCall)
	inc       *sandbox.Incarnation
	interrupt chan struct{}
	done      chan struct{}
	once      sync.Once
	mu        sync.Mutex
	err       error
	input     chan string
	requests  atomic.Int32 // Request calls
	published atomic.Int64 // output messages sent (Published)

	// The side stream: what emit pushed, for Side; what Send sent.
	sideMu    sync.Mutex
	sideQ     []*kernel.Message
	accepted  int64
	sideReady chan struct{}
	sent      []*kernel.Message
	commInfo  string // the comm_info_reply content (default: no comms)
	sideDelay atomic.Int64
}

func newFakeKernel(inc *sandbox.Incarnation) *fakeKernel {
	k := &fakeKernel{inc: inc, interrupt: make(chan struct{}, 1), done: make(chan struct{}), input: make(chan string, 1),
		sideReady: make(chan struct{}, 1)}
	return k // the session's watch aborts it when its process exits
}

func (k *fakeKernel) Execute(ctx context.Context, code string, opts kernel.ExecuteOptions, onEvent func(kernel.Event)) (*kernel.ExecuteReply, error) {
	if k.executed != nil {
		k.executed.Add(1)
	}
	if k.record != nil {
		k.record(fakeCall{code: code, silent: opts.Silent, noHist: opts.NoHistory})
	}
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
	if strings.Contains(code, fakeFailApply) {
		return reply(&kernel.ExecuteReply{Status: "error", EName: "NotADirectoryError", EValue: "cwd " + fakeFailApply + ": no such directory in the sandbox"})
	}
	inner := onEvent
	onEvent = func(ev kernel.Event) { // as the kernel client stamps them
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
		k.emit(&kernel.Message{Header: kernel.Header{MsgID: "side-" + arg, MsgType: kernel.MsgCommMsg},
			Content: json.RawMessage(`{"comm_id":"w","data":{"n":"` + arg + `"}}`)})
		onEvent(kernel.Event{Kind: kernel.EventStream, Name: "stdout", Text: arg})
		return reply(&kernel.ExecuteReply{Status: "ok", ExecutionCount: 1})
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

func (k *fakeKernel) Input(v string) error { return kernel.ErrNoInputRequest }
func (k *fakeKernel) Published() int64     { return k.published.Load() }
func (k *fakeKernel) Interrupt(context.Context) error {
	select {
	case k.interrupt <- struct{}{}:
	default:
	}
	return k.Err()
}
func (k *fakeKernel) Complete(context.Context, string, int) (json.RawMessage, error) {
	return json.RawMessage(`{"matches":["fake"],"cursor_start":0,"cursor_end":0}`), nil
}
func (k *fakeKernel) Inspect(context.Context, string, int, int) (json.RawMessage, error) {
	return json.RawMessage(`{"found":false}`), nil
}
func (k *fakeKernel) Request(_ context.Context, _ kernel.Channel, msgType string, _ any) (*kernel.Message, error) {
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

// emit makes the fake kernel send msg on its side stream.
func (k *fakeKernel) emit(msg *kernel.Message) {
	k.sideMu.Lock()
	k.sideQ = append(k.sideQ, msg)
	k.accepted++
	k.sideMu.Unlock()
	select {
	case k.sideReady <- struct{}{}:
	default:
	}
}

func (k *fakeKernel) Side(ctx context.Context, buf []*kernel.Message) ([]*kernel.Message, error) {
	for {
		k.sideMu.Lock()
		buf = append(buf, k.sideQ...)
		k.sideQ = nil
		k.sideMu.Unlock()
		if len(buf) > 0 {
			if d := time.Duration(k.sideDelay.Load()); d > 0 {
				time.Sleep(d) // a side stream owner slow to deliver (TestSideBeforeOutput)
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

// SideReady does not wait: the fake's side messages are emitted, and
// taken, after the output the code sent before them.
func (k *fakeKernel) SideReady(context.Context, *kernel.Message) error { return nil }

func (k *fakeKernel) SideAccepted() int64 {
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	return k.accepted
}

func (k *fakeKernel) SendID(ch kernel.Channel, msgID, msgType string, content, metadata json.RawMessage, buffers [][]byte) (kernel.Header, error) {
	if err := k.Err(); err != nil {
		return kernel.Header{}, &kernel.DeadError{Cause: err}
	}
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	h := kernel.Header{MsgID: msgID, MsgType: msgType}
	k.sent = append(k.sent, &kernel.Message{Header: h, Content: content, Metadata: metadata, Buffers: buffers})
	return h, nil
}

// sentMessages returns what Send sent, oldest first.
func (k *fakeKernel) sentMessages() []*kernel.Message {
	k.sideMu.Lock()
	defer k.sideMu.Unlock()
	return append([]*kernel.Message(nil), k.sent...)
}

func (k *fakeKernel) Done() <-chan struct{} { return k.done }
func (k *fakeKernel) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}
func (k *fakeKernel) Abort(cause error) {
	k.once.Do(func() {
		k.mu.Lock()
		k.err = cause
		k.mu.Unlock()
		close(k.done)
	})
}
func (k *fakeKernel) Close() error { k.Abort(kernel.ErrClosed); return nil }

// Installed implements sandbox.KernelLister: the fake "runs" these.
func (r *fakeRuntime) Installed() []sandbox.KernelSpec {
	var out []sandbox.KernelSpec
	for _, name := range []string{"python3", "r", "bash"} {
		k, _ := sandbox.LookupKernel(name)
		out = append(out, k)
	}
	return out
}

// StartContext implements sandbox.ContextStarter: another fake kernel,
// which the sandbox's Close ends too.
func (s *fakeSandbox) StartContext(_ context.Context, spec sandbox.ContextSpec) (sandbox.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sandbox.ErrClosed
	}
	child := &fakeSandbox{id: s.id, rt: s.rt, ws: s.ws, inc: s.rt.incarnation()}
	s.children = append(s.children, child)
	s.rt.mu.Lock()
	s.rt.live++
	s.rt.mu.Unlock()
	return child, nil
}
