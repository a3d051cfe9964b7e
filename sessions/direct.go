package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel"
)

// Completion is the kernel's answer to a complete request. Cursor
// positions count Unicode code points, as in the Jupyter protocol (≥ 5.2).
type Completion struct {
	Matches     []string         `json:"matches"`
	CursorStart int              `json:"cursor_start"`
	CursorEnd   int              `json:"cursor_end"`
	Types       []CompletionType `json:"types,omitempty"`
}

// CompletionType describes one match when the kernel tells its kind.
type CompletionType struct {
	Text      string `json:"text"`
	Type      string `json:"type"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
	Signature string `json:"signature,omitempty"`
}

// Inspection is the kernel's answer to an inspect request: a MIME bundle
// (text/plain carries ANSI colours) when found.
type Inspection struct {
	Found    bool            `json:"found"`
	Data     json.RawMessage `json:"data"`
	Metadata json.RawMessage `json:"metadata"`
}

// Bounds on what a kernel may return for one introspection request.
const (
	maxMatches     = 1000
	maxMatchBytes  = 1024
	introspectWait = 30 * time.Second
	// maxKernelRequestBytes bounds the content of a KernelRequest, beyond
	// the code it may carry.
	maxKernelRequestBytes = 64 << 10
	// maxKernelInfoBytes bounds the kernel_info reply a session keeps.
	maxKernelInfoBytes = 256 << 10
)

// KernelReply is the kernel's reply to a KernelRequest.
type KernelReply struct {
	MsgType  string
	Content  json.RawMessage
	Metadata json.RawMessage
	Buffers  [][]byte
}

// kernelRequests are the requests KernelRequest relays, by channel: they
// read the kernel's state, or drive its debugger (debug_request, on
// control: answered while a cell runs, or is stopped at a breakpoint).
// Executions go through the queue, interrupts, restarts and shutdowns
// through the Session's own methods.
var kernelRequests = map[kernel.Channel]map[string]bool{
	kernel.Shell: {"kernel_info_request": true, "complete_request": true, "inspect_request": true,
		"is_complete_request": true, "history_request": true, "comm_info_request": true},
	kernel.Control: {"kernel_info_request": true, "debug_request": true},
}

// directRequests sends the requests that bypass the execution queue to the
// session's current kernel, between executions (a busy kernel answers
// when its cell ends): completion and inspection, and the Jupyter face's
// read-only pass-through (KernelRequest) with the kernel_info reply it
// caches per kernel incarnation. Each request records activity, thaws a
// frozen kernel and keeps it awake until the reply, and waits at most
// introspectWait. Safe for concurrent use.
//
// Lock order: infoMu, then the session's mu (through conn and busy), then
// mu; mu is innermost.
type directRequests struct {
	maxCode int               // Config.MaxCodeBytes
	pause   *pauser           // the session's
	touch   func()            // records activity (Session.Touch)
	conn    func() KernelConn // the current kernel (Kernel.kernelClient)
	busy    func() bool       // whether a cell runs now

	infoMu   sync.Mutex // one kernel_info request at a time
	mu       sync.Mutex // guards infoConn and info
	infoConn KernelConn // the incarnation info came from
	info     json.RawMessage
}

// use records activity and thaws the kernel, keeping it awake until the
// returned release is called (exactly once); op names the request in
// errors. It returns the current kernel.
func (r *directRequests) use(ctx context.Context, op string) (KernelConn, func(), error) {
	r.touch()
	release, err := r.pause.use(ctx) // a frozen kernel answers nothing
	if err != nil {
		return nil, nil, fmt.Errorf("sessions: %s: %w", op, err)
	}
	return r.conn(), release, nil
}

func (r *directRequests) checkCursor(code string, cursor int) error {
	if len(code) > r.maxCode {
		return invalid("code of %d bytes exceeds %d", len(code), r.maxCode)
	}
	if n := utf8.RuneCountInString(code); cursor < 0 || cursor > n {
		return invalid("cursor_pos %d outside 0..%d (code points)", cursor, n)
	}
	return nil
}

// complete is Session.Complete.
func (r *directRequests) complete(ctx context.Context, code string, cursor int) (*Completion, error) {
	if err := r.checkCursor(code, cursor); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, introspectWait)
	defer cancel()
	c, release, err := r.use(ctx, "complete")
	if err != nil {
		return nil, err
	}
	defer release()
	raw, err := c.Complete(ctx, code, cursor)
	if err != nil {
		return nil, fmt.Errorf("sessions: complete: %w", err)
	}
	var rep struct {
		Matches     []string `json:"matches"`
		CursorStart int      `json:"cursor_start"`
		CursorEnd   int      `json:"cursor_end"`
		Metadata    struct {
			Types []CompletionType `json:"_jupyter_types_experimental"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("sessions: complete: malformed reply: %w", err)
	}
	out := &Completion{Matches: []string{}, CursorStart: rep.CursorStart, CursorEnd: rep.CursorEnd}
	n := utf8.RuneCountInString(code)
	if out.CursorStart < 0 || out.CursorStart > n || out.CursorEnd < out.CursorStart || out.CursorEnd > n {
		out.CursorStart, out.CursorEnd = cursor, cursor
	}
	for _, m := range rep.Matches {
		if len(out.Matches) == maxMatches {
			break
		}
		if len(m) <= maxMatchBytes {
			out.Matches = append(out.Matches, m)
		}
	}
	for _, t := range rep.Metadata.Types {
		if len(out.Types) == maxMatches {
			break
		}
		if len(t.Text) <= maxMatchBytes && len(t.Type) <= 64 && len(t.Signature) <= maxMatchBytes {
			out.Types = append(out.Types, t)
		}
	}
	return out, nil
}

// inspect is Session.Inspect.
func (r *directRequests) inspect(ctx context.Context, code string, cursor, detail int) (*Inspection, error) {
	if err := r.checkCursor(code, cursor); err != nil {
		return nil, err
	}
	if detail != 0 && detail != 1 {
		return nil, invalid("detail_level must be 0 or 1")
	}
	ctx, cancel := context.WithTimeout(ctx, introspectWait)
	defer cancel()
	c, release, err := r.use(ctx, "inspect")
	if err != nil {
		return nil, err
	}
	defer release()
	raw, err := c.Inspect(ctx, code, cursor, detail)
	if err != nil {
		return nil, fmt.Errorf("sessions: inspect: %w", err)
	}
	var rep struct {
		Found    bool            `json:"found"`
		Data     json.RawMessage `json:"data"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("sessions: inspect: malformed reply: %w", err)
	}
	var bundle map[string]json.RawMessage
	if json.Unmarshal(rep.Data, &bundle) != nil || bundle == nil {
		rep.Data = json.RawMessage("{}")
	}
	return &Inspection{Found: rep.Found, Data: rep.Data, Metadata: nonNullJSON(rep.Metadata)}, nil
}

// request is Session.KernelRequest.
func (r *directRequests) request(ctx context.Context, ch kernel.Channel, msgType string, content json.RawMessage) (*KernelReply, error) {
	if !kernelRequests[ch][msgType] {
		return nil, invalid("%s is not relayed on %s", msgType, ch)
	}
	if len(content) > r.maxCode+maxKernelRequestBytes {
		return nil, invalid("request content of %d bytes exceeds %d", len(content), r.maxCode+maxKernelRequestBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(content, &obj); err != nil || obj == nil {
		return nil, invalid("request content is not a JSON object")
	}
	ctx, cancel := context.WithTimeout(ctx, introspectWait)
	defer cancel()
	c, release, err := r.use(ctx, msgType)
	if err != nil {
		return nil, err
	}
	defer release()
	m, err := c.Request(ctx, ch, msgType, content)
	if err != nil {
		return nil, fmt.Errorf("sessions: %s: %w", msgType, err)
	}
	want := msgType[:len(msgType)-len("request")] + "reply"
	if m.Header.MsgType != want {
		return nil, fmt.Errorf("sessions: %s: kernel replied %q: %w", msgType, m.Header.MsgType, kernel.ErrMalformed)
	}
	return &KernelReply{MsgType: want, Content: m.Content, Metadata: m.Metadata, Buffers: m.Buffers}, nil
}

// kernelInfo is Session.KernelInfo.
func (r *directRequests) kernelInfo(ctx context.Context) (json.RawMessage, error) {
	r.infoMu.Lock()
	defer r.infoMu.Unlock()
	c := r.conn()
	r.mu.Lock()
	info, fresh := r.info, r.infoConn == c
	r.mu.Unlock()
	// While a cell runs the new kernel would answer only after it: the
	// previous kernel's reply (the same kernel software) does until then.
	if info != nil && (fresh || r.busy()) {
		return info, nil
	}
	rep, err := r.request(ctx, kernel.Shell, "kernel_info_request", json.RawMessage("{}"))
	if err != nil {
		return nil, err
	}
	if len(rep.Content) > maxKernelInfoBytes { // ipykernel's is a few KiB; the kernel is hostile
		return nil, fmt.Errorf("sessions: kernel_info_reply of %d bytes over %d: %w", len(rep.Content), maxKernelInfoBytes, kernel.ErrMalformed)
	}
	r.mu.Lock()
	r.infoConn, r.info = c, rep.Content
	r.mu.Unlock()
	return rep.Content, nil
}
