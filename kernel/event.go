package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EventKind is the Jupyter msg_type of an output event.
type EventKind string

// Event kinds delivered by Client.Execute, in kernel order.
const (
	EventStream        EventKind = "stream"
	EventDisplay       EventKind = "display_data"
	EventUpdateDisplay EventKind = "update_display_data"
	EventResult        EventKind = "execute_result"
	EventError         EventKind = "error"
	EventClearOutput   EventKind = "clear_output"
	EventInputRequest  EventKind = "input_request"
	EventStatus        EventKind = "status"
	// EventComm is a comm_open, comm_msg or comm_close of the request
	// (ExecuteOptions.CommEvents), in Msg.
	EventComm EventKind = "comm"
	// EventCut is not a Jupyter message: it reports that a message of the
	// request was over the channel's size ceiling and was dropped unread.
	EventCut EventKind = "glassroom_cut"
)

// MimeBundle maps MIME types to their JSON values (strings for text and
// base64 binary data, objects for application/json).
type MimeBundle map[string]json.RawMessage

// Event is one decoded output of a request. Which fields are set depends on
// Kind.
type Event struct {
	Kind EventKind

	// SideBefore is how many messages the side stream had taken in
	// (Client.SideAccepted) when this event was routed: a caller that
	// relays both writes those first (see Client.SideReady for the
	// converse).
	SideBefore int64
	// order is the event's iopub number (0 for another channel's): the
	// caller releases it once handled (outputOrder).
	order int64

	// stream
	Name string // "stdout" or "stderr"
	Text string

	// display_data, update_display_data, execute_result
	Data MimeBundle
	// DataJSON is the data object as the kernel sent it, when it was kept
	// whole; Data's values share its bytes. It is nil when the bundle was
	// cut (then marshal Data).
	DataJSON  json.RawMessage
	Metadata  json.RawMessage
	DisplayID string

	// execute_result
	ExecutionCount int

	// error
	EName     string
	EValue    string
	Traceback []string

	// clear_output
	Wait bool

	// input_request
	Prompt   string
	Password bool

	// status
	State string // "busy", "idle", "starting", ...

	// Truncated is set when a list or map the kernel sent was longer than
	// the decoder keeps (see MaxTracebackEntries, MaxBundleEntries).
	Truncated bool

	// comm (EventComm): the kernel's message as it arrived (verified, its
	// content and metadata not checked); it must not be modified.
	Msg *Message
}

// Bounds the decoder applies to lists and maps a kernel chooses, so that a
// message of a few MiB cannot become hundreds of MiB of Go values.
const (
	MaxTracebackEntries = 1000
	MaxTracebackBytes   = 1 << 20
	MaxBundleEntries    = 64
	maxBundleKey        = 255
	// EntryOverhead is counted for every string of a list and every map
	// entry: what Go keeps besides the bytes.
	EntryOverhead = 32
)

// Size approximates the memory the event holds.
func (e *Event) Size() int {
	n := 128 + len(e.Name) + len(e.Text) + len(e.Metadata) + len(e.DisplayID) + len(e.EName) + len(e.EValue) + len(e.Prompt) + len(e.State)
	for k, v := range e.Data {
		n += len(k) + EntryOverhead
		if e.DataJSON == nil {
			n += len(v)
		}
	}
	n += len(e.DataJSON)
	for _, t := range e.Traceback {
		n += len(t) + EntryOverhead
	}
	if e.Msg != nil {
		n += sideBound(e.Msg)
	}
	return n
}

// maxContentMembers bounds the top-level members of a message's content
// the decoder looks at.
const maxContentMembers = 64

// decodeEvent turns an iopub or stdin message into an Event. ok is false for
// message types that are not output (execute_input, comm messages, ...).
// Large values are copied once, small ones decoded; nothing of the
// message's frames is retained, so an event's Size is what it holds.
func decodeEvent(msg *Message) (ev Event, ok bool, err error) {
	kind := EventKind(msg.Header.MsgType)
	switch kind {
	case EventStream, EventDisplay, EventUpdateDisplay, EventResult, EventError,
		EventClearOutput, EventInputRequest, EventStatus:
	default:
		return Event{}, false, nil
	}
	fs, _, isObject := members(msg.Content, maxContentMembers)
	if !isObject {
		return Event{}, false, fmt.Errorf("%w: %s content is not an object", ErrMalformed, kind)
	}
	ev = Event{Kind: kind}
	var count *int
	var transient struct {
		DisplayID string `json:"display_id"`
	}
	for _, d := range []struct {
		key string
		dst any
	}{
		{"name", &ev.Name}, {"text", &ev.Text}, {"ename", &ev.EName}, {"evalue", &ev.EValue},
		{"prompt", &ev.Prompt}, {"password", &ev.Password}, {"wait", &ev.Wait},
		{"execution_state", &ev.State}, {"execution_count", &count}, {"transient", &transient},
	} {
		if v := get(fs, d.key); v != nil && !isNull(v) {
			if err := json.Unmarshal(v, d.dst); err != nil {
				return Event{}, false, fmt.Errorf("%w: %s %s: %w", ErrMalformed, kind, d.key, err)
			}
		}
	}
	ev.DisplayID = transient.DisplayID
	if count != nil {
		ev.ExecutionCount = *count
	}
	if kind == EventStream && ev.Name != "stdout" && ev.Name != "stderr" {
		return Event{}, false, fmt.Errorf("%w: stream name %q", ErrMalformed, ev.Name)
	}
	if v := get(fs, "metadata"); v != nil && !isNull(v) {
		ev.Metadata = bytes.Clone(v)
	}
	var cut bool
	if ev.Data, ev.DataJSON, cut, err = decodeBundle(get(fs, "data")); err != nil {
		return Event{}, false, fmt.Errorf("%w: %s data: %w", ErrMalformed, kind, err)
	}
	ev.Truncated = cut
	if ev.Traceback, cut, err = decodeStrings(get(fs, "traceback"), MaxTracebackEntries, MaxTracebackBytes); err != nil {
		return Event{}, false, fmt.Errorf("%w: %s traceback: %w", ErrMalformed, kind, err)
	}
	ev.Truncated = ev.Truncated || cut
	return ev, true, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// decodeStrings decodes a JSON array of strings, keeping at most maxItems
// entries and maxBytes bytes (counting EntryOverhead per entry); cut
// reports that some were left out. Nothing past the bound is allocated.
func decodeStrings(raw json.RawMessage, maxItems, maxBytes int) (out []string, cut bool, err error) {
	if isNull(raw) {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, false, fmt.Errorf("not an array")
	}
	size := 0
	for dec.More() {
		if len(out) == maxItems {
			return out, true, nil
		}
		var s string
		if err := dec.Decode(&s); err != nil {
			return nil, false, err
		}
		if size += len(s) + EntryOverhead; size > maxBytes {
			return out, true, nil
		}
		out = append(out, s)
	}
	return out, false, nil
}

// decodeBundle decodes a MIME bundle: at most MaxBundleEntries entries
// with plain keys of at most 255 bytes. When the bundle is kept whole it
// is copied once, into raw, and the entries' values share those bytes;
// when entries were cut, raw is nil.
func decodeBundle(data json.RawMessage) (bundle MimeBundle, raw json.RawMessage, cut bool, err error) {
	if isNull(data) {
		return nil, nil, false, nil
	}
	fs, cut, ok := members(data, MaxBundleEntries)
	if !ok {
		return nil, nil, false, fmt.Errorf("not an object")
	}
	for _, f := range fs {
		cut = cut || f.key == "" || len(f.key) > maxBundleKey
	}
	if !cut {
		// One copy, compacted: clients get the kernel's bundle as it was,
		// without its whitespace.
		var b bytes.Buffer
		b.Grow(len(data))
		if err := json.Compact(&b, data); err != nil {
			return nil, nil, false, err
		}
		raw = b.Bytes()
		fs, _, _ = members(raw, MaxBundleEntries)
	}
	bundle = make(MimeBundle, len(fs))
	for _, f := range fs {
		if f.key == "" || len(f.key) > maxBundleKey {
			continue
		}
		if raw == nil {
			f.value = bytes.Clone(f.value)
		}
		bundle[f.key] = f.value
	}
	return bundle, raw, cut, nil
}

// ExecuteReply is the shell reply to an execute_request.
type ExecuteReply struct {
	Status         string // "ok", "error" or "aborted"
	ExecutionCount int
	EName          string
	EValue         string
	Traceback      []string
	// Payload holds the reply's payload entries (objects with a "source":
	// "page", "set_next_input", "ask_exit", ...), bounded (decodePayload).
	Payload []json.RawMessage
	// UserExpressions is the reply's user_expressions object (each name's
	// status and MIME bundle), nil when it is empty; bounded.
	UserExpressions json.RawMessage
	// Truncated reports that output of the request was cut: a message over
	// the channel's ceiling, or a list longer than the decoder keeps.
	Truncated bool
}
