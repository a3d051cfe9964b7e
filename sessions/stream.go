package sessions

import (
	"context"
	"sync"
)

// StreamItem is one item of a Stream: an event of the session's log or a
// message of its kernel's side stream (exactly one is set).
type StreamItem struct {
	Event *Event
	Side  *SideMessage
}

// Stream is one reader's ordered view of a session: its numbered events
// (Subscribe) and its kernels' side messages (SubscribeKernel) merged
// into one channel in the session's order, the way both faces write
// them:
//
//   - a side message comes after the events published before it (its
//     After) and before every event published after it;
//   - an event at or below the last one delivered is skipped (a replay
//     after a Resume or a lag);
//   - a reader that falls behind the event log is resubscribed from the
//     last event it was given (lag is handled inside: the log's backlog
//     is replayed); side messages it is too slow for are lost, counted by
//     Session.SideDropped, as with SubscribeKernel.
//
// C is unbuffered: an item is delivered when the reader takes it, so the
// last event taken is the last one delivered. C is closed when the
// session ends, when the context given to Session.Stream ends, or at
// Close. One goroutine, owned by the Stream, does the merge; Close stops
// it and waits. Resume and Close may be called by the reader only (not
// concurrently with each other); C is read by that reader.
type Stream struct {
	C <-chan StreamItem

	c      chan StreamItem
	resume chan int64
	cancel context.CancelFunc
	done   chan struct{}
	close  sync.Once
}

// Stream returns the session's events after since merged with its
// kernels' side messages from now on (see Stream). The subscriptions are
// in place when it returns: a snapshot read after it (Info) is not older
// than the stream. The caller must Close it.
func (s *Session) Stream(ctx context.Context, since int64) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	c := make(chan StreamItem)
	st := &Stream{C: c, c: c, resume: make(chan int64), cancel: cancel, done: make(chan struct{})}
	sub := s.Subscribe(since)
	side, cancelSide := s.SubscribeKernel(ctx)
	m := &streamMerge{s: s, sub: sub, side: side, last: since}
	go func() {
		defer close(st.done)
		defer close(st.c)
		defer cancelSide()
		defer func() { m.sub.Close() }()
		m.run(ctx, st.c, st.resume)
	}()
	return st
}

// Resume restarts the events after since (a client that asks to resume
// from its own last event); side messages waiting go on. The next item
// taken from C after Resume returns comes from the new position.
func (st *Stream) Resume(since int64) {
	select {
	case st.resume <- since:
	case <-st.done:
	}
}

// Close ends the stream and waits for its goroutine. Idempotent.
func (st *Stream) Close() {
	st.close.Do(st.cancel)
	<-st.done
}

// streamMerge is the state of a Stream's goroutine.
type streamMerge struct {
	s       *Session
	sub     *Subscription
	side    <-chan SideMessage // nil once closed
	last    int64              // the Seq of the last event delivered
	held    *SideMessage       // a side message waiting for its turn
	pending *Event             // an event waiting for the side messages before it
}

// next returns the item that may be delivered now, if any.
func (m *streamMerge) next() (StreamItem, bool) {
	if m.pending != nil && m.held == nil {
		// The side messages delivered before the pending event was
		// published go first, in the kernel's order.
		m.held = takeSide(&m.side)
	}
	switch {
	case m.held != nil && (m.held.After <= m.last || (m.pending != nil && m.held.After < m.pending.Seq)):
		return StreamItem{Side: m.held}, true
	case m.pending != nil:
		return StreamItem{Event: m.pending}, true
	}
	return StreamItem{}, false
}

func (m *streamMerge) run(ctx context.Context, out chan<- StreamItem, resume <-chan int64) {
	for {
		item, ready := m.next()
		// What is ready is delivered before more is taken in.
		var outC chan<- StreamItem
		var evC <-chan Event
		var sideC <-chan SideMessage
		switch {
		case ready:
			outC = out
		case m.held == nil:
			evC, sideC = m.sub.C, m.side
		default:
			evC = m.sub.C // one side message at a time: the next comes after it
		}
		select {
		case <-ctx.Done():
			return
		case outC <- item:
			if item.Side != nil {
				m.held = nil
			} else {
				m.last, m.pending = m.pending.Seq, nil
			}
		case n := <-resume:
			m.sub.Close()
			m.sub = m.s.Subscribe(n)
			m.last, m.pending = n, nil
		case sm, ok := <-sideC:
			if !ok {
				m.side = nil // the session ended: the event log says so
				continue
			}
			m.held = &sm
		case ev, ok := <-evC:
			if !ok {
				if m.sub.Lagged() { // fell behind: replay from the backlog
					m.sub = m.s.Subscribe(m.last)
					continue
				}
				return // the session ended
			}
			if ev.Seq > m.last {
				m.pending = &ev
			}
		}
	}
}
