package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// What the gateway's Jupyter face (the Jupyter Server kernels API) needs of
// a session beyond the /v1 view: the options of a Jupyter execute_request,
// the request header to name as the parent of every message an execution
// produces, the owner that alone may answer an execution's input() (one
// channels connection), Jupyter's stop_on_error queue semantics, the
// kernel's identity per incarnation, and a bounded pass-through for the
// kernel's own shell and control requests (kernel_info, complete,
// inspect, ...).
// Executions from Jupyter clients go through the same queue, timeouts,
// caps and event log as /v1 executions: the Jupyter face renders the
// session's events as Jupyter messages.

// StatusAborted is how an execution ends that never ran because an
// earlier execution of its Group, sent with StopOnError, failed: what a
// Jupyter kernel replies ("aborted") to the requests queued behind a
// failed one. Only executions with a Group end so.
const StatusAborted Status = "aborted"

// Bounds on what a Jupyter client chooses.
const (
	// MaxParentBytes bounds ExecRequest.Parent.
	MaxParentBytes = 16 << 10
	// MaxGroupBytes bounds ExecRequest.Group.
	MaxGroupBytes = 256
	// MaxOwnerBytes bounds ExecRequest.Owner.
	MaxOwnerBytes = 256
	// maxAbortGroups bounds the groups whose abort marks are kept.
	maxAbortGroups = 256
	// maxKernelRequestBytes bounds the content of a KernelRequest, beyond
	// the code it may carry.
	maxKernelRequestBytes = 64 << 10
	// maxKernelInfoBytes bounds the kernel_info reply a session keeps.
	maxKernelInfoBytes = 256 << 10
)

// ExecInfo describes an execution on its started event (Event.Exec) and
// through Running, for renderers that need more than the /v1 wire shape:
// the Jupyter face. It is never serialized on /v1. It is immutable.
type ExecInfo struct {
	Code string
	// Parent is the header of the Jupyter execute_request, as the client
	// sent it (compact JSON); nil for executions that came from /v1.
	Parent json.RawMessage
	Silent bool
	// Owner is the request's Owner ("" for executions that came from /v1).
	Owner string
	// ExecutionCount is the count the kernel gives the execution: one more
	// than the last count this kernel replied with (the same when Silent),
	// as a Jupyter kernel announces it in execute_input before it runs.
	ExecutionCount int
	Started        time.Time
}

func (x *ExecInfo) size() int {
	if x == nil {
		return 0
	}
	return 64 + len(x.Code) + len(x.Parent) + len(x.Owner)
}

// KernelReply is the kernel's reply to a KernelRequest.
type KernelReply struct {
	MsgType  string
	Content  json.RawMessage
	Metadata json.RawMessage
	Buffers  [][]byte
}

// jupyterState is the Session's state for the Jupyter face. Its mutex mu
// is innermost: it may be taken with s.mu held, never the other way round.
type jupyterState struct {
	mu        sync.Mutex
	enqueued  uint64            // executions enqueued so far
	abortUpTo map[string]uint64 // group → its executions enqueued up to this number are aborted

	countConn KernelConn // the kernel incarnation count belongs to
	count     int        // the last execution_count it replied with

	idConn   KernelConn // the incarnation kernelID names
	kernelID string

	infoConn KernelConn // the incarnation info came from
	info     json.RawMessage
	infoMu   sync.Mutex // one kernel_info request at a time
}

// validateJupyter checks the Jupyter options of req.
func validateJupyter(req *ExecRequest) error {
	if len(req.Parent) > MaxParentBytes {
		return invalid("parent header of %d bytes exceeds %d", len(req.Parent), MaxParentBytes)
	}
	if req.Parent != nil && !json.Valid(req.Parent) {
		return invalid("parent header is not JSON")
	}
	if len(req.Group) > MaxGroupBytes {
		return invalid("group longer than %d bytes", MaxGroupBytes)
	}
	if len(req.Owner) > MaxOwnerBytes {
		return invalid("owner longer than %d bytes", MaxOwnerBytes)
	}
	return nil
}

// numberJob gives j its place in the order of enqueued executions, which
// stop_on_error aborts count on. Called by enqueue with s.mu held, before
// the job enters the queue.
func (s *Session) numberJob(j *job) {
	s.jup.mu.Lock()
	s.jup.enqueued++
	j.seq = s.jup.enqueued
	s.jup.mu.Unlock()
}

// aborted reports whether j must not run: an execution of its group that
// was sent with StopOnError failed after j was enqueued. Worker only.
func (s *Session) aborted(j *job) bool {
	if j.req.Group == "" {
		return false
	}
	s.jup.mu.Lock()
	defer s.jup.mu.Unlock()
	return j.seq <= s.jup.abortUpTo[j.req.Group]
}

// execInfo describes j as it starts on kernel c. Worker only.
func (s *Session) execInfo(j *job, c KernelConn) *ExecInfo {
	s.jup.mu.Lock()
	count := 0
	if s.jup.countConn == c {
		count = s.jup.count
	}
	s.jup.mu.Unlock()
	if !j.req.Silent {
		count++
	}
	return &ExecInfo{Code: j.req.Code, Parent: j.req.Parent, Silent: j.req.Silent, Owner: j.req.Owner, ExecutionCount: count, Started: time.Now()}
}

// noteFinished records how j ended: the kernel's execution count, and the
// abort of its group's queued executions when j failed with StopOnError.
// Called by finish.
func (s *Session) noteFinished(j *job, status Status, reply *kernel.ExecuteReply) {
	c := s.kernelClient() // before s.jup.mu: that lock is taken inside s.mu, never around it
	s.jup.mu.Lock()
	defer s.jup.mu.Unlock()
	if reply != nil && reply.ExecutionCount > 0 {
		s.jup.countConn, s.jup.count = c, reply.ExecutionCount
	}
	if j.req.StopOnError && j.req.Group != "" && j.ran && status != StatusOK {
		if s.jup.abortUpTo == nil || len(s.jup.abortUpTo) >= maxAbortGroups {
			s.jup.abortUpTo = map[string]uint64{} // old marks only concern jobs long gone
		}
		s.jup.abortUpTo[j.req.Group] = s.jup.enqueued
	}
}

// Running returns the id and description of the running execution, if
// any.
func (s *Session) Running() (id string, info *ExecInfo, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil || s.current.info == nil {
		return "", nil, false
	}
	return s.current.req.ID, s.current.info, true
}

// LastActivity returns when the session was last used (what idle expiry
// counts from).
func (s *Session) LastActivity() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastActive
}

// Clients returns how many clients (WebSockets of either face) are
// attached.
func (s *Session) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients
}

// KernelSession returns a random id of the current kernel incarnation: it
// changes when the kernel is restarted. The Jupyter face puts it in the
// session field of the headers it makes, as a kernel does with its own.
func (s *Session) KernelSession() string {
	c := s.kernelClient()
	s.jup.mu.Lock()
	defer s.jup.mu.Unlock()
	if s.jup.idConn != c || s.jup.kernelID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("sessions: crypto/rand failed: %v", err))
		}
		s.jup.idConn, s.jup.kernelID = c, hex.EncodeToString(b[:])
	}
	return s.jup.kernelID
}

// KernelInfo returns the content of the kernel's kernel_info_reply, asked
// once per kernel incarnation and cached. A kernel running a cell answers
// when the cell ends, so then an earlier incarnation's reply is used if
// there is one; else the wait is bounded by ctx and 30 s.
func (s *Session) KernelInfo(ctx context.Context) (json.RawMessage, error) {
	s.jup.infoMu.Lock()
	defer s.jup.infoMu.Unlock()
	c := s.kernelClient()
	s.jup.mu.Lock()
	info, fresh := s.jup.info, s.jup.infoConn == c
	s.jup.mu.Unlock()
	// While a cell runs the new kernel would answer only after it: the
	// previous kernel's reply (the same kernel software) does until then.
	if info != nil && (fresh || s.Info().State == StateBusy) {
		return info, nil
	}
	r, err := s.KernelRequest(ctx, kernel.Shell, "kernel_info_request", json.RawMessage("{}"))
	if err != nil {
		return nil, err
	}
	if len(r.Content) > maxKernelInfoBytes { // ipykernel's is a few KiB; the kernel is hostile
		return nil, fmt.Errorf("sessions: kernel_info_reply of %d bytes over %d: %w", len(r.Content), maxKernelInfoBytes, kernel.ErrMalformed)
	}
	s.jup.mu.Lock()
	s.jup.infoConn, s.jup.info = c, r.Content
	s.jup.mu.Unlock()
	return r.Content, nil
}

// kernelRequests are the requests KernelRequest relays, by channel: they
// only read the kernel's state. Executions go through the queue,
// interrupts, restarts and shutdowns through the Session's own methods.
var kernelRequests = map[kernel.Channel]map[string]bool{
	kernel.Shell: {"kernel_info_request": true, "complete_request": true, "inspect_request": true,
		"is_complete_request": true, "history_request": true, "comm_info_request": true},
	kernel.Control: {"kernel_info_request": true},
}

// KernelRequest sends a Jupyter request to the kernel and returns its
// reply, bypassing the execution queue (a busy kernel answers when its
// cell ends). Only the requests that read the kernel's state are relayed
// (kernel_info, complete, inspect, is_complete, history, comm_info); the
// content must be a JSON object of bounded size; the reply is bounded by
// the channel's ceiling. It blocks until the reply, ctx's end, or 30 s.
// Safe for concurrent use.
func (s *Session) KernelRequest(ctx context.Context, ch kernel.Channel, msgType string, content json.RawMessage) (*KernelReply, error) {
	if !kernelRequests[ch][msgType] {
		return nil, invalid("%s is not relayed on %s", msgType, ch)
	}
	if len(content) > s.cfg.MaxCodeBytes+maxKernelRequestBytes {
		return nil, invalid("request content of %d bytes exceeds %d", len(content), s.cfg.MaxCodeBytes+maxKernelRequestBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(content, &obj); err != nil || obj == nil {
		return nil, invalid("request content is not a JSON object")
	}
	s.Touch()
	ctx, cancel := context.WithTimeout(ctx, introspectWait)
	defer cancel()
	release, err := s.pause.use(ctx) // a frozen kernel answers nothing
	if err != nil {
		return nil, fmt.Errorf("sessions: %s: %w", msgType, err)
	}
	defer release()
	m, err := s.kernelClient().Request(ctx, ch, msgType, content)
	if err != nil {
		return nil, fmt.Errorf("sessions: %s: %w", msgType, err)
	}
	want := msgType[:len(msgType)-len("request")] + "reply"
	if m.Header.MsgType != want {
		return nil, fmt.Errorf("sessions: %s: kernel replied %q: %w", msgType, m.Header.MsgType, kernel.ErrMalformed)
	}
	return &KernelReply{MsgType: want, Content: m.Content, Metadata: m.Metadata, Buffers: m.Buffers}, nil
}

// interruptWait bounds how long Interrupt waits for the kernel to begin the
// running execution; interruptSettle is how long after the kernel began it
// an interrupt is held back.
const (
	interruptWait   = 2 * time.Second
	interruptSettle = 100 * time.Millisecond
)

// kernelBegan records that the kernel began running j (its busy status).
// Called on j's execute goroutine.
func (j *job) kernelBegan() {
	j.beganOnce.Do(func() {
		j.beganAt.Store(time.Now().UnixNano())
		close(j.began)
	})
}

// awaitKernelStart holds an interrupt of job j (nil: none runs) until the
// kernel runs its code. A job is "started" when the worker takes it; the
// kernel begins it a moment later (its busy status), and then runs some
// of its own code before the cell's. An interrupt that arrives before the
// kernel began finds it idle and is lost; one that arrives while the
// kernel prepares the cell makes ipykernel drop the request without a
// reply. A Jupyter client interrupts as soon as it sees execute_input,
// which the started event renders, so those moments matter: the interrupt
// waits (at most interruptWait) for the busy status, then until
// interruptSettle has passed since it.
func awaitKernelStart(ctx context.Context, j *job) {
	if j == nil {
		return
	}
	t := time.NewTimer(interruptWait)
	defer t.Stop()
	select {
	case <-j.began:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	}
	wait := time.Until(time.Unix(0, j.beganAt.Load()).Add(interruptSettle))
	if wait <= 0 {
		return
	}
	t.Reset(wait)
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
