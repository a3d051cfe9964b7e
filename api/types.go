package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ErrMalformed is the error of a value that is not what the API promises (a MIME bundle that is
// not a JSON object, a binary MIME value that is not base64).
var ErrMalformed = errors.New("unexpected response")

// Session is a session as the gateway reports it.
type Session struct {
	ID           string            `json:"id"`
	State        string            `json:"state"` // idle, busy, restarting, dead or hibernated
	Runtime      string            `json:"runtime"`
	CreatedAt    time.Time         `json:"created_at"`
	ExpiresAt    time.Time         `json:"expires_at"`
	IdleTimeoutS int               `json:"idle_timeout_s"`
	Queued       int               `json:"queued"`
	Limits       Limits            `json:"limits"`
	Network      *Network          `json:"network,omitempty"` // nil: no network
	Paused       bool              `json:"paused"`            // frozen: by the idle pause (the next request thaws it) or by a client (PauseSession; until ResumeSession)
	Language     string            `json:"language"`          // the first context's kernel: python3, r, javascript, typescript or bash
	Template     string            `json:"template"`          // the template it was created from
	Metadata     map[string]string `json:"metadata"`          // the client's, as given at creation
	EndAt        time.Time         `json:"end_at"`            // when its lifetime ends (ExpiresAt: the earlier of this and idle expiry)
	// PausedByClient: a client paused it (PauseSession): frozen until
	// ResumeSession. Paused without it is the idle freeze, which the next
	// request thaws: to E2B's SDKs such a session is running.
	PausedByClient bool `json:"paused_by_client"`
	// PreviewHost, on a gateway that serves previews: the preview of
	// port P is at {P}-{PreviewHost} (E2B's get_host), a host that
	// carries its grant and works until the session ends, unless its
	// previews are private (PrivatePreviews: then the host carries none).
	PreviewHost string `json:"preview_host,omitempty"`
	// Volumes are the tenant's volumes it mounts: name → path.
	Volumes map[string]string `json:"volumes,omitempty"`
	// AccessToken, in the answers of POST /v1/sessions and GET
	// /v1/sessions/{id} (E2B's envd access token): sent as the
	// X-Access-Token header instead of the API key, it grants what runs
	// inside this session (its code, files, commands, terminals and
	// previews), not its lifecycle nor any other session, until the
	// session ends.
	AccessToken string `json:"access_token,omitempty"`
	// PrivatePreviews: its previews need a grant besides their host
	// (CreateSessionRequest.PrivatePreviews). TrafficAccessToken, then,
	// in the answers that carry AccessToken (E2B's traffic access
	// token): sent in the E2b-Traffic-Access-Token (or
	// Glassroom-Preview-Token) header, it grants the previews of every
	// port of this session until it ends.
	PrivatePreviews    bool   `json:"private_previews,omitempty"`
	TrafficAccessToken string `json:"traffic_access_token,omitempty"`
	// Lifecycle is the session's (CreateSessionRequest.Lifecycle), when
	// it pauses at its timeout; PausedAtTimeout: it is paused so now
	// (PausedByClient is set too).
	Lifecycle       *Lifecycle `json:"lifecycle,omitempty"`
	PausedAtTimeout bool       `json:"paused_at_timeout,omitempty"`
	// Restore is, in the answer that creates a session from a snapshot
	// (or a fork), what it got of it.
	Restore *RestoreReport `json:"restore,omitempty"`
	// Hibernated: the session is hibernated (its sandbox freed, its
	// state in a snapshot; state "hibernated"): its next use wakes it, or
	// with its lifecycle's auto_resume false a resume does.
	Hibernated bool `json:"hibernated,omitempty"`
}

// Template is an operator's session preset (GET /v1/templates).
type Template struct {
	Name         string            `json:"name"`
	Description  string            `json:"description,omitempty"`
	Language     string            `json:"language"`
	Limits       Limits            `json:"limits"`
	Network      Network           `json:"network"`
	IdleTimeoutS float64           `json:"idle_timeout_s,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
}

// SessionList is the body of GET /v1/sessions: a page of sessions and
// the token of the next (nil on the last).
type SessionList struct {
	Sessions  []Session `json:"sessions"`
	NextToken *string   `json:"next_token"`
}

// Metrics is a session's resource use (GET /v1/sessions/{id}/metrics,
// E2B's names): CPU and memory from its sandbox's cgroup, disk from its
// workspace; bytes. Fields the runtime cannot see are zero.
type Metrics struct {
	Timestamp  time.Time `json:"timestamp"`
	CPUCount   int       `json:"cpu_count"`
	CPUUsedPct float64   `json:"cpu_used_pct"`
	MemUsed    int64     `json:"mem_used"`
	MemTotal   int64     `json:"mem_total"`
	DiskUsed   int64     `json:"disk_used"`
	DiskTotal  int64     `json:"disk_total"`
}

// MetricsHistory is a session's samples within a time range (GET
// /v1/sessions/{id}/metrics/history), oldest first: one every
// collection interval (5 s) while it runs, the last ten minutes or so.
type MetricsHistory struct {
	Samples []Metrics `json:"samples"`
}

// FileEvent is a frame of the files-watch WebSocket (E2B's
// FilesystemEvent): Type create, write, remove, rename, chmod, or
// overflow (events were dropped); Name relative to the watched directory.
// Entry, with ?entry=true, describes the path as it is when the event is
// sent (best effort: none once it is gone, and none for remove, rename
// and overflow). Type synced, with ID, answers the client's
// WatchSyncRequest of that ID: every event of a change made before the
// request was sent came before it.
type FileEvent struct {
	Type  string     `json:"type"`
	Name  string     `json:"name,omitempty"`
	Entry *FileEntry `json:"entry,omitempty"`
	ID    string     `json:"id,omitempty"`
}

// WatchSyncRequest is the one frame a client sends on the files-watch
// WebSocket: {"type": "sync", "id": ...} (an ID of at most
// MaxWatchSyncID bytes) asks for a FileEvent of type synced with that ID,
// a barrier: a client that wrote a file and then syncs has its events
// once the answer comes.
type WatchSyncRequest struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// MaxWatchSyncID bounds WatchSyncRequest.ID.
const MaxWatchSyncID = 64

// Context is one kernel of a session: its own language, working
// directory and variables, sharing the session's workspace and limits.
type Context struct {
	ID       string `json:"id"`       // "default" for the session's first
	Language string `json:"language"` // the kernel's name: python3, r, javascript, typescript, bash
	Cwd      string `json:"cwd"`
	State    string `json:"state"`   // idle, busy, restarting or dead
	Default  bool   `json:"default"` // requests naming only its language run here
}

// Kernel is a language the gateway can run (GET /v1/kernels).
type Kernel struct {
	Name        string   `json:"name"`
	Language    string   `json:"language"`
	DisplayName string   `json:"display_name"`
	Aliases     []string `json:"aliases,omitempty"`
	// Label is the notebook prompt's short label ("Python", "JS").
	Label string `json:"label,omitempty"`
	// Mode is the notebook editor's syntax mode ("" for plain text).
	Mode string `json:"mode,omitempty"`
	// LanguageInfo is the kernel's language_info without its version
	// (name, mimetype, file_extension, codemirror_mode, pygments_lexer,
	// nbconvert_exporter): what a saved notebook records.
	LanguageInfo map[string]any `json:"language_info,omitempty"`
}

// Network is what a session's kernel may reach through the gateway's
// egress proxy: host patterns ("pypi.org", "*.pythonhosted.org",
// "api.example.com:443"), within what the gateway's operator allows.
type Network struct {
	Allow []string `json:"allow"`
	// Deny lists destinations refused even when Allow has them (names,
	// literals, CIDR blocks; without a port, every port).
	Deny []string `json:"deny,omitempty"`
}

// Limits are a session's resource limits. In CreateOptions a zero field
// means the gateway's default.
type Limits struct {
	MemoryMB    int     `json:"memory_mb,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	Pids        int     `json:"pids,omitempty"`
	WorkspaceMB int     `json:"workspace_mb,omitempty"`
}

// Execution statuses.
const (
	StatusOK          = "ok"
	StatusError       = "error"
	StatusTimeout     = "timeout"
	StatusInterrupted = "interrupted"
	StatusDied        = "died"
)

// Execution is the outcome of one execution, from Execute or Run.
type Execution struct {
	ID             string `json:"id"`
	Status         string `json:"status"` // ok, error, timeout, interrupted or died
	ExecutionCount int    `json:"execution_count"`
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	// Outputs are the execution's output events in order: stream,
	// display, update_display, clear_output, result, error and file, then
	// what the code asked of its front end (page, set_next_input,
	// ask_exit).
	Outputs []Event `json:"outputs"`
	// Result is the value of the last expression (nil when there is none).
	Result Bundle `json:"result"`
	// Error is the exception the code raised, if any.
	Error *ExecError `json:"error"`
	// Truncated says output was dropped past the gateway's caps.
	Truncated bool `json:"truncated"`
	// StateLost says the variables did not survive (the kernel restarted or died).
	StateLost  bool         `json:"state_lost"`
	Reason     string       `json:"reason,omitempty"`
	DurationMS int64        `json:"duration_ms"`
	Files      []FileChange `json:"files"`
	// UserExpressions answers ExecuteRequest.UserExpressions: per name,
	// {"status": "ok", "data": MIME bundle} or the error
	// ({"status": "error", "ename", "evalue", "traceback"}).
	UserExpressions json.RawMessage `json:"user_expressions,omitempty"`
}

// UserExpression is the kernel's answer to one user expression (see
// Execution.DecodeUserExpressions).
type UserExpression struct {
	Status    string          `json:"status"`             // ok or error
	Data      Bundle          `json:"data,omitempty"`     // ok: the value's MIME bundle
	Metadata  json.RawMessage `json:"metadata,omitempty"` // ok
	EName     string          `json:"ename,omitempty"`    // error: the exception's name
	EValue    string          `json:"evalue,omitempty"`   // error
	Traceback []string        `json:"traceback,omitempty"`
}

// Text is the value's text/plain (its repr), "" when it has none.
func (u UserExpression) Text() string { return u.Data.Text("text/plain") }

// DecodeUserExpressions returns the answers to the execution's user
// expressions by name; none (nil, nil) when none were asked, after code
// that failed (the Python kernel evaluates them only after code that
// succeeded), or when the answers were past the gateway's bound (the
// execution is then Truncated).
func (x *Execution) DecodeUserExpressions() (map[string]UserExpression, error) {
	if len(x.UserExpressions) == 0 || string(x.UserExpressions) == "null" {
		return nil, nil
	}
	var out map[string]UserExpression
	if err := json.Unmarshal(x.UserExpressions, &out); err != nil {
		return nil, fmt.Errorf("api: user_expressions: %w", err)
	}
	return out, nil
}

// ExecError is an exception raised by executed code. Traceback lines are
// as the kernel sent them (with ANSI colour codes).
type ExecError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

func (e *ExecError) Error() string { return e.Name + ": " + e.Value }

// FileChange is a workspace change an execution made.
type FileChange struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Change string `json:"change"` // created, modified or deleted
}

// EventType names a WebSocket frame from the server.
type EventType string

// Event types.
const (
	EventKernel        EventType = "kernel" // session state; the first frame of every connection
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
	EventGap           EventType = "gap"
	EventNetwork       EventType = "network"        // a connection the session's egress proxy refused
	EventContext       EventType = "context"        // a context was created or deleted (State)
	EventCommand       EventType = "command"        // a command started (State "started", Text: the command), wrote output (Name, Text) or exited (State "exited")
	EventPage          EventType = "page"           // help to show (Data): obj?, obj??
	EventSetNextInput  EventType = "set_next_input" // the next cell's text (Text, Replace): %load
	EventAskExit       EventType = "ask_exit"       // the code called exit()
	EventRejected      EventType = "rejected"
	EventCompleteReply EventType = "complete_reply"
	EventInspectReply  EventType = "inspect_reply"
	// Comms (widgets): a message of the kernel's side stream (Msg), the
	// answer to a client's comm frame (MsgID: the kernel msg_id it went
	// as), and the answer to a comm_info frame (Comms). None is in the
	// event log: they carry no Seq and are never replayed.
	EventComm          EventType = "comm"
	EventCommSent      EventType = "comm_sent"
	EventCommInfoReply EventType = "comm_info_reply"
)

// CommMessage is a kernel message of no pending request, as a comm frame
// carries it: comm_open, comm_msg and comm_close (widgets, whenever the
// kernel sends them), the output and status of a comm message's handler
// (stream, display_data, status, ...), debug_event, and the output of a
// thread a cell left running. ParentHeader.MsgID is the msg_id of the
// message that caused it: a comm frame's (its comm_sent MsgID), an
// execution's (its id), or "" for none.
type CommMessage struct {
	Header       CommHeader      `json:"header"`
	ParentHeader CommParent      `json:"parent_header"`
	Content      json.RawMessage `json:"content"`
	Metadata     json.RawMessage `json:"metadata"`
	// Buffers are the message's binary buffers (base64 strings on the
	// wire; [] when none).
	Buffers [][]byte `json:"buffers"`
}

// CommHeader is a CommMessage's header: the kernel's msg_id and msg_type.
type CommHeader struct {
	MsgID   string `json:"msg_id"`
	MsgType string `json:"msg_type"`
}

// CommParent names a CommMessage's parent message ("" for none).
type CommParent struct {
	MsgID string `json:"msg_id"`
}

// CommTarget describes one open comm in a comm_info_reply.
type CommTarget struct {
	TargetName string `json:"target_name"`
}

// Event is one frame from the server: an execution event (ID is the
// execution's id), a session event (kernel, gap) or a rejection. Only the
// fields of its Type are set.
type Event struct {
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	ID   string    `json:"id,omitempty"`
	// Context is the context whose kernel the event comes from ("" for
	// the session's first, and for events of the whole session).
	Context string `json:"context,omitempty"`

	Name           string          `json:"name,omitempty"` // stream: stdout or stderr; error: exception name
	Text           string          `json:"text,omitempty"` // stream
	Data           Bundle          `json:"data,omitempty"` // display, update_display, result
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	DisplayID      string          `json:"display_id,omitempty"`
	ExecutionCount int             `json:"execution_count,omitempty"` // result, done
	Value          string          `json:"value,omitempty"`           // error
	Traceback      []string        `json:"traceback,omitempty"`       // error
	Wait           bool            `json:"wait,omitempty"`            // clear_output
	Prompt         string          `json:"prompt,omitempty"`          // input_request
	Password       bool            `json:"password,omitempty"`        // input_request
	Status         string          `json:"status,omitempty"`          // done
	DurationMS     int64           `json:"duration_ms,omitempty"`     // done
	Truncated      bool            `json:"truncated,omitempty"`       // done
	StateLost      bool            `json:"state_lost,omitempty"`      // done
	State          string          `json:"state,omitempty"`           // kernel
	Reason         string          `json:"reason,omitempty"`          // done, kernel, gap
	Path           string          `json:"path,omitempty"`            // file
	Size           int64           `json:"size,omitempty"`            // file
	Change         string          `json:"change,omitempty"`          // file
	Position       int             `json:"position,omitempty"`        // queued
	Code           string          `json:"code,omitempty"`            // rejected
	Message        string          `json:"message,omitempty"`         // rejected
	Host           string          `json:"host,omitempty"`            // network
	Port           int             `json:"port,omitempty"`            // network
	Allowed        bool            `json:"allowed,omitempty"`         // network (false: a refusal)
	PID            int             `json:"pid,omitempty"`             // command
	ExitCode       *int            `json:"exit_code,omitempty"`       // command (exited)
	TimedOut       bool            `json:"timed_out,omitempty"`       // command (exited)
	Replace        bool            `json:"replace,omitempty"`         // set_next_input
	KeepKernel     bool            `json:"keep_kernel,omitempty"`     // ask_exit: exit(keep_kernel=True)
	// UserExpressions: done (see Execution.UserExpressions).
	UserExpressions json.RawMessage `json:"user_expressions,omitempty"`

	// complete_reply and inspect_reply frames that answer frames sent with
	// SendRaw (Conn.Complete and Conn.Inspect return theirs typed).
	Matches     []string         `json:"matches,omitempty"`
	CursorStart int              `json:"cursor_start,omitempty"`
	CursorEnd   int              `json:"cursor_end,omitempty"`
	Types       []CompletionType `json:"types,omitempty"`
	Found       bool             `json:"found,omitempty"`

	// Msg: comm. MsgID: comm_sent. Comms: comm_info_reply (comm id →
	// its target).
	Msg   *CommMessage          `json:"msg,omitempty"`
	MsgID string                `json:"msg_id,omitempty"`
	Comms map[string]CommTarget `json:"comms,omitempty"`
}

// Bundle is a Jupyter MIME bundle exactly as the gateway sent it (a raw
// JSON object; nil when absent): MIME type → value. Text types are
// strings, binary types (image/png) base64 strings, application/json any
// JSON value.
type Bundle []byte

// MarshalJSON writes the bundle as it was received (null when empty).
func (b Bundle) MarshalJSON() ([]byte, error) {
	if len(b) == 0 {
		return []byte("null"), nil
	}
	return b, nil
}

// UnmarshalJSON keeps the raw JSON; null leaves the bundle nil.
func (b *Bundle) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*b = nil
		return nil
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Decode splits the bundle into its MIME types.
func (b Bundle) Decode() (map[string]json.RawMessage, error) {
	if len(b) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: MIME bundle: %w", ErrMalformed, err)
	}
	return m, nil
}

// MIMETypes lists the bundle's MIME types, sorted (none for a malformed bundle).
func (b Bundle) MIMETypes() []string {
	m, _ := b.Decode()
	types := make([]string, 0, len(m))
	for k := range m {
		types = append(types, k)
	}
	sort.Strings(types)
	return types
}

// Has reports whether the bundle holds mime.
func (b Bundle) Has(mime string) bool {
	m, _ := b.Decode()
	_, ok := m[mime]
	return ok
}

// Text returns the value of a text MIME type ("" when absent or not text).
// Jupyter's multi-line form (an array of strings) is joined.
func (b Bundle) Text(mime string) string {
	m, _ := b.Decode()
	raw, ok := m[mime]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var lines []string
	if json.Unmarshal(raw, &lines) == nil {
		return strings.Join(lines, "")
	}
	return ""
}

// Binary decodes a base64 MIME value such as image/png.
func (b Bundle) Binary(mime string) ([]byte, error) {
	if !b.Has(mime) {
		return nil, fmt.Errorf("api: the bundle has no %s", mime)
	}
	s := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, b.Text(mime))
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not base64: %w", ErrMalformed, mime, err)
	}
	return data, nil
}

// FileInfo is the answer to a file upload or directory creation.
type FileInfo struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Type string `json:"type,omitempty"` // "dir" for MakeDir
}

// UploadedFile is what a signed upload URL's multipart form stored, in
// E2B's shape exactly (its envd answers a form with a list of these, and
// its users compare the whole answer): Path is the file's absolute path
// in the sandbox.
type UploadedFile struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"` // "file"
}

// FileURL is a signed file URL (POST /v1/sessions/{id}/files-url). URL
// is the gateway's path and query (/v1/signed-files/{token}): the client
// puts its own base URL before it. It works until ExpiresAt or the
// session's end, whichever is first.
type FileURL struct {
	URL       string    `json:"url"`
	Path      string    `json:"path"`
	Operation string    `json:"operation"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Preview is a preview of a server in the sandbox (POST
// /v1/sessions/{id}/previews), on the gateway's preview origin, one
// origin per session and port. URL is an expiring link to
// {port}-{session}.{preview domain}: its token becomes an HttpOnly cookie
// of that host; Token, sent in the Glassroom-Preview-Token header, lets a
// program in; both work until ExpiresAt or the session's end. Host
// ({port}-{session}-{tag}.{preview domain}, E2B's get_host) carries its
// own grant: whoever has it reaches the server until the session ends.
type Preview struct {
	Port      int       `json:"port"`
	Host      string    `json:"host"`
	URL       string    `json:"url"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Volume is a tenant's named volume (GET /v1/volumes/{name}): SizeMB is
// its quota, UsedBytes what it holds, Mounts how many live sessions
// mount it.
type Volume struct {
	Name      string    `json:"name"`
	SizeMB    int       `json:"size_mb"`
	UsedBytes int64     `json:"used_bytes"`
	CreatedAt time.Time `json:"created_at"`
	Mounts    int       `json:"mounts"`
}

// VolumeList is the answer of GET /v1/volumes, by name.
type VolumeList struct {
	Volumes []Volume `json:"volumes"`
}

// Port is a TCP port a process of the sandbox listens on
// (GET /v1/sessions/{id}/ports): Address is where (0.0.0.0, 127.0.0.1,
// ::, ::1). The kernels' own listeners are among them.
type Port struct {
	Port    int    `json:"port"`
	Address string `json:"address"`
}

// PortList is the answer of GET /v1/sessions/{id}/ports, lowest first.
type PortList struct {
	Ports []Port `json:"ports"`
}

// FileEntry is one entry of a directory listing.
type FileEntry struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
	Type  string    `json:"type"` // file, dir, symlink or other
	Mode  int       `json:"mode"` // permission bits, at most 0o7777
	// SymlinkTarget (a symlink's): where it points, an absolute sandbox
	// path when in the workspace; TargetType: what that is, when known.
	SymlinkTarget string `json:"symlink_target,omitempty"`
	TargetType    string `json:"target_type,omitempty"`
	// Metadata is a regular file's (uploaded with the
	// Glassroom-File-Metadata header, or set by its code as user.e2b.
	// attributes).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Listing is a directory listing; Truncated says it was cut at the
// gateway's limit.
type Listing struct {
	Entries   []FileEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

// Completion is the kernel's answer to a completion request: the matches
// replace code[CursorStart:CursorEnd] (positions in Unicode code points).
type Completion struct {
	Matches     []string         `json:"matches"`
	CursorStart int              `json:"cursor_start"`
	CursorEnd   int              `json:"cursor_end"`
	Types       []CompletionType `json:"types,omitempty"` // when the kernel tells the kinds of its matches
}

// CompletionType describes one match: its text, kind (function, module,
// ...), the span it replaces and, for callables, its signature.
type CompletionType struct {
	Text      string `json:"text"`
	Type      string `json:"type"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
	Signature string `json:"signature,omitempty"`
}

// Inspection is the kernel's answer to an inspection request (the help
// for the name at the cursor); Data's text/plain carries ANSI colours.
type Inspection struct {
	Found    bool            `json:"found"`
	Data     Bundle          `json:"data"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Health is the answer of GET /healthz.
type Health struct {
	Status  string `json:"status"`
	Runtime string `json:"runtime"`
	Pool    Pool   `json:"pool"`
}

// Pool is the gateway's warm pool of pre-started kernels: how many it
// keeps (Target), has ready and is starting.
type Pool struct {
	Target   int `json:"target"`
	Ready    int `json:"ready"`
	Starting int `json:"starting"`
}

// CommandInfo describes one shell command of a session (GET
// /v1/sessions/{id}/commands). PID is its process id in the sandbox
// where the sandbox's commands share a pid namespace (docker, k8s), else
// the session's own number for it (sessions.OwnPIDBase and up). ExitCode and DurationMS are set once it has ended:
// bash's status, 128+n when it died of signal n, -1 when it was killed
// before it had one (TimedOut: at its timeout).
type CommandInfo struct {
	PID        int       `json:"pid"`
	Cmd        string    `json:"cmd"`
	Cwd        string    `json:"cwd"`
	Running    bool      `json:"running"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS *int64    `json:"duration_ms,omitempty"`
	TimedOut   bool      `json:"timed_out,omitempty"`
	PTY        bool      `json:"pty,omitempty"` // it runs on a pseudo-terminal
}

// Command is a command with its output so far (GET
// /v1/sessions/{id}/commands/{pid}), or a foreground command's result
// (POST /v1/sessions/{id}/commands). Stdout and Stderr together keep at
// most the gateway's per-execution stream cap; Truncated says some was
// not kept.
type Command struct {
	CommandInfo
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

// CommandStarted is the answer to a background command's start (201).
type CommandStarted struct {
	PID int `json:"pid"`
}

// TerminalControl is a text frame of the terminal WebSocket: from the
// client, {"type":"resize","cols":N,"rows":N}; from the server, once the
// shell has ended, {"type":"exit","exit_code":N}.
type TerminalControl struct {
	Type     string `json:"type"`
	Cols     int    `json:"cols,omitempty"`
	Rows     int    `json:"rows,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// Snapshot is a captured session (POST /v1/sessions/{id}/snapshots, GET
// /v1/snapshots/{id}): its workspace and, for each context, its kernel's
// variables; Contexts says what was captured and what could not be.
// POST /v1/sessions {"snapshot": id} starts a session from it.
type Snapshot struct {
	ID        string            `json:"id"`
	Name      string            `json:"name,omitempty"`
	SessionID string            `json:"session_id"`
	CreatedAt time.Time         `json:"created_at"`
	SizeBytes int64             `json:"size_bytes"`
	Contexts  []SnapshotContext `json:"contexts"`
}

// SnapshotContext is one context of a snapshot: Captured are the names
// its kernel's state holds, Uncaptured those it does not, with why ("*":
// none of the kernel's variables, as for JavaScript).
type SnapshotContext struct {
	Context    string       `json:"context"`
	Language   string       `json:"language"`
	Cwd        string       `json:"cwd"`
	Default    bool         `json:"default"`
	State      string       `json:"state,omitempty"`
	Captured   []string     `json:"captured"`
	Uncaptured []Uncaptured `json:"uncaptured"`
}

// Uncaptured is a name a snapshot (or a restore) lacks, and why.
type Uncaptured struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// SnapshotList is the answer of GET /v1/snapshots, newest first.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// RestoreReport is what a session started from a snapshot got of it
// (Session.Restore): Error when its workspace could not be restored.
type RestoreReport struct {
	SnapshotID string            `json:"snapshot_id"`
	Error      string            `json:"error,omitempty"`
	Contexts   []RestoredContext `json:"contexts"`
}

// RestoredContext is one context's restore: Context is its id in the new
// session, From in the snapshot; Error says why none of its variables
// came back (its kernel runs, empty).
type RestoredContext struct {
	Context  string       `json:"context"`
	From     string       `json:"from"`
	Language string       `json:"language"`
	Restored []string     `json:"restored"`
	Failed   []Uncaptured `json:"failed"`
	Error    string       `json:"error,omitempty"`
}

// ForkResult is the answer of POST /v1/sessions/{id}/fork: one entry per
// fork, each a session (with its restore) or the error that one met.
type ForkResult struct {
	Forks []Fork `json:"forks"`
}

// Fork is one fork's outcome.
type Fork struct {
	Session *Session   `json:"session,omitempty"`
	Error   *ForkError `json:"error,omitempty"`
}

// ForkError is why one fork failed: the code and message an error
// response of the same cause carries.
type ForkError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
