package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/gorilla/websocket"
)

// RejectedError is a "rejected" frame: the gateway could not act on a
// frame (queue full, rate limited, bad frame, ...). It matches the
// sentinels with errors.Is by its code.
type RejectedError struct {
	Code    string
	Message string
}

func (e *RejectedError) Error() string { return "glassroom: rejected: " + e.Code + ": " + e.Message }

// Is matches ErrTooManyRequests, ErrConflict, ErrBadRequest, ErrNotFound
// or ErrUnavailable by the rejection code.
func (e *RejectedError) Is(target error) bool {
	switch e.Code {
	case "queue_full", "rate_limited", "too_many_clients", "too_many_sessions":
		return target == ErrTooManyRequests
	case "kernel_dead", "no_input_pending":
		return target == ErrConflict
	case "bad_frame", "unknown_type", "bad_request":
		return target == ErrBadRequest
	case "not_found":
		return target == ErrNotFound
	case "shutting_down", "runtime_unavailable":
		return target == ErrUnavailable
	}
	return false
}

// ConnectOptions tune a WebSocket connection.
type ConnectOptions struct {
	// Since replays every event after this seq before live ones (after a
	// reconnect: the last Seq seen). Nil starts with live events.
	Since *int64
}

// Conn is one WebSocket connection to a session. It owns a reader
// goroutine that decodes frames into Events; read them from Events (or
// Next) promptly: a consumer that stops reading stalls the connection, and
// the gateway drops a client it cannot write to. Replies to Complete and
// Inspect calls are routed to their callers, not to Events (replies to
// frames sent with SendRaw arrive on Events). Send methods are
// safe for concurrent use. Close ends the connection and waits for the
// reader.
type Conn struct {
	ws      *websocket.Conn
	events  chan Event
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when the reader has exited
	err     error         // why the reader exited; read after done

	wmu       sync.Mutex // serializes writes
	complMu   sync.Mutex // one complete at a time: the gateway drops a superseded one unanswered
	inspMu    sync.Mutex // likewise for inspect
	pmu       sync.Mutex
	pending   map[string]chan json.RawMessage // complete/inspect replies by request id
	closeOnce sync.Once
}

// Connect opens a WebSocket to the session. The first event is always a
// kernel event with the session's state; its Seq is where the stream
// starts. The caller must Close the Conn.
func (c *Client) Connect(ctx context.Context, sessionID string, opts ConnectOptions) (*Conn, error) {
	var query url.Values
	if opts.Since != nil {
		query = url.Values{"since": {strconv.FormatInt(*opts.Since, 10)}}
	}
	ws, err := c.dialSession(ctx, sessionID, "ws", query, "connect")
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(c.cfg.MaxFrameBytes)
	k := &Conn{
		ws: ws, events: make(chan Event, 256), closing: make(chan struct{}), done: make(chan struct{}),
		pending: make(map[string]chan json.RawMessage),
	}
	go k.read()
	return k, nil
}

// read owns the reading side until the connection ends.
func (k *Conn) read() {
	defer close(k.done)
	defer close(k.events)
	for {
		_, data, err := k.ws.ReadMessage()
		if err != nil {
			select {
			case <-k.closing:
				k.err = ErrClosed
			default:
				k.err = fmt.Errorf("%w: %w", ErrClosed, err)
			}
			return
		}
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			k.err = fmt.Errorf("%w: bad frame: %w", ErrProtocol, err)
			return
		}
		if (ev.Type == EventCompleteReply || ev.Type == EventInspectReply || ev.Type == EventRejected) && k.deliver(ev.ID, data) {
			continue // the answer to a Complete or Inspect call
		}
		select {
		case k.events <- ev:
		case <-k.closing:
			k.err = ErrClosed
			return
		}
	}
}

// deliver hands a reply to the call waiting for it, if any.
func (k *Conn) deliver(id string, data []byte) bool {
	k.pmu.Lock()
	ch, ok := k.pending[id]
	delete(k.pending, id)
	k.pmu.Unlock()
	if ok {
		ch <- data // buffered, one reply per request
	}
	return ok
}

// Events delivers the server's frames in order. It is closed when the
// connection ends; Err then says why.
func (k *Conn) Events() <-chan Event { return k.events }

// Err returns why the connection ended (ErrClosed after Close), or nil
// while it is open.
func (k *Conn) Err() error {
	select {
	case <-k.done:
		return k.err
	default:
		return nil
	}
}

// Next returns the next event, or an error when ctx ends or the
// connection has ended (ErrClosed after Close, even with events unread).
func (k *Conn) Next(ctx context.Context) (Event, error) {
	select {
	case <-k.closing:
		return Event{}, ErrClosed
	default:
	}
	select {
	case ev, ok := <-k.events:
		if !ok {
			<-k.done
			return Event{}, k.err
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Close ends the connection and waits for the reader goroutine. It is
// idempotent. Executions the connection started keep running on the
// gateway.
func (k *Conn) Close() error {
	k.closeOnce.Do(func() {
		close(k.closing)
		k.wmu.Lock()
		_ = k.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		k.wmu.Unlock()
		_ = k.ws.Close()
	})
	<-k.done
	return nil
}

func (k *Conn) send(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("client: encode frame: %w", err)
	}
	return k.write(ctx, data)
}

// write sends one text frame.
func (k *Conn) write(ctx context.Context, data []byte) error {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	select {
	case <-k.done:
		return k.err
	default:
	}
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = k.ws.SetWriteDeadline(deadline)
	if err := k.ws.WriteMessage(websocket.TextMessage, data); err != nil {
		return fmt.Errorf("%w: write: %w", ErrClosed, err)
	}
	return nil
}

// SendRaw sends one text frame as is: for frames this package does not
// wrap, or to test the gateway's handling of bad frames.
func (k *Conn) SendRaw(ctx context.Context, frame []byte) error {
	return k.write(ctx, frame)
}

// ExecuteRequest is an execute frame.
type ExecuteRequest struct {
	ID      string        // client-chosen; events of the execution carry it. Required.
	Code    string        // the code
	Timeout time.Duration // 0: the gateway's default
	// Context and Language pick where it runs, as in ExecuteOptions.
	Context  string
	Language string
	// Envs and Cwd apply to this execution only, as in ExecuteOptions.
	Envs map[string]string
	Cwd  string
	// UserExpressions are answered on the done event, as in ExecuteOptions.
	UserExpressions map[string]string
}

// Execute submits code; its events arrive on Events with ID set to req.ID
// and end with a done event. A refused submission arrives as a rejected
// event with the same ID.
func (k *Conn) Execute(ctx context.Context, req ExecuteRequest) error {
	if req.ID == "" {
		return errors.New("client: Execute: the request needs an ID")
	}
	f := api.ExecuteFrame{Type: api.FrameExecute, ID: req.ID, Code: req.Code, Context: req.Context, Language: req.Language,
		Envs: req.Envs, Cwd: req.Cwd, UserExpressions: req.UserExpressions}
	if req.Timeout > 0 {
		f.TimeoutS = api.Ptr(req.Timeout.Seconds())
	}
	return k.send(ctx, f)
}

// Interrupt interrupts the running execution of every context of the
// session that runs one.
func (k *Conn) Interrupt(ctx context.Context) error {
	return k.send(ctx, api.InterruptFrame{Type: api.FrameInterrupt})
}

// InterruptContext interrupts the running execution of one context.
func (k *Conn) InterruptContext(ctx context.Context, contextID string) error {
	return k.send(ctx, api.InterruptFrame{Type: api.FrameInterrupt, Context: contextID})
}

// SendInput answers an input_request of execution id.
func (k *Conn) SendInput(ctx context.Context, id, value string) error {
	return k.send(ctx, api.InputReplyFrame{Type: api.FrameInputReply, ID: id, Value: value})
}

// Resume asks for every event after seq to be replayed (a gap event says
// when some have already left the gateway's backlog).
func (k *Conn) Resume(ctx context.Context, seq int64) error {
	return k.send(ctx, api.ResumeFrame{Type: api.FrameResume, Since: seq})
}

// request sends the frame frameWithID makes with a new request id, which
// the gateway answers to this client only, and waits for the answer.
func (k *Conn) request(ctx context.Context, frameWithID func(id string) api.ClientFrame, out any) error {
	id := "q-" + randomID()
	frame := frameWithID(id)
	ch := make(chan json.RawMessage, 1)
	k.pmu.Lock()
	k.pending[id] = ch
	k.pmu.Unlock()
	defer func() {
		k.pmu.Lock()
		delete(k.pending, id)
		k.pmu.Unlock()
	}()
	if err := k.send(ctx, frame); err != nil {
		return err
	}
	select {
	case data := <-ch:
		var rej Event
		if json.Unmarshal(data, &rej) == nil && rej.Type == EventRejected {
			return &RejectedError{Code: rej.Code, Message: rej.Message}
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return nil
	case <-k.done:
		return k.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Complete asks for completions of code at cursor over this connection;
// an In picks the context (at most one). Calls are serialized (the
// gateway would drop an older request of a kind unanswered); while a cell
// runs, the kernel answers when it ends.
func (k *Conn) Complete(ctx context.Context, code string, cursor int, where ...In) (*Completion, error) {
	k.complMu.Lock()
	defer k.complMu.Unlock()
	var out Completion
	w := in(where)
	frame := func(id string) api.ClientFrame {
		return api.CompleteFrame{Type: api.FrameComplete, ID: id, Code: code, CursorPos: cursor, Context: w.Context, Language: w.Language}
	}
	if err := k.request(ctx, frame, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Inspect asks for help on the name at cursor over this connection
// (serialized like Complete; an In picks the context).
func (k *Conn) Inspect(ctx context.Context, code string, cursor, detail int, where ...In) (*Inspection, error) {
	k.inspMu.Lock()
	defer k.inspMu.Unlock()
	var out Inspection
	w := in(where)
	frame := func(id string) api.ClientFrame {
		return api.InspectFrame{Type: api.FrameInspect, ID: id, Code: code, CursorPos: cursor, DetailLevel: detail,
			Context: w.Context, Language: w.Language}
	}
	if err := k.request(ctx, frame, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RunOptions tune Run.
type RunOptions struct {
	// Timeout bounds the execution on the gateway (0: its default).
	Timeout time.Duration
	// Context and Language pick where it runs, as in ExecuteOptions.
	Context  string
	Language string
	// Envs, Cwd and UserExpressions apply to this execution only, as in
	// ExecuteOptions.
	Envs            map[string]string
	Cwd             string
	UserExpressions map[string]string
	// OnEvent sees every event of the execution as it arrives (queued,
	// started, stream, display, result, error, file, done, ...). It runs on
	// Run's goroutine; a slow callback slows the stream.
	OnEvent func(Event)
	// Input answers input() prompts. Nil answers every prompt with "".
	Input func(ctx context.Context, prompt string, password bool) (string, error)
}

// Run executes code over this connection and assembles the Execution from
// its events, like Execute but streamed and with input() support. The
// caller must not read Events while Run is active. If ctx ends while the
// code runs, Run interrupts it (best effort) and returns ctx's error.
func (k *Conn) Run(ctx context.Context, code string, opts RunOptions) (*Execution, error) {
	id := "run-" + randomID()
	if err := k.Execute(ctx, ExecuteRequest{ID: id, Code: code, Timeout: opts.Timeout, Context: opts.Context, Language: opts.Language,
		Envs: opts.Envs, Cwd: opts.Cwd, UserExpressions: opts.UserExpressions}); err != nil {
		return nil, err
	}
	x := &Execution{ID: id, Outputs: []Event{}, Files: []FileChange{}}
	var stdout, stderr strings.Builder
	started := false
	where := FirstContext // the context that runs it, from its events
	for {
		ev, err := k.Next(ctx)
		if err != nil {
			if started && ctx.Err() != nil {
				ictx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = k.InterruptContext(ictx, where)
				cancel()
			}
			return nil, err
		}
		if ev.ID != id {
			continue
		}
		if ev.Context != "" {
			where = ev.Context
		}
		if opts.OnEvent != nil {
			opts.OnEvent(ev)
		}
		switch ev.Type {
		case EventRejected:
			return nil, &RejectedError{Code: ev.Code, Message: ev.Message}
		case EventStarted:
			started = true
		case EventStream:
			if ev.Name == "stderr" {
				stderr.WriteString(ev.Text)
			} else {
				stdout.WriteString(ev.Text)
			}
			x.Outputs = append(x.Outputs, ev)
		case EventResult:
			x.Result = ev.Data
			x.Outputs = append(x.Outputs, ev)
		case EventError:
			x.Error = &ExecError{Name: ev.Name, Value: ev.Value, Traceback: ev.Traceback}
			x.Outputs = append(x.Outputs, ev)
		case EventDisplay, EventUpdateDisplay, EventClearOutput, EventPage, EventSetNextInput, EventAskExit:
			x.Outputs = append(x.Outputs, ev)
		case EventFile: // as in a REST answer: in Outputs and in Files
			x.Outputs = append(x.Outputs, ev)
			x.Files = append(x.Files, FileChange{Path: ev.Path, Size: ev.Size, Change: ev.Change})
		case EventInputRequest:
			value := ""
			if opts.Input != nil {
				if value, err = opts.Input(ctx, ev.Prompt, ev.Password); err != nil {
					return nil, fmt.Errorf("client: input: %w", err)
				}
			}
			if err := k.SendInput(ctx, id, value); err != nil {
				return nil, err
			}
		case EventDone:
			x.Status, x.ExecutionCount, x.DurationMS = ev.Status, ev.ExecutionCount, ev.DurationMS
			x.Truncated, x.StateLost, x.Reason = ev.Truncated, ev.StateLost, ev.Reason
			x.UserExpressions = ev.UserExpressions
			x.Stdout, x.Stderr = stdout.String(), stderr.String()
			return x, nil
		}
	}
}

// Run connects to the session, runs code with Conn.Run and closes the
// connection.
func (c *Client) Run(ctx context.Context, sessionID, code string, opts RunOptions) (*Execution, error) {
	k, err := c.Connect(ctx, sessionID, ConnectOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = k.Close() }()
	return k.Run(ctx, code, opts)
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// dialSession opens the session's WebSocket route (with query, if any),
// authenticated by the client's key; an HTTP refusal is decoded as the
// API's error. op names the operation in other errors. The caller owns
// (and closes) the connection.
func (c *Client) dialSession(ctx context.Context, sessionID, route string, query url.Values, op string) (*websocket.Conn, error) {
	u, err := url.Parse(c.cfg.BaseURL + sessionPath(sessionID, route))
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", op, err)
	}
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	if query != nil {
		u.RawQuery = query.Encode()
	}
	h := http.Header{"Authorization": {"Bearer " + c.cfg.APIKey}}
	ws, resp, err := c.cfg.Dialer.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				return nil, decodeError(resp)
			}
		}
		return nil, fmt.Errorf("client: %s: %w", op, err)
	}
	return ws, nil
}
