package api

import "encoding/json"

// The frames of the native WebSocket (GET /v1/sessions/{id}/ws), one
// struct per frame type, exactly as the gateway writes them. Frames of
// the session's event log (the *Event types) begin with an Envelope; the
// answers to one client's frames and the comm frames (the *Frame types
// and CommEvent) are not in the log and carry no seq. Event is the flat
// union of them all that the Go client decodes into; a test proves it
// carries every field of every frame.
//
// Optional fields are omitted when empty; a pointer field is present
// when the gateway sets it, even to a zero value.

// ServerFrame is a frame the gateway writes on the native WebSocket.
type ServerFrame interface {
	// FrameType is the frame's type field.
	FrameType() EventType
}

// ServerFrames returns a zero value of every ServerFrame type, one per
// frame type: the list the schema generators and the tests walk.
func ServerFrames() []ServerFrame {
	return []ServerFrame{
		KernelEvent{}, QueuedEvent{}, StartedEvent{}, StreamEvent{}, DisplayEvent{}, UpdateDisplayEvent{},
		ClearOutputEvent{}, ResultEvent{}, ErrorEvent{}, InputRequestEvent{}, FileChangeEvent{}, DoneEvent{},
		GapEvent{}, NetworkEvent{}, ContextEvent{}, CommandEvent{}, PageEvent{}, SetNextInputEvent{}, AskExitEvent{},
		RejectedFrame{}, CompleteReplyFrame{}, InspectReplyFrame{}, CommEvent{}, CommSentFrame{}, CommInfoReplyFrame{},
	}
}

// Envelope is the head of every frame of a session's event log.
type Envelope struct {
	// Seq increases by one for every event of a session; a client resumes
	// after the last one it saw.
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	// ID is the client-chosen id of the execution the event belongs to.
	ID string `json:"id,omitempty"`
	// Context is the context whose kernel the event comes from; absent for
	// the session's first context and for events of the whole session.
	Context string `json:"context,omitempty"`
}

// KernelEvent is the session's kernel state (idle, busy, restarting or
// dead); the first frame of every connection.
type KernelEvent struct {
	Envelope
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"` // why it changed (a restart, a death)
}

// QueuedEvent says an execution waits in the session's queue.
type QueuedEvent struct {
	Envelope
	Position *int `json:"position,omitempty"` // executions ahead of it
}

// StartedEvent says an execution started running.
type StartedEvent struct {
	Envelope
}

// StreamEvent is output the code wrote to stdout or stderr.
type StreamEvent struct {
	Envelope
	Name string `json:"name,omitempty"` // stdout or stderr
	Text string `json:"text,omitempty"`
}

// DisplayEvent is a rich output (display_data).
type DisplayEvent struct {
	Envelope
	Data      Bundle          `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	DisplayID string          `json:"display_id,omitempty"`
}

// UpdateDisplayEvent replaces the output shown under DisplayID.
type UpdateDisplayEvent struct {
	Envelope
	Data      Bundle          `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	DisplayID string          `json:"display_id,omitempty"`
}

// ClearOutputEvent clears the execution's output (Wait: at the next
// output).
type ClearOutputEvent struct {
	Envelope
	Wait bool `json:"wait,omitempty"`
}

// ResultEvent is the value of the execution's last expression.
type ResultEvent struct {
	Envelope
	Data           Bundle          `json:"data,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	DisplayID      string          `json:"display_id,omitempty"`
	ExecutionCount *int            `json:"execution_count,omitempty"`
}

// ErrorEvent is the exception the code raised.
type ErrorEvent struct {
	Envelope
	Name      string   `json:"name,omitempty"` // the exception's name
	Value     string   `json:"value,omitempty"`
	Traceback []string `json:"traceback,omitempty"` // with ANSI colours
}

// InputRequestEvent asks the client for a line of input (an input_reply
// frame answers it).
type InputRequestEvent struct {
	Envelope
	Prompt   *string `json:"prompt,omitempty"`
	Password *bool   `json:"password,omitempty"`
}

// FileChangeEvent is a workspace change the execution made (the schema
// FileEvent; not the files-watch FileEvent).
type FileChangeEvent struct {
	Envelope
	Path   string `json:"path,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	Change string `json:"change,omitempty"` // created, modified or deleted
}

// DoneEvent ends an execution.
type DoneEvent struct {
	Envelope
	ExecutionCount *int   `json:"execution_count,omitempty"`
	Status         string `json:"status,omitempty"` // ok, error, timeout, interrupted, died or unknown
	DurationMS     *int64 `json:"duration_ms,omitempty"`
	Truncated      *bool  `json:"truncated,omitempty"`  // output was dropped past the gateway's caps
	StateLost      *bool  `json:"state_lost,omitempty"` // the variables did not survive
	Reason         string `json:"reason,omitempty"`
	// UserExpressions answers the execute frame's user_expressions.
	UserExpressions json.RawMessage `json:"user_expressions,omitempty"`
}

// GapEvent says events after the client's position have left the
// backlog: Seq is the last one lost.
type GapEvent struct {
	Envelope
	Reason string `json:"reason,omitempty"`
}

// NetworkEvent is a connection the session's egress proxy refused.
type NetworkEvent struct {
	Envelope
	Reason  string `json:"reason,omitempty"`
	Host    string `json:"host,omitempty"`
	Port    *int   `json:"port,omitempty"`
	Allowed *bool  `json:"allowed,omitempty"` // false: a refusal
}

// ContextEvent says a context (Envelope.Context) was created or deleted
// (State); Name is its kernel.
type ContextEvent struct {
	Envelope
	Name   string `json:"name,omitempty"`
	State  string `json:"state,omitempty"` // created or deleted
	Reason string `json:"reason,omitempty"`
}

// CommandEvent is a shell command's start (State "started", Text: the
// command), output (Name stdout or stderr, Text) or exit (State
// "exited").
type CommandEvent struct {
	Envelope
	Name       string `json:"name,omitempty"`
	Text       string `json:"text,omitempty"`
	DurationMS *int64 `json:"duration_ms,omitempty"` // exited
	State      string `json:"state,omitempty"`
	Reason     string `json:"reason,omitempty"` // exited: why it was killed
	PID        *int   `json:"pid,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"` // exited
	TimedOut   *bool  `json:"timed_out,omitempty"` // exited
}

// PageEvent is help to show (obj?, obj??).
type PageEvent struct {
	Envelope
	Data Bundle `json:"data,omitempty"`
}

// SetNextInputEvent is the next cell's text (%load); Replace: it
// replaces the current cell.
type SetNextInputEvent struct {
	Envelope
	Text    string `json:"text,omitempty"`
	Replace *bool  `json:"replace,omitempty"`
}

// AskExitEvent says the code called exit(); KeepKernel: with
// keep_kernel=True, the kernel goes on.
type AskExitEvent struct {
	Envelope
	KeepKernel *bool `json:"keep_kernel,omitempty"`
}

// RejectedFrame answers a frame the gateway cannot act on (to its
// client only).
type RejectedFrame struct {
	Type    EventType `json:"type"`
	ID      string    `json:"id,omitempty"`
	Code    string    `json:"code"` // bad_frame, unknown_type, rate_limited, queue_full, bad_comm, ...
	Message string    `json:"message"`
}

// CompleteReplyFrame answers a complete frame.
type CompleteReplyFrame struct {
	Type EventType `json:"type"`
	ID   string    `json:"id"`
	Completion
}

// InspectReplyFrame answers an inspect frame.
type InspectReplyFrame struct {
	Type     EventType       `json:"type"`
	ID       string          `json:"id"`
	Found    bool            `json:"found"`
	Data     Bundle          `json:"data"`
	Metadata json.RawMessage `json:"metadata"`
}

// CommEvent is a message of the kernel's side stream, to every client
// of the session (not in the event log: no seq, never replayed).
type CommEvent struct {
	Type EventType `json:"type"`
	// Context is the context whose kernel sent it; absent for the
	// session's first.
	Context string      `json:"context,omitempty"`
	Msg     CommMessage `json:"msg"`
}

// CommSentFrame answers a client's comm frame: MsgID is the msg_id it
// went to the kernel as.
type CommSentFrame struct {
	Type  EventType `json:"type"`
	ID    string    `json:"id"`
	MsgID string    `json:"msg_id"`
}

// CommInfoReplyFrame answers a comm_info frame: comm id → its target.
type CommInfoReplyFrame struct {
	Type  EventType             `json:"type"`
	ID    string                `json:"id"`
	Comms map[string]CommTarget `json:"comms"`
}

// FrameType implements ServerFrame.
func (KernelEvent) FrameType() EventType { return EventKernel }

// FrameType implements ServerFrame.
func (QueuedEvent) FrameType() EventType { return EventQueued }

// FrameType implements ServerFrame.
func (StartedEvent) FrameType() EventType { return EventStarted }

// FrameType implements ServerFrame.
func (StreamEvent) FrameType() EventType { return EventStream }

// FrameType implements ServerFrame.
func (DisplayEvent) FrameType() EventType { return EventDisplay }

// FrameType implements ServerFrame.
func (UpdateDisplayEvent) FrameType() EventType { return EventUpdateDisplay }

// FrameType implements ServerFrame.
func (ClearOutputEvent) FrameType() EventType { return EventClearOutput }

// FrameType implements ServerFrame.
func (ResultEvent) FrameType() EventType { return EventResult }

// FrameType implements ServerFrame.
func (ErrorEvent) FrameType() EventType { return EventError }

// FrameType implements ServerFrame.
func (InputRequestEvent) FrameType() EventType { return EventInputRequest }

// FrameType implements ServerFrame.
func (FileChangeEvent) FrameType() EventType { return EventFile }

// FrameType implements ServerFrame.
func (DoneEvent) FrameType() EventType { return EventDone }

// FrameType implements ServerFrame.
func (GapEvent) FrameType() EventType { return EventGap }

// FrameType implements ServerFrame.
func (NetworkEvent) FrameType() EventType { return EventNetwork }

// FrameType implements ServerFrame.
func (ContextEvent) FrameType() EventType { return EventContext }

// FrameType implements ServerFrame.
func (CommandEvent) FrameType() EventType { return EventCommand }

// FrameType implements ServerFrame.
func (PageEvent) FrameType() EventType { return EventPage }

// FrameType implements ServerFrame.
func (SetNextInputEvent) FrameType() EventType { return EventSetNextInput }

// FrameType implements ServerFrame.
func (AskExitEvent) FrameType() EventType { return EventAskExit }

// FrameType implements ServerFrame.
func (RejectedFrame) FrameType() EventType { return EventRejected }

// FrameType implements ServerFrame.
func (CompleteReplyFrame) FrameType() EventType { return EventCompleteReply }

// FrameType implements ServerFrame.
func (InspectReplyFrame) FrameType() EventType { return EventInspectReply }

// FrameType implements ServerFrame.
func (CommEvent) FrameType() EventType { return EventComm }

// FrameType implements ServerFrame.
func (CommSentFrame) FrameType() EventType { return EventCommSent }

// FrameType implements ServerFrame.
func (CommInfoReplyFrame) FrameType() EventType { return EventCommInfoReply }

// Client frame types.
const (
	FrameExecute    = "execute"
	FrameInterrupt  = "interrupt"
	FrameInputReply = "input_reply"
	FrameResume     = "resume"
	FrameComplete   = "complete"
	FrameInspect    = "inspect"
	FrameComm       = "comm"
	FrameCommInfo   = "comm_info"
)

// ClientFrame is a frame a client sends on the native WebSocket.
type ClientFrame interface {
	// ClientFrameType is the frame's type field.
	ClientFrameType() string
}

// ClientFrames returns a zero value of every ClientFrame type, one per
// frame type.
func ClientFrames() []ClientFrame {
	return []ClientFrame{ExecuteFrame{}, InterruptFrame{}, InputReplyFrame{}, ResumeFrame{},
		CompleteFrame{}, InspectFrame{}, CommFrame{}, CommInfoFrame{}}
}

// ExecuteFrame runs code, as ExecuteRequest does (ID is required; the
// execution's events carry it).
type ExecuteFrame struct {
	Type            string            `json:"type"`
	ID              string            `json:"id"`
	Code            string            `json:"code"`
	TimeoutS        *float64          `json:"timeout_s,omitempty"`
	Context         string            `json:"context,omitempty"`
	Language        string            `json:"language,omitempty"`
	Envs            map[string]string `json:"envs,omitempty"`
	Cwd             string            `json:"cwd,omitempty"`
	UserExpressions map[string]string `json:"user_expressions,omitempty"`
}

// InterruptFrame interrupts the running execution of Context, or of
// every context when absent.
type InterruptFrame struct {
	Type    string `json:"type"`
	Context string `json:"context,omitempty"`
}

// InputReplyFrame answers the input_request of execution ID.
type InputReplyFrame struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Value string `json:"value"`
}

// ResumeFrame asks for every event after Since to be replayed.
type ResumeFrame struct {
	Type  string `json:"type"`
	Since int64  `json:"since"`
}

// CompleteFrame asks for completions (a complete_reply with its ID
// answers).
type CompleteFrame struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Code      string `json:"code"`
	CursorPos int    `json:"cursor_pos"` // in Unicode code points
	Context   string `json:"context,omitempty"`
	Language  string `json:"language,omitempty"`
}

// InspectFrame asks for help on the name at the cursor (an
// inspect_reply with its ID answers).
type InspectFrame struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Code        string `json:"code"`
	CursorPos   int    `json:"cursor_pos"`
	DetailLevel int    `json:"detail_level"` // 0 or 1
	Context     string `json:"context,omitempty"`
	Language    string `json:"language,omitempty"`
}

// CommFrame sends a comm message (comm_open, comm_msg or comm_close) to
// the session's first kernel; comm_sent or rejected answers.
type CommFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Context is where a comm_open goes ("" or absent: the session's
	// first context); a comm_msg or comm_close goes to the kernel whose
	// comm it names.
	Context  string          `json:"context,omitempty"`
	MsgType  string          `json:"msg_type"`
	Content  json.RawMessage `json:"content"`            // a JSON object
	Metadata json.RawMessage `json:"metadata,omitempty"` // a JSON object
	Buffers  []string        `json:"buffers,omitempty"`  // base64
}

// CommInfoFrame asks for the open comms of TargetName ("": all).
type CommInfoFrame struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	TargetName string `json:"target_name,omitempty"`
	// Context is whose comms are listed ("" or absent: the session's
	// first context's).
	Context string `json:"context,omitempty"`
}

// ClientFrameType implements ClientFrame.
func (ExecuteFrame) ClientFrameType() string { return FrameExecute }

// ClientFrameType implements ClientFrame.
func (InterruptFrame) ClientFrameType() string { return FrameInterrupt }

// ClientFrameType implements ClientFrame.
func (InputReplyFrame) ClientFrameType() string { return FrameInputReply }

// ClientFrameType implements ClientFrame.
func (ResumeFrame) ClientFrameType() string { return FrameResume }

// ClientFrameType implements ClientFrame.
func (CompleteFrame) ClientFrameType() string { return FrameComplete }

// ClientFrameType implements ClientFrame.
func (InspectFrame) ClientFrameType() string { return FrameInspect }

// ClientFrameType implements ClientFrame.
func (CommFrame) ClientFrameType() string { return FrameComm }

// ClientFrameType implements ClientFrame.
func (CommInfoFrame) ClientFrameType() string { return FrameCommInfo }

// AnyClientFrame is the union of the client frames, as the gateway
// decodes one in a single pass: a pointer field is nil when the frame
// lacks it. A test proves it carries every field of every ClientFrame.
type AnyClientFrame struct {
	Type            string            `json:"type"`
	ID              string            `json:"id"`
	Code            *string           `json:"code"`
	TimeoutS        *float64          `json:"timeout_s"`
	Value           *string           `json:"value"`
	Since           *int64            `json:"since"`
	CursorPos       *int              `json:"cursor_pos"`
	DetailLevel     int               `json:"detail_level"`
	Context         string            `json:"context"`
	Language        string            `json:"language"`
	Envs            map[string]string `json:"envs"`
	Cwd             string            `json:"cwd"`
	UserExpressions map[string]string `json:"user_expressions"`
	MsgType         string            `json:"msg_type"`
	Content         json.RawMessage   `json:"content"`
	Metadata        json.RawMessage   `json:"metadata"`
	Buffers         []string          `json:"buffers"`
	TargetName      string            `json:"target_name"`
}
