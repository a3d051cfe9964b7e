package kernel

import "sync"

// call is one pending request: what the kernel sends for it is delivered
// here by the router.
type call struct {
	// comms: the request's comm messages come as EventComm events
	// (ExecuteOptions.CommEvents), not on the side stream.
	comms  bool
	events *eventQueue
	reply  chan reply // capacity 1: the first reply wins
	done   chan struct{}
}

// reply is a request's shell or control reply. cut reports that the reply
// was over the channel's ceiling and was dropped unread (msg is nil).
type reply struct {
	msg *Message
	cut bool
}

// pendingCalls correlates requests with what the kernel sends for them:
// each pending call under its msg_id, which the kernel names as the parent
// of its reply and output. Safe for concurrent use: requests register and
// unregister their calls, the read loops look them up.
type pendingCalls struct {
	order *outputOrder // the iopub numbers its calls' undelivered events hold

	mu    sync.Mutex
	calls map[string]*call
}

func newPendingCalls(order *outputOrder) *pendingCalls {
	return &pendingCalls{order: order, calls: make(map[string]*call)}
}

// register adds cl under id, unless id is "", longer than MaxMsgIDBytes or
// the msg_id of a pending call: then under fallback. It returns the msg_id
// cl is pending under; the caller unregisters it once.
func (p *pendingCalls) register(id, fallback string, cl *call) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id == "" || len(id) > MaxMsgIDBytes || p.calls[id] != nil {
		id = fallback
	}
	p.calls[id] = cl
	return id
}

// unregister removes the call pending under msgID, if any, closes its
// done channel and releases the events its caller left undelivered.
func (p *pendingCalls) unregister(msgID string) {
	p.mu.Lock()
	cl, ok := p.calls[msgID]
	if ok {
		delete(p.calls, msgID)
		close(cl.done)
	}
	p.mu.Unlock()
	if ok {
		for _, ev := range cl.events.takeAll(nil) {
			p.order.release(ev.order)
		}
	}
}

// lookup returns the call pending under msgID, or nil.
func (p *pendingCalls) lookup(msgID string) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[msgID]
}

// busy reports whether any call is pending.
func (p *pendingCalls) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls) > 0
}

// pendingInput holds the kernel's outstanding input_request: the router
// sets it, Client.Input takes it. Safe for concurrent use.
type pendingInput struct {
	mu  sync.Mutex
	req *Message
}

// set records req as the outstanding input_request.
func (p *pendingInput) set(req *Message) {
	p.mu.Lock()
	p.req = req
	p.mu.Unlock()
}

// take returns the outstanding input_request, or nil, and forgets it.
func (p *pendingInput) take() *Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	req := p.req
	p.req = nil
	return req
}
