package kernel

import (
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
}

type eventContent struct {
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	Data      MimeBundle      `json:"data"`
	Metadata  json.RawMessage `json:"metadata"`
	Transient struct {
		DisplayID string `json:"display_id"`
	} `json:"transient"`
	ExecutionCount *int     `json:"execution_count"`
	EName          string   `json:"ename"`
	EValue         string   `json:"evalue"`
	Traceback      []string `json:"traceback"`
	Wait           bool     `json:"wait"`
	Prompt         string   `json:"prompt"`
	Password       bool     `json:"password"`
	ExecutionState string   `json:"execution_state"`
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
		Data: c.Data, Metadata: c.Metadata, DisplayID: c.Transient.DisplayID,
		EName: c.EName, EValue: c.EValue, Traceback: c.Traceback,
		Wait: c.Wait, Prompt: c.Prompt, Password: c.Password, State: c.ExecutionState,
	}
	if c.ExecutionCount != nil {
		ev.ExecutionCount = *c.ExecutionCount
	}
	if kind == EventStream && c.Name != "stdout" && c.Name != "stderr" {
		return Event{}, false, fmt.Errorf("%w: stream name %q", ErrMalformed, c.Name)
	}
	return ev, true, nil
}

// ExecuteReply is the shell reply to an execute_request.
type ExecuteReply struct {
	Status         string // "ok", "error" or "aborted"
	ExecutionCount int
	EName          string
	EValue         string
	Traceback      []string
}
