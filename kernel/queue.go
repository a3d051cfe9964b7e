package kernel

import "sync"

// eventQueue holds one request's undelivered events, bounded in count and
// in bytes (Event.Size), so a kernel flooding a slow consumer cannot grow
// the gateway's memory: when it is full the socket's reader waits, zmq4's
// queue fills, and the kernel's iopub (PUB) drops what it cannot send.
// One goroutine pushes (a read loop) and one takes (the request's caller).
type eventQueue struct {
	maxItems, maxBytes int

	mu    sync.Mutex
	items []queued
	bytes int
	ready chan struct{} // signalled when an event was pushed
	room  chan struct{} // signalled when events were taken
}

type queued struct {
	ev   Event
	size int
}

func newEventQueue(maxItems, maxBytes int) *eventQueue {
	return &eventQueue{maxItems: maxItems, maxBytes: maxBytes, ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push appends ev, waiting while the queue is full (an event larger than
// the byte bound is accepted into an empty queue). It returns false if
// done or stop closed first.
func (q *eventQueue) push(ev Event, done, stop <-chan struct{}) bool {
	size := ev.Size()
	for {
		q.mu.Lock()
		if len(q.items) == 0 || (len(q.items) < q.maxItems && q.bytes+size <= q.maxBytes) {
			q.items = append(q.items, queued{ev, size})
			q.bytes += size
			q.mu.Unlock()
			signal(q.ready)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-done:
			return false
		case <-stop:
			return false
		}
	}
}

// tryPush appends ev unless the queue is full (then it drops it and
// returns false), without waiting.
func (q *eventQueue) tryPush(ev Event) bool {
	size := ev.Size()
	q.mu.Lock()
	if len(q.items) > 0 && (len(q.items) >= q.maxItems || q.bytes+size > q.maxBytes) {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, queued{ev, size})
	q.bytes += size
	q.mu.Unlock()
	signal(q.ready)
	return true
}

// takeAll removes and returns every queued event, oldest first.
func (q *eventQueue) takeAll(buf []Event) []Event {
	q.mu.Lock()
	for i, it := range q.items {
		buf = append(buf, it.ev)
		q.items[i] = queued{}
	}
	q.items = q.items[:0]
	q.bytes = 0
	q.mu.Unlock()
	signal(q.room)
	return buf
}
