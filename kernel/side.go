package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// The side stream carries the kernel messages that belong to no pending
// request's output: comm traffic (comm_open, comm_msg, comm_close, sent by
// widgets whenever they like, during a cell or long after it), the
// debugger's debug_event, and every iopub message whose parent is not a
// pending request (the output and status of a comm message's handler, of
// a debug_request answered earlier, of a thread the cell left running).
// Without a consumer these messages are dropped, as before the stream
// existed; a consumer reads them with Side.

// Kernel message types that always take the side stream, whatever their
// parent: a comm opened by a cell belongs to the comm's traffic, not to
// the cell's output.
const (
	MsgCommOpen   = "comm_open"
	MsgCommMsg    = "comm_msg"
	MsgCommClose  = "comm_close"
	MsgDebugEvent = "debug_event"
)

// ErrSideFull is logged (never returned) when the side stream drops a
// message because its consumer fell behind.
var ErrSideFull = errors.New("kernel: side stream full")

// sideQueue is the side stream's bounded buffer. The read loops push
// without waiting (a full queue drops the message and counts it: the
// kernel controls the rate, and waiting would stall every request's
// output behind a slow consumer); one consumer takes. Safe for concurrent
// use.
type sideQueue struct {
	maxItems, maxBytes int

	mu       sync.Mutex
	items    []*Message
	bytes    int
	dropped  int64
	accepted atomic.Int64  // messages pushed so far (not the dropped); read without mu on every routed event
	ready    chan struct{} // signalled when a message was pushed
}

func newSideQueue(maxItems, maxBytes int) *sideQueue {
	return &sideQueue{maxItems: maxItems, maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// push appends msg of the given size unless the queue is full.
func (q *sideQueue) push(msg *Message, size int) bool {
	q.mu.Lock()
	if len(q.items) >= q.maxItems || (len(q.items) > 0 && q.bytes+size > q.maxBytes) {
		q.dropped++
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, msg)
	q.bytes += size
	q.accepted.Add(1)
	q.mu.Unlock()
	signal(q.ready)
	return true
}

// acceptedCount returns how many messages push has accepted.
func (q *sideQueue) acceptedCount() int64 { return q.accepted.Load() }

func (q *sideQueue) takeAll(buf []*Message) []*Message {
	q.mu.Lock()
	buf = append(buf, q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.bytes = 0
	q.mu.Unlock()
	return buf
}

// sideBound is a message's weight in the side queue.
func sideBound(msg *Message) int {
	n := len(msg.Content) + len(msg.Metadata) + 512
	for _, b := range msg.Buffers {
		n += len(b)
	}
	return n
}

// isCommMessage reports whether msgType is comm_open, comm_msg or
// comm_close.
func isCommMessage(msgType string) bool {
	return msgType == MsgCommOpen || msgType == MsgCommMsg || msgType == MsgCommClose
}

// isSide reports whether msg, received on ch, takes the side stream;
// pending reports whether its parent is a pending request.
func isSide(ch Channel, msg *Message, pending bool) bool {
	if ch != IOPub {
		return false
	}
	switch msg.Header.MsgType {
	case MsgCommOpen, MsgCommMsg, MsgCommClose, MsgDebugEvent:
		return true
	}
	return !pending
}

// Side waits for side-stream messages (see above) and appends them to buf,
// oldest first. It blocks until at least one message is there, ctx ends
// (ctx.Err()) or the kernel dies (a DeadError). The messages are verified
// and otherwise as the kernel sent them: the caller bounds and validates
// their content. One goroutine at a time may call Side.
func (c *Client) Side(ctx context.Context, buf []*Message) ([]*Message, error) {
	for {
		if out := c.side.takeAll(buf); len(out) > len(buf) {
			return out, nil
		}
		select {
		case <-c.side.ready:
		case <-ctx.Done():
			return buf, ctx.Err()
		case <-c.dead:
			return buf, c.deadError()
		}
	}
}

// SideDropped returns how many side-stream messages were dropped because
// the consumer fell behind (or there was none).
func (c *Client) SideDropped() int64 {
	c.side.mu.Lock()
	defer c.side.mu.Unlock()
	return c.side.dropped
}

// SideReady waits until every request event the kernel sent on iopub
// before side message m (a message Side returned) has been handled by its
// request's caller (Execute's onEvent returned for it), or the request
// ended: a consumer that waits before it relays m keeps the kernel's
// order, so that a comm handler's output never overtakes the cell's last
// output. (The converse, a side message before the events the kernel
// sent after it, is Event.SideBefore's.) It returns ctx's error if ctx
// ends first, a DeadError if the kernel dies. Safe for concurrent use;
// callers must not wait in onEvent for a side message the kernel sent
// after the event being handled.
func (c *Client) SideReady(ctx context.Context, m *Message) error {
	for {
		ch := c.order.blocker(m.order)
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.dead:
			return c.deadError()
		}
	}
}

// SideAccepted returns how many messages the side stream has taken in so
// far: those Side has returned and those waiting for it, not the dropped.
// The read loops push in the kernel's order, so a consumer that counts
// what Side returned has every side message the kernel sent before some
// other message (a request's output) once its count reaches SideAccepted
// read after that message arrived: how a consumer keeps the two streams
// in the kernel's order (a widget's comm_open before its display).
func (c *Client) SideAccepted() int64 { return c.side.acceptedCount() }

// Send sends one message that has no reply on ch (Shell or Control):
// comm_open, comm_msg and comm_close on shell. content and metadata must
// be JSON objects (nil metadata is {}). It returns the header sent, whose
// MsgID is the parent of what the kernel publishes while it handles the
// message (those arrive on the side stream). It does not block on the
// kernel. Use Request for messages that have a reply.
func (c *Client) Send(ch Channel, msgType string, content, metadata json.RawMessage, buffers [][]byte) (Header, error) {
	return c.SendID(ch, "", msgType, content, metadata, buffers)
}

// SendID is Send with the message's msg_id chosen by the caller (at most
// MaxMsgIDBytes; "" for a new one), so that it knows the parent of what
// the kernel publishes while handling it before the kernel can publish
// anything. The caller keeps its ids unique.
func (c *Client) SendID(ch Channel, msgID, msgType string, content, metadata json.RawMessage, buffers [][]byte) (Header, error) {
	if len(msgID) > MaxMsgIDBytes {
		return Header{}, fmt.Errorf("%w: send %s: msg_id of %d bytes", ErrMalformed, msgType, len(msgID))
	}
	if ch != Shell && ch != Control {
		return Header{}, fmt.Errorf("kernel: send %s: cannot send on %s", msgType, ch)
	}
	if !isJSONObject(content) || (metadata != nil && !isJSONObject(metadata)) {
		return Header{}, fmt.Errorf("%w: send %s: content and metadata must be JSON objects", ErrMalformed, msgType)
	}
	if metadata == nil {
		metadata = json.RawMessage("{}")
	}
	msg := &Message{Header: newHeader(c.session, msgType), Metadata: metadata, Content: content, Buffers: buffers}
	if msgID != "" {
		msg.Header.MsgID = msgID
	}
	if err := c.sendMsg(ch, msg); err != nil {
		return Header{}, err
	}
	return msg.Header, nil
}

func isJSONObject(b json.RawMessage) bool {
	i := skipSpace(b, 0)
	return i < len(b) && b[i] == '{' && json.Valid(b)
}
