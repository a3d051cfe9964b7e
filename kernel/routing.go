package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// send registers a call for a new message and sends it on ch.
func (c *Client) send(ch Channel, msgType string, content any) (*Message, *call, error) {
	return c.sendID(ch, msgType, content, "")
}

// sendID is send with the message's msg_id: id, unless it is "", too long
// or the msg_id of a pending request (then a new one).
func (c *Client) sendID(ch Channel, msgType string, content any, id string) (*Message, *call, error) {
	return c.sendCall(ch, msgType, content, id, false)
}

// sendCall is sendID with comms: the request's comm messages come to its
// events as EventComm (see ExecuteOptions.CommEvents).
func (c *Client) sendCall(ch Channel, msgType string, content any, id string, comms bool) (*Message, *call, error) {
	body, err := json.Marshal(content)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel: %s: encode content: %w", msgType, err)
	}
	msg := &Message{Header: newHeader(c.session, msgType), Content: body}
	cl := &call{comms: comms, events: newEventQueue(c.cfg.EventBuffer, c.cfg.EventBufferBytes), reply: make(chan reply, 1), done: make(chan struct{})}
	c.mu.Lock()
	if id != "" && len(id) <= MaxMsgIDBytes && c.pending[id] == nil {
		msg.Header.MsgID = id
	}
	c.pending[msg.Header.MsgID] = cl
	c.mu.Unlock()
	signal(c.wake) // the heartbeat runs while requests are pending
	if err := c.sendMsg(ch, msg); err != nil {
		c.unregister(msg.Header.MsgID)
		return nil, nil, err
	}
	return msg, cl, nil
}

func (c *Client) sendMsg(ch Channel, msg *Message) error {
	frames, err := c.codec.Encode(msg)
	if err != nil {
		return err
	}
	var sock zmq4.Socket
	var mu *sync.Mutex
	switch ch {
	case Shell:
		sock, mu = c.shell, &c.sendMu[0]
	case Control:
		sock, mu = c.control, &c.sendMu[1]
	case Stdin:
		sock, mu = c.stdin, &c.sendMu[2]
	default:
		return fmt.Errorf("kernel: cannot send on %s", ch)
	}
	select {
	case <-c.dead:
		return c.deadError()
	default:
	}
	mu.Lock()
	err = sock.SendMulti(zmq4.NewMsgFrom(frames...))
	mu.Unlock()
	if err != nil {
		if c.Err() != nil {
			return c.deadError()
		}
		return fmt.Errorf("kernel: send %s on %s: %w", msg.Header.MsgType, ch, err)
	}
	return nil
}

func (c *Client) unregister(msgID string) {
	c.mu.Lock()
	if cl, ok := c.pending[msgID]; ok {
		delete(c.pending, msgID)
		close(cl.done)
	}
	c.mu.Unlock()
}

func (c *Client) lookup(msgID string) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[msgID]
}

// readLoop owns sock's receiving side: it verifies each message and routes
// it to the call named by its parent header. Reading is rate-limited in
// messages here and in bytes below zmq4 (see guardConn); a kernel that
// sends faster waits, and its PUB socket drops what it cannot queue.
func (c *Client) readLoop(ch Channel, sock zmq4.Socket) {
	defer c.wg.Done()
	for {
		zmsg, err := sock.Recv()
		if err != nil {
			if c.ctx.Err() == nil {
				c.log.Debug().Err(err).Str("channel", string(ch)).Msg("kernel recv failed")
				c.Abort(fmt.Errorf("kernel: recv on %s: %w", ch, err))
			}
			return
		}
		size, cut := 0, false
		for _, f := range zmsg.Frames {
			size += len(f) + frameOverhead
			cut = cut || string(f) == CutMarker
		}
		if c.msgRate.Wait(c.ctx) != nil {
			return
		}
		if cut {
			c.cut(ch, zmsg.Frames)
			continue
		}
		if size > c.cfg.MaxMessageBytes {
			c.dropped(ch, fmt.Errorf("message of %d bytes over the limit", size))
			continue
		}
		msg, err := c.codec.Decode(zmsg.Frames)
		if err != nil {
			c.dropped(ch, err)
			continue
		}
		c.route(ch, msg)
	}
}

// ErrCut is logged for messages the transport guard cut, and wrapped by
// Request's error when the reply was one of them (over its channel's
// ceiling: MaxSmallMessageBytes on control, MaxShellMessageBytes on shell).
var ErrCut = errors.New("kernel: message over the channel's size ceiling cut unread")

// cut handles a message the transport guard cut: it is dropped, counted,
// and reported to the request named by its parent header, read without
// verification (a forged parent can only mark a request truncated).
func (c *Client) cut(ch Channel, frames [][]byte) {
	c.cuts.Add(1)
	c.dropped(ch, ErrCut)
	idx := -1
	for i, f := range frames {
		if bytes.Equal(f, delimiter) {
			idx = i
			break
		}
	}
	if idx < 0 || len(frames) <= idx+3 || len(frames[idx+3]) > 64<<10 {
		return
	}
	var parent Header
	if json.Unmarshal(frames[idx+3], &parent) != nil {
		return
	}
	cl := c.lookup(parent.MsgID)
	if cl == nil {
		return
	}
	switch ch {
	case Shell, Control:
		select {
		case cl.reply <- reply{cut: true}:
		default:
		}
	case IOPub, Stdin:
		cl.events.push(Event{Kind: EventCut}, cl.done, c.dead)
	}
}

func (c *Client) route(ch Channel, msg *Message) {
	if ch == IOPub && msg.Header.MsgType != "status" {
		c.published.Add(1)
	}
	c.log.Trace().Str("channel", string(ch)).Str("type", msg.Header.MsgType).Str("parent", msg.Parent.MsgID).RawJSON("content", msg.Content).Msg("kernel message")
	cl := c.lookup(msg.Parent.MsgID)
	if cl != nil && cl.comms && ch == IOPub && isCommMessage(msg.Header.MsgType) {
		// In order with the request's output (a widget's comm_open before
		// the display that shows it; an Output widget's msg_id set, the
		// output it captures, the msg_id reset). Like the side stream, it
		// never holds up the reader: a flood the caller cannot keep up
		// with is dropped and counted, not waited for.
		if !cl.events.tryPush(Event{Kind: EventComm, Msg: msg}) {
			c.side.mu.Lock()
			c.side.dropped++
			c.side.mu.Unlock()
			c.dropped(ch, ErrSideFull)
		}
		return
	}
	if isSide(ch, msg, cl != nil) {
		if !c.side.push(msg, sideBound(msg)) {
			c.dropped(ch, ErrSideFull)
		}
		return
	}
	if cl == nil {
		c.log.Trace().Str("channel", string(ch)).Str("type", msg.Header.MsgType).Msg("unrouted kernel message")
		return
	}
	switch ch {
	case Shell, Control:
		select {
		case cl.reply <- reply{msg: msg}:
		default: // a second reply to one request is ignored
		}
		return
	case Stdin:
		if msg.Header.MsgType != string(EventInputRequest) {
			return
		}
		c.mu.Lock()
		c.inputReq = msg
		c.mu.Unlock()
	}
	ev, ok, err := decodeEvent(msg)
	if err != nil {
		c.dropped(ch, err)
		return
	}
	if !ok {
		return
	}
	cl.events.push(ev, cl.done, c.dead)
}

// dropped logs a dropped kernel message: the kernel controls how many it
// sends, so at most one line a second is written, with a count of the rest.
func (c *Client) dropped(ch Channel, err error) {
	now := time.Now().UnixNano()
	last := c.lastDropLog.Load()
	if now-last < int64(time.Second) || !c.lastDropLog.CompareAndSwap(last, now) {
		c.droppedSince.Add(1)
		return
	}
	c.log.Warn().Err(err).Str("channel", string(ch)).Int64("suppressed", c.droppedSince.Swap(0)).Msg("dropped kernel message")
}

// The heartbeat runs only while requests are pending: an idle session
// costs no goroutine wake-up and no timer (a kernel that dies while idle is
// reported by its runtime, which watches the process; one that froze is
// found by the first request, within HeartbeatTimeout). Two goroutines own
// the REQ socket: heartbeatRecv blocks on the pongs, heartbeatDrive sends
// a ping each interval while busy and declares the kernel dead when a pong
// is late.

// heartbeatRecv owns the heartbeat socket's receiving side. zmq4's REQ
// socket cannot receive before its first send, so it starts after the
// first ping.
func (c *Client) heartbeatRecv() {
	defer c.wg.Done()
	select {
	case <-c.firstPing:
	case <-c.ctx.Done():
		return
	}
	for {
		if _, err := c.hb.Recv(); err != nil {
			return
		}
		c.pingOut.Store(0)
	}
}

// heartbeatDrive owns the heartbeat socket's sending side and the timer.
func (c *Client) heartbeatDrive() {
	defer c.wg.Done()
	ping := zmq4.NewMsg([]byte("ping"))
	t := time.NewTimer(c.cfg.HeartbeatInterval)
	t.Stop()
	var lastPing time.Time
	for {
		if !c.busy() {
			// A ping left unanswered when the kernel went idle is forgotten:
			// an idle kernel may be paused, and its next request starts afresh.
			c.pingOut.Store(0)
			select {
			case <-c.ctx.Done():
				return
			case <-c.wake:
				continue
			}
		}
		now := time.Now()
		if sent := c.pingOut.Load(); sent != 0 {
			if now.Sub(time.Unix(0, sent)) > c.cfg.HeartbeatTimeout {
				c.Abort(ErrHeartbeat)
				return
			}
		} else if now.Sub(lastPing) >= c.cfg.HeartbeatInterval {
			lastPing = now
			c.pingOut.Store(now.UnixNano())
			if err := c.hb.Send(ping); err != nil {
				return
			}
			c.firstPingOnce.Do(func() { close(c.firstPing) })
		}
		t.Reset(c.cfg.HeartbeatInterval / 4)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// busy reports whether any request is pending.
func (c *Client) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}
