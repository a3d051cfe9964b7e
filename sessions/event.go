package sessions

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Event is one message of the session's event stream, in the wire shape
// the WebSocket protocol uses. Which fields are set depends on Type.
type Event struct {
	// Seq increases by one for every event of a session; clients resume
	// after a reconnect by asking for events after the last Seq they saw.
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	// ID is the client-chosen id of the execution the event belongs to.
	ID string `json:"id,omitempty"`

	Name           string          `json:"name,omitempty"` // stream: stdout|stderr; error: exception name
	Text           string          `json:"text,omitempty"`
	Data           json.RawMessage `json:"data,omitempty"` // MIME bundle
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	DisplayID      string          `json:"display_id,omitempty"`
	ExecutionCount *int            `json:"execution_count,omitempty"`
	Value          string          `json:"value,omitempty"` // error value
	Traceback      []string        `json:"traceback,omitempty"`
	Wait           bool            `json:"wait,omitempty"` // clear_output
	Prompt         *string         `json:"prompt,omitempty"`
	Password       *bool           `json:"password,omitempty"`
	Status         string          `json:"status,omitempty"` // done
	DurationMS     *int64          `json:"duration_ms,omitempty"`
	Truncated      *bool           `json:"truncated,omitempty"`
	StateLost      *bool           `json:"state_lost,omitempty"`
	State          string          `json:"state,omitempty"` // kernel
	Reason         string          `json:"reason,omitempty"`
	Path           string          `json:"path,omitempty"` // file
	Size           *int64          `json:"size,omitempty"`
	Change         string          `json:"change,omitempty"`
	Position       *int            `json:"position,omitempty"` // queued
}

// Event types.
const (
	EventQueued        = "queued"
	EventStarted       = "started"
	EventStream        = "stream"
	EventDisplay       = "display"
	EventUpdateDisplay = "update_display"
	EventClearOutput   = "clear_output"
	EventResult        = "result"
	EventError         = "error"
	EventInputRequest  = "input_request"
	EventFile          = "file"
	EventDone          = "done"
	EventKernel        = "kernel"
	EventGap           = "gap"
)

// size approximates the memory an event holds, for the backlog's budget.
func (e *Event) size() int {
	n := 192 + len(e.ID) + len(e.Name) + len(e.Text) + len(e.Data) + len(e.Metadata) + len(e.DisplayID) +
		len(e.Value) + len(e.Status) + len(e.State) + len(e.Reason) + len(e.Path) + len(e.Change)
	if e.Prompt != nil {
		n += len(*e.Prompt)
	}
	for _, t := range e.Traceback {
		n += len(t) + 16
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// hub fans a session's events out to subscribers and keeps a bounded
// backlog for replay. It is safe for concurrent use.
type hub struct {
	mu        sync.Mutex
	seq       int64
	backlog   []Event
	bytes     int
	maxEvents int
	maxBytes  int
	subs      map[*Subscription]struct{}
	closed    bool
}

func newHub(maxEvents, maxBytes int) *hub {
	return &hub{maxEvents: maxEvents, maxBytes: maxBytes, subs: make(map[*Subscription]struct{})}
}

// Subscription receives a session's events. Read C until it is closed; it
// is closed when the session ends, when the subscriber falls too far
// behind (Lagged reports true), or after Close.
type Subscription struct {
	C      <-chan Event
	c      chan Event
	h      *hub
	lagged bool
}

// Lagged reports whether the subscription was dropped for not keeping up.
// The client should resubscribe from its last seen Seq.
func (s *Subscription) Lagged() bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.lagged
}

// Close ends the subscription. It is idempotent.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if _, ok := s.h.subs[s]; ok {
		delete(s.h.subs, s)
		close(s.c)
	}
}

// publish assigns the next Seq, stores the event and delivers it. A
// subscriber whose buffer is full is dropped (lagged) rather than blocking
// the session.
func (h *hub) publish(e Event) Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return e
	}
	h.seq++
	e.Seq = h.seq
	h.backlog = append(h.backlog, e)
	h.bytes += e.size()
	for len(h.backlog) > 1 && (len(h.backlog) > h.maxEvents || h.bytes > h.maxBytes) {
		h.bytes -= h.backlog[0].size()
		h.backlog[0] = Event{}
		h.backlog = h.backlog[1:]
	}
	for s := range h.subs {
		select {
		case s.c <- e:
		default:
			s.lagged = true
			delete(h.subs, s)
			close(s.c)
		}
	}
	return e
}

// subscribe returns a subscription that first replays the backlog after
// since, then receives live events.
func (h *hub) subscribe(since int64, buffer int) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	if since > h.seq { // a position from the future would silently skip events
		since = h.seq
	}
	var replay []Event
	if len(h.backlog) > 0 && h.backlog[0].Seq > since+1 {
		// The client missed events that have left the bounded backlog.
		replay = append(replay, Event{Seq: h.backlog[0].Seq - 1, Type: EventGap,
			Reason: fmt.Sprintf("events %d to %d are no longer in the backlog", since+1, h.backlog[0].Seq-1)})
	}
	for _, e := range h.backlog {
		if e.Seq > since {
			replay = append(replay, e)
		}
	}
	c := make(chan Event, buffer+len(replay))
	for _, e := range replay {
		c <- e
	}
	s := &Subscription{C: c, c: c, h: h}
	if h.closed {
		close(c)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

// close ends every subscription; later publishes are dropped.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.c)
	}
}
