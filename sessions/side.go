package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/glassroom/glassroom/kernel"
)

// The kernel's side stream, for the session's clients: comm traffic
// (widgets: comm_open, comm_msg, comm_close, whenever the kernel sends
// them, during a cell or long after it), the debugger's debug_event, and
// the iopub messages whose parent is no pending request (the output and
// status of a comm message's handler, of a thread a cell left running).
// One goroutine per kernel incarnation (sideState.run, owned by the
// worker) reads the incarnation's side stream (KernelConn.Side), keeps the
// session's table of open comms (comms.go) and fans the messages out to
// the subscribers of SubscribeKernel. The comm messages of the running
// execution come to the worker instead, in order with its output
// (kernel.ExecuteOptions.CommEvents), and the worker fans them out
// between the events it publishes (deliver). The side stream is not part of the
// event log: nothing of it is numbered, kept or replayed; a client
// recovers widget state from the kernel (comm_info, then the widgets'
// request_state).

// SideMessage is one message of the kernel's side stream, as a subscriber
// gets it. Its JSON parts are valid JSON objects (the owner drops a
// message whose content or metadata is not one). It is immutable: every
// subscriber gets the same value, and its slices must not be modified.
type SideMessage struct {
	// MsgID and MsgType are the kernel's header's.
	MsgID   string
	MsgType string
	// ParentID is the msg_id of the message's parent header as the kernel
	// sent it ("" for none): for the output and status of a comm message's
	// handler, the msg id SendComm returned.
	ParentID string
	// Parent is the parent header a Jupyter client is shown: the header
	// given to SendCommParent for the message ParentID names (or the
	// ExecRequest.Parent of the execution it names), when it is still
	// remembered; else the kernel's parent header ({} for none).
	Parent   json.RawMessage
	Metadata json.RawMessage
	Content  json.RawMessage
	Buffers  [][]byte
	// Context is the context whose kernel sent it ("" for the session's
	// first).
	Context string
	// After is the Seq of the newest event the session had published
	// when it delivered the message: the events up to After came before
	// it, the later ones after it (see SubscribeKernel).
	After int64
}

// size approximates the memory m holds, for the subscribers' bounds.
func (m *SideMessage) size() int {
	n := 256 + len(m.MsgID) + len(m.MsgType) + len(m.ParentID) + len(m.Parent) + len(m.Metadata) + len(m.Content)
	for _, b := range m.Buffers {
		n += len(b) + entryOverhead
	}
	return n
}

// sideSub is one subscriber of the side stream: a bounded channel, by
// count (its capacity) and by bytes. A message that does not fit is
// dropped for this subscriber alone and counted.
type sideSub struct {
	c      chan SideMessage
	sizes  []int // sizes of the messages in c, oldest first
	queued int
}

// sideHub is a session's side stream: the subscribers every kernel of
// the session fans its side messages out to (each marked with its
// context). Safe for concurrent use; subMu is innermost.
type sideHub struct {
	subItems, subBytes int
	lastSeq            func() int64 // the Seq of the session's newest event

	subMu   sync.Mutex
	subs    map[*sideSub]struct{}
	closed  bool
	dropped atomic.Int64 // messages dropped for subscribers that lagged, or invalid
}

func newSideHub(cfg *Config, lastSeq func() int64) *sideHub {
	return &sideHub{subItems: cfg.SideBuffer, subBytes: cfg.SideBytes, lastSeq: lastSeq, subs: map[*sideSub]struct{}{}}
}

// sideState is one kernel's side: the table of its open comms
// (comms.go), and how far its owner goroutine has delivered its side
// messages to the session's hub, which keeps side messages ahead of the
// execution output that followed them (barrier). Safe for concurrent
// use. Its mutexes are innermost and never held together: progMu guards
// the delivery count, comms.mu the comm table.
type sideState struct {
	hub     *sideHub // the session's
	context string   // the kernel's context id ("" for the session's first)

	progMu    sync.Mutex
	progConn  KernelConn    // the incarnation the count below is of
	delivered int64         // side messages of progConn the owner has handled
	ownerDone bool          // progConn's owner has ended
	progress  chan struct{} // closed (and replaced) whenever delivered grows or the owner ends

	comms comms
}

func newSideState(cfg *Config, hub *sideHub, context string) *sideState {
	ss := &sideState{hub: hub, context: context, progress: make(chan struct{})}
	ss.comms.init(cfg)
	return ss
}

// fanout offers m, marked with the kernel's context, to the session's
// subscribers.
func (ss *sideState) fanout(m SideMessage) {
	m.Context = ss.context
	ss.hub.fanout(m)
}

// subscribe adds a subscriber until ctx ends or cancel is called.
func (h *sideHub) subscribe(ctx context.Context) (<-chan SideMessage, func()) {
	sub := &sideSub{c: make(chan SideMessage, h.subItems)}
	h.subMu.Lock()
	if h.closed {
		h.subMu.Unlock()
		close(sub.c)
		return sub.c, func() {}
	}
	h.subs[sub] = struct{}{}
	h.subMu.Unlock()
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			h.subMu.Lock()
			defer h.subMu.Unlock()
			if _, ok := h.subs[sub]; ok {
				delete(h.subs, sub)
				close(sub.c)
			}
		})
	}
	stop := context.AfterFunc(ctx, cancel)
	return sub.c, func() { stop(); cancel() }
}

// fanout offers m to every subscriber, without waiting for any, stamped
// with the newest event's Seq.
func (h *sideHub) fanout(m SideMessage) {
	m.After = h.lastSeq()
	n := m.size()
	h.subMu.Lock()
	defer h.subMu.Unlock()
	for sub := range h.subs {
		for len(sub.sizes) > len(sub.c) { // consumed since the last offer
			sub.queued -= sub.sizes[0]
			sub.sizes = sub.sizes[1:]
		}
		if len(sub.c) == cap(sub.c) || (len(sub.sizes) > 0 && sub.queued+n > h.subBytes) {
			h.dropped.Add(1)
			continue
		}
		sub.c <- m
		sub.sizes = append(sub.sizes, n)
		sub.queued += n
	}
}

// close ends every subscription (the session closed).
func (h *sideHub) close() {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.closed = true
	for sub := range h.subs {
		delete(h.subs, sub)
		close(sub.c)
	}
}

// begin makes c the incarnation whose side stream is delivered: its count
// starts at zero and its comm table empty. Called by the worker before c
// runs anything, before run.
func (ss *sideState) begin(c KernelConn) {
	ss.progMu.Lock()
	ss.progConn, ss.delivered, ss.ownerDone = c, 0, false
	ss.progMu.Unlock()
	ss.comms.reset(c)
}

// advance records that the owner of c has delivered n more messages, or
// (ended) that it stopped.
func (ss *sideState) advance(c KernelConn, n int, ended bool) {
	ss.progMu.Lock()
	defer ss.progMu.Unlock()
	if ss.progConn != c {
		return
	}
	ss.delivered += int64(n)
	ss.ownerDone = ss.ownerDone || ended
	close(ss.progress)
	ss.progress = make(chan struct{})
}

// barrier waits until the first target side messages of c (the count
// when an event was routed, kernel.Event.SideBefore; or SideAccepted)
// have been delivered to the subscribers (or c's owner has ended, or ctx
// ends). The worker calls it before it publishes an execution's output,
// so that a client that reads its side messages before each event (as
// the faces do) sees them in the kernel's order: a widget's comm_open
// before the display that shows it. It costs a lock and a comparison
// when the owner is not behind; the owner never waits on a subscriber,
// and waits (SideReady) only for output sent before the message it
// delivers, so the wait is short and never circular.
func (ss *sideState) barrier(ctx context.Context, c KernelConn, target int64) {
	ss.progMu.Lock()
	for ss.progConn == c && !ss.ownerDone && ss.delivered < target {
		ch := ss.progress
		ss.progMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		ss.progMu.Lock()
	}
	ss.progMu.Unlock()
}

// run is the owner of c's side stream: it reads it until c dies or ctx
// ends, tracks the comms it opens and closes, and fans each message out.
// It runs on a goroutine of the worker's (begin first).
func (ss *sideState) run(ctx context.Context, c KernelConn) {
	defer ss.advance(c, 0, true)
	var buf []*kernel.Message
	for {
		msgs, err := c.Side(ctx, buf[:0])
		for _, km := range msgs {
			// The output of the cell the kernel sent before it goes first
			// (a comm handler's output after the cell's last); the worker
			// waits only for side messages sent before what it publishes
			// (barrier), so the two never wait for each other.
			if werr := c.SideReady(ctx, km); werr != nil {
				err = errors.Join(err, werr)
			}
			if m, ok := ss.convert(c, km); ok {
				ss.fanout(m)
			}
			ss.advance(c, 1, false) // one at a time: the worker may wait for this one
		}
		clear(msgs)
		buf = msgs
		if err != nil {
			return
		}
	}
}

// deliver fans out km, a comm message of c's running execution, which
// the worker got in order with the execution's output: it goes to the
// subscribers between the events published before and after it.
func (ss *sideState) deliver(c KernelConn, km *kernel.Message) {
	if m, ok := ss.convert(c, km); ok {
		ss.fanout(m)
	}
}

// convert checks a kernel message, records what it does to the comm
// table and makes it a SideMessage. A message whose content or metadata
// is not a JSON object is dropped.
func (ss *sideState) convert(c KernelConn, km *kernel.Message) (SideMessage, bool) {
	metadata := km.Metadata
	if len(metadata) == 0 || string(metadata) == "null" {
		metadata = json.RawMessage("{}")
	}
	if !jsonObject(km.Content) || !jsonObject(metadata) {
		ss.hub.dropped.Add(1)
		return SideMessage{}, false
	}
	switch km.Header.MsgType {
	case kernel.MsgCommOpen:
		ss.comms.kernelOpened(c, km.Content)
	case kernel.MsgCommClose:
		ss.comms.closed(c, km.Content)
	}
	m := SideMessage{MsgID: km.Header.MsgID, MsgType: km.Header.MsgType, ParentID: km.Parent.MsgID,
		Metadata: metadata, Content: km.Content, Buffers: km.Buffers}
	sent := ss.comms.sent(m.ParentID)
	if m.MsgType == "status" && !sent.comm {
		// The busy and idle of what the faces render themselves (an
		// execution, a relayed request, the kernel's start), arriving
		// late: only a comm handler's go to the clients.
		return SideMessage{}, false
	}
	if m.MsgType == "status" {
		// The kernel handles shell in order: busy for comm message n says
		// it is done with those before it; idle, with n too.
		var st struct {
			State string `json:"execution_state"`
		}
		_ = json.Unmarshal(km.Content, &st)
		if st.State == "idle" {
			ss.comms.handledThrough(c, sent.seq)
		} else {
			ss.comms.handledThrough(c, sent.seq-1)
		}
	}
	switch {
	case sent.header != nil:
		m.Parent = sent.header
	case m.ParentID != "":
		m.Parent, _ = json.Marshal(km.Parent)
	default:
		m.Parent = json.RawMessage("{}")
	}
	return m, true
}

// jsonObject reports whether b is one JSON object.
func jsonObject(b json.RawMessage) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return json.Valid(b)
		}
		return false
	}
	return false
}

// SubscribeKernel returns the side stream of the session's kernels (see
// SideMessage; each message names its Context): every message a kernel
// sends that belongs to no pending request, from now on, through every
// restart of each kernel (each incarnation's in turn), until ctx ends, cancel is called (either may come first; both
// are safe), or the session closes; then the channel is closed. The
// channel is bounded (Config.SideBuffer messages, Config.SideBytes
// bytes): a subscriber that falls behind loses the messages that do not
// fit (SideDropped counts them), and never holds up the kernel, its
// executions or another subscriber. The messages are not in the event
// log: nothing is replayed. Stream merges them with the events in the
// session's order; a reader that merges them itself must write a side
// message m only once the events up to m.After are written, and before
// an event whose Seq is above m.After (the session publishes an
// execution's output only once the side messages the kernel sent before
// it are in the channel, and fans out the execution's own comm messages
// between its events). Safe for concurrent use.
func (s *Session) SubscribeKernel(ctx context.Context) (<-chan SideMessage, func()) {
	return s.side.subscribe(ctx)
}

// SideDropped returns how many side messages the session's subscribers
// lost because they fell behind, and kernel messages dropped as
// malformed.
func (s *Session) SideDropped() int64 { return s.side.dropped.Load() }

// takeSide returns the next side message waiting in *side (a channel from
// SubscribeKernel), or nil without waiting; it sets *side to nil once it
// is closed. For Stream, which merges side messages with the event
// subscription.
func takeSide(side *<-chan SideMessage) *SideMessage {
	if *side == nil {
		return nil
	}
	select {
	case m, ok := <-*side:
		if !ok {
			*side = nil
			return nil
		}
		return &m
	default:
		return nil
	}
}
