package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// router reads what the kernel sends and routes each message to where it
// belongs: the pending call its parent header names (a reply, output, an
// input_request), the side stream, or nowhere. It runs one read loop per
// socket (shell, control, stdin, iopub), each on a goroutine the Client
// starts and waits for; Cuts and Published may be read concurrently.
type router struct {
	ctx             context.Context // ends when the client is closed
	log             zerolog.Logger
	codec           *Codec
	maxMessageBytes int
	msgRate         *rate.Limiter
	calls           *pendingCalls
	input           *pendingInput
	side            *sideQueue
	order           *outputOrder // iopub's order across requests' events and the side stream
	drops           *dropLog
	dead            <-chan struct{} // closed when the kernel is dead
	abort           func(error)     // declares the kernel dead

	cuts      atomic.Int64 // messages cut by the transport guard
	published atomic.Int64 // iopub messages other than status routed from the kernel
	statuses  atomic.Int64 // iopub status messages read, whatever their parent
}

// readLoop owns sock's receiving side: it verifies each message and routes
// it to the call named by its parent header. Reading is rate-limited in
// messages here and in bytes below zmq4 (see guardConn); a kernel that
// sends faster waits, and its PUB socket drops what it cannot queue. It
// returns when ctx ends or sock fails (then, unless the client is
// closing, it declares the kernel dead).
func (r *router) readLoop(ch Channel, sock zmq4.Socket) {
	for {
		zmsg, err := sock.Recv()
		if err != nil {
			if r.ctx.Err() == nil {
				r.log.Debug().Err(err).Str("channel", string(ch)).Msg("kernel recv failed")
				r.abort(fmt.Errorf("kernel: recv on %s: %w", ch, err))
			}
			return
		}
		size, cut := 0, false
		for _, f := range zmsg.Frames {
			size += len(f) + frameOverhead
			cut = cut || string(f) == CutMarker
		}
		if r.msgRate.Wait(r.ctx) != nil {
			return
		}
		if cut {
			r.cut(ch, zmsg.Frames)
			continue
		}
		if size > r.maxMessageBytes {
			r.drops.dropped(ch, fmt.Errorf("message of %d bytes over the limit", size))
			continue
		}
		msg, err := r.codec.Decode(zmsg.Frames)
		if err != nil {
			r.drops.dropped(ch, err)
			continue
		}
		r.route(ch, msg)
	}
}

// ErrCut is logged for messages the transport guard cut, and wrapped by
// Request's error when the reply was one of them (over its channel's
// ceiling: MaxSmallMessageBytes on control, MaxShellMessageBytes on shell).
var ErrCut = errors.New("kernel: message over the channel's size ceiling cut unread")

// cut handles a message the transport guard cut: it is dropped, counted,
// and reported to the request named by its parent header, read without
// verification (a forged parent can only mark a request truncated).
func (r *router) cut(ch Channel, frames [][]byte) {
	r.cuts.Add(1)
	r.drops.dropped(ch, ErrCut)
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
	cl := r.calls.lookup(parent.MsgID)
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
		cl.events.push(Event{Kind: EventCut}, cl.done, r.dead)
	}
}

// route delivers one verified message from ch: to the pending call its
// parent header names, to the side stream, or nowhere. It waits while the
// call's event queue is full, until the call ends or the kernel dies.
func (r *router) route(ch Channel, msg *Message) {
	var n int64 // its iopub number
	if ch == IOPub {
		n = r.order.next()
		if msg.Header.MsgType != "status" {
			r.published.Add(1)
		} else {
			r.statuses.Add(1)
		}
	}
	r.log.Trace().Str("channel", string(ch)).Str("type", msg.Header.MsgType).Str("parent", msg.Parent.MsgID).RawJSON("content", msg.Content).Msg("kernel message")
	cl := r.calls.lookup(msg.Parent.MsgID)
	if cl != nil && cl.comms && ch == IOPub && isCommMessage(msg.Header.MsgType) {
		// In order with the request's output (a widget's comm_open before
		// the display that shows it; an Output widget's msg_id set, the
		// output it captures, the msg_id reset). Like the side stream, it
		// never holds up the reader: a flood the caller cannot keep up
		// with is dropped and counted, not waited for.
		r.order.hold(n)
		if !cl.events.tryPush(Event{Kind: EventComm, Msg: msg, SideBefore: r.side.acceptedCount(), order: n}) {
			r.order.release(n)
			r.side.mu.Lock()
			r.side.dropped++
			r.side.mu.Unlock()
			r.drops.dropped(ch, ErrSideFull)
		}
		r.releaseIfEnded(cl, n)
		return
	}
	if isSide(ch, msg, cl != nil) {
		msg.order = n
		if !r.side.push(msg, sideBound(msg)) {
			r.drops.dropped(ch, ErrSideFull)
		}
		return
	}
	if cl == nil {
		r.log.Trace().Str("channel", string(ch)).Str("type", msg.Header.MsgType).Msg("unrouted kernel message")
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
		r.input.set(msg)
	}
	ev, ok, err := decodeEvent(msg)
	if err != nil {
		r.drops.dropped(ch, err)
		return
	}
	if !ok {
		return
	}
	ev.SideBefore, ev.order = r.side.acceptedCount(), n
	r.order.hold(n)
	if !cl.events.push(ev, cl.done, r.dead) {
		r.order.release(n)
	}
	r.releaseIfEnded(cl, n)
}

// releaseIfEnded releases message n, routed to cl, if cl's request has
// ended: its caller will never handle it (its unregister may have
// drained the queue before n was in it).
func (r *router) releaseIfEnded(cl *call, n int64) {
	select {
	case <-cl.done:
		r.order.release(n)
	default:
	}
}

// dropLog logs dropped kernel messages: the kernel controls how many it
// sends, so at most one line a second is written, with a count of the
// rest. Safe for concurrent use.
type dropLog struct {
	log   zerolog.Logger
	last  atomic.Int64 // unix nanos of the last "dropped" log line
	since atomic.Int64 // drops not logged since then
}

// dropped logs (or counts) one message dropped from ch for err.
func (d *dropLog) dropped(ch Channel, err error) {
	now := time.Now().UnixNano()
	last := d.last.Load()
	if now-last < int64(time.Second) || !d.last.CompareAndSwap(last, now) {
		d.since.Add(1)
		return
	}
	d.log.Warn().Err(err).Str("channel", string(ch)).Int64("suppressed", d.since.Swap(0)).Msg("dropped kernel message")
}
