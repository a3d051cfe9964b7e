package sessions

import (
	"encoding/json"
	"fmt"
	"sync"
)

// EventType names what an Event reports.
type EventType string

// Event types.
const (
	EventQueued        EventType = "queued"
	EventStarted       EventType = "started"
	EventStream        EventType = "stream"
	EventDisplay       EventType = "display"
	EventUpdateDisplay EventType = "update_display"
	EventClearOutput   EventType = "clear_output"
	EventResult        EventType = "result"
	EventError         EventType = "error"
	EventInputRequest  EventType = "input_request"
	EventFile          EventType = "file"
	EventDone          EventType = "done"
	EventKernel        EventType = "kernel"
	EventGap           EventType = "gap"
	EventNetwork       EventType = "network" // a connection the egress proxy refused
	EventContext       EventType = "context" // a context was created or deleted (State), or its kernel's state changed
	EventCommand       EventType = "command" // a command started, wrote output (Name, Text) or exited (State)
	// From an execute_reply's payload, before its done event: help text
	// to show (Data, a MIME bundle: obj?), the next cell's text (Text,
	// Replace: %load), and the code's wish to end the session (exit()).
	EventPage         EventType = "page"
	EventSetNextInput EventType = "set_next_input"
	EventAskExit      EventType = "ask_exit"
)

// Event is one message of the session's event stream, in the wire shape
// the WebSocket protocol uses. Which fields are set depends on Type.
type Event struct {
	// Seq increases by one for every event of a session; clients resume
	// after a reconnect by asking for events after the last Seq they saw.
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	// ID is the client-chosen id of the execution the event belongs to.
	ID string `json:"id,omitempty"`
	// Context is the context whose kernel the event comes from; "" for the
	// session's first (FirstContext) and for events of the whole session.
	Context string `json:"context,omitempty"`

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
	Status         Status          `json:"status,omitempty"` // done
	DurationMS     *int64          `json:"duration_ms,omitempty"`
	Truncated      *bool           `json:"truncated,omitempty"`
	StateLost      *bool           `json:"state_lost,omitempty"`
	State          string          `json:"state,omitempty"` // kernel
	Reason         string          `json:"reason,omitempty"`
	Path           string          `json:"path,omitempty"` // file
	Size           *int64          `json:"size,omitempty"`
	Change         string          `json:"change,omitempty"`
	Position       *int            `json:"position,omitempty"` // queued
	Host           string          `json:"host,omitempty"`     // network
	Port           *int            `json:"port,omitempty"`
	Allowed        *bool           `json:"allowed,omitempty"`
	PID            *int            `json:"pid,omitempty"`       // command
	ExitCode       *int            `json:"exit_code,omitempty"` // command: exited
	TimedOut       *bool           `json:"timed_out,omitempty"` // command: exited

	// UserExpressions is the execution's (done events; see
	// Execution.UserExpressions).
	UserExpressions json.RawMessage `json:"user_expressions,omitempty"`
	// Replace says a set_next_input replaces the current cell.
	Replace *bool `json:"replace,omitempty"`
	// KeepKernel says an ask_exit came from exit(keep_kernel=True): the
	// kernel goes on; without it the kernel stops (and is restarted).
	KeepKernel *bool `json:"keep_kernel,omitempty"`

	// Exec describes the execution on started events, for the Jupyter
	// face; it is not part of the /v1 wire shape.
	Exec *ExecInfo `json:"-"`
	// Payload is the execute_reply's payload on done events, passed
	// through to Jupyter clients; /v1 clients get page, set_next_input and
	// ask_exit events instead.
	Payload []json.RawMessage `json:"-"`
}

// entryOverhead is counted for each string of a list: what Go keeps
// besides its bytes.
const entryOverhead = 32

// size approximates the memory an event holds, for the budgets.
func (e *Event) size() int {
	n := 256 + len(e.ID) + len(e.Name) + len(e.Text) + len(e.Data) + len(e.Metadata) + len(e.DisplayID) +
		len(e.Value) + len(e.Status) + len(e.State) + len(e.Reason) + len(e.Path) + len(e.Change) + len(e.Host) + e.Exec.size()
	if e.Prompt != nil {
		n += len(*e.Prompt)
	}
	for _, t := range e.Traceback {
		n += len(t) + entryOverhead
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// hub is a session's event log: it numbers the session's events, fans
// them out to subscribers and keeps a bounded backlog for replay, charged
// to the gateway's Budget. It is safe for concurrent use; its mutex mu
// guards everything below it (the subscriptions' bookkeeping too) and is
// innermost: publish may be called with the session's mu held.
type hub struct {
	budget   *Account
	observer Observer
	maxItems int
	maxBytes int
	subItems int
	subBytes int

	mu      sync.Mutex
	seq     int64
	backlog []held
	bytes   int
	subs    map[*Subscription]struct{}
	closed  bool
}

type held struct {
	ev   Event
	size int
}

// newHub returns a hub whose first event is numbered seq+1.
func newHub(cfg Config, budget *Account, seq int64) *hub {
	obs := cfg.Observer
	if obs == nil {
		obs = noObserver{}
	}
	return &hub{budget: budget, observer: obs, maxItems: cfg.BacklogEvents, maxBytes: cfg.BacklogBytes, seq: seq,
		subItems: cfg.SubscriberBuffer, subBytes: cfg.SubscriberBytes, subs: make(map[*Subscription]struct{})}
}

// Subscription receives a session's events. Read C until it is closed; it
// is closed when the session ends, when the subscriber falls too far
// behind (Lagged reports true), or after Close.
type Subscription struct {
	C      <-chan Event
	c      chan Event
	h      *hub
	lagged bool
	// sizes of the events in c, oldest first, and their sum: consumed
	// events are dropped from the front when the next one is sent.
	sizes  []int
	queued int
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
	s.h.drop(s, false)
}

// drop removes s; the caller holds h.mu.
func (h *hub) drop(s *Subscription, lagged bool) {
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		s.lagged = lagged
		s.sizes, s.queued = nil, 0
		close(s.c)
	}
}

// offer queues e (of size n) to s, or drops s as lagged when its buffer
// is full by count or by bytes. The caller holds h.mu.
func (h *hub) offer(s *Subscription, e Event, n int) {
	for len(s.sizes) > len(s.c) { // consumed since the last offer
		s.queued -= s.sizes[0]
		s.sizes = s.sizes[1:]
	}
	if len(s.c) == cap(s.c) || (len(s.sizes) > 0 && s.queued+n > h.subBytes) {
		h.drop(s, true)
		return
	}
	s.c <- e
	s.sizes = append(s.sizes, n)
	s.queued += n
}

// publish assigns the next Seq, keeps the event in the backlog if the
// budgets allow (evicting the oldest first; an event that cannot be kept
// empties the backlog, so replay never skips silently) and delivers it to
// every subscriber. It returns the event with its Seq.
func (h *hub) publish(e Event) Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return e
	}
	h.seq++
	e.Seq = h.seq
	n := e.size()
	h.observer.Published(n)
	for len(h.backlog) > 0 && (len(h.backlog) >= h.maxItems || h.bytes+n > h.maxBytes) {
		h.evictOldest()
	}
	kept := false
	for n <= h.maxBytes && !kept {
		if kept = h.budget.TryAcquire(n); !kept && len(h.backlog) == 0 {
			break
		}
		if !kept {
			h.evictOldest() // the gateway's budget is spent: this session gives up its oldest first
		}
	}
	if kept {
		h.backlog = append(h.backlog, held{e, n})
		h.bytes += n
	} else {
		// The backlog stays contiguous: a client resuming from before this
		// event is told of a gap rather than silently missing it.
		for len(h.backlog) > 0 {
			h.evictOldest()
		}
	}
	for s := range h.subs {
		h.offer(s, e, n)
	}
	return e
}

// last returns the sequence number of the newest event.
func (h *hub) last() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

func (h *hub) evictOldest() {
	h.bytes -= h.backlog[0].size
	h.budget.Release(h.backlog[0].size)
	h.backlog[0] = held{}
	h.backlog = h.backlog[1:]
}

// subscribe returns a subscription that first replays the backlog after
// since, then receives live events.
func (h *hub) subscribe(since int64) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	if since > h.seq { // a position from the future would silently skip events
		since = h.seq
	}
	var replay []held
	first := h.seq + 1 // the oldest event still kept
	if len(h.backlog) > 0 {
		first = h.backlog[0].ev.Seq
	}
	if first > since+1 {
		// The client missed events that have left the bounded backlog.
		gap := Event{Seq: first - 1, Type: EventGap,
			Reason: fmt.Sprintf("events %d to %d are no longer in the backlog", since+1, first-1)}
		replay = append(replay, held{gap, gap.size()})
	}
	for _, it := range h.backlog {
		if it.ev.Seq > since {
			replay = append(replay, it)
		}
	}
	c := make(chan Event, h.subItems+len(replay))
	s := &Subscription{C: c, c: c, h: h}
	for _, it := range replay {
		c <- it.ev
		s.sizes = append(s.sizes, it.size)
		s.queued += it.size
	}
	if h.closed {
		close(c)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

// close ends every subscription, returns the backlog's bytes to the
// budget; later publishes are dropped.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for len(h.backlog) > 0 {
		h.evictOldest()
	}
	for s := range h.subs {
		h.drop(s, false)
	}
}
