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

	// stream
	Name string // "stdout" or "stderr"
	Text string

	// display_data, update_display_data, execute_result
	Data      MimeBundle
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
		n += len(k) + len(v) + EntryOverhead
	}
	for _, t := range e.Traceback {
		n += len(t) + EntryOverhead
	}
	return n
}

type eventContent struct {
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	Data      json.RawMessage `json:"data"`
	Metadata  json.RawMessage `json:"metadata"`
	Transient struct {
		DisplayID string `json:"display_id"`
	} `json:"transient"`
	ExecutionCount *int            `json:"execution_count"`
	EName          string          `json:"ename"`
	EValue         string          `json:"evalue"`
	Traceback      json.RawMessage `json:"traceback"`
	Wait           bool            `json:"wait"`
	Prompt         string          `json:"prompt"`
	Password       bool            `json:"password"`
	ExecutionState string          `json:"execution_state"`
}

// decodeEvent turns an iopub or stdin message into an Event. ok is false for
// message types that are not output (execute_input, comm messages, ...).
func decodeEvent(msg *Message) (ev Event, ok bool, err error) {
	kind := EventKind(msg.Header.MsgType)
	switch kind {
	case EventStream, EventDisplay, EventUpdateDisplay, EventResult, EventError,
		EventClearOutput, EventInputRequest, EventStatus:
	default:
		return Event{}, false, nil
	}
	var c eventContent
	if err := json.Unmarshal(msg.Content, &c); err != nil {
		return Event{}, false, fmt.Errorf("%w: %s content: %v", ErrMalformed, kind, err)
	}
	ev = Event{
		Kind: kind, Name: c.Name, Text: c.Text,
		Metadata: c.Metadata, DisplayID: c.Transient.DisplayID,
		EName: c.EName, EValue: c.EValue,
		Wait: c.Wait, Prompt: c.Prompt, Password: c.Password, State: c.ExecutionState,
	}
	if c.ExecutionCount != nil {
		ev.ExecutionCount = *c.ExecutionCount
	}
	if kind == EventStream && c.Name != "stdout" && c.Name != "stderr" {
		return Event{}, false, fmt.Errorf("%w: stream name %q", ErrMalformed, c.Name)
	}
	var cut bool
	if ev.Data, cut, err = decodeBundle(c.Data); err != nil {
		return Event{}, false, fmt.Errorf("%w: %s data: %v", ErrMalformed, kind, err)
	}
	ev.Truncated = cut
	if ev.Traceback, cut, err = decodeStrings(c.Traceback, MaxTracebackEntries, MaxTracebackBytes); err != nil {
		return Event{}, false, fmt.Errorf("%w: %s traceback: %v", ErrMalformed, kind, err)
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

// decodeBundle decodes a MIME bundle, keeping at most MaxBundleEntries
// entries with keys of at most 255 bytes.
func decodeBundle(raw json.RawMessage) (MimeBundle, bool, error) {
	if isNull(raw) {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, fmt.Errorf("not an object")
	}
	out := MimeBundle{}
	for dec.More() {
		if len(out) == MaxBundleEntries {
			return out, true, nil
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		if len(key) > maxBundleKey {
			return out, true, nil
		}
		out[key] = v
	}
	return out, false, nil
}

// ExecuteReply is the shell reply to an execute_request.
type ExecuteReply struct {
	Status         string // "ok", "error" or "aborted"
	ExecutionCount int
	EName          string
	EValue         string
	Traceback      []string
	// Truncated reports that output of the request was cut: a message over
	// the channel's ceiling, or a list longer than the decoder keeps.
	Truncated bool
}
