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
// kernel's identity per incarnation (jupyterState, here), and a bounded
// pass-through for the kernel's own shell and control requests
// (kernel_info, complete, inspect, ...: direct.go). The owner check of
// input() is InputAs, on the running job (session.go).
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

// jupyterState is what the Jupyter face needs a session to keep about
// its executions and its kernel: the order of enqueued executions and the
// abort marks of stop_on_error, the execution count of the current kernel
// incarnation, and the incarnation's random id. The worker and enqueue
// use it for every execution; the kernel's connection (KernelConn) names
// an incarnation. Its mutex mu is innermost: it may be taken with s.mu
// held, never the other way round. Safe for concurrent use.
type jupyterState struct {
	mu        sync.Mutex
	enqueued  uint64            // executions enqueued so far
	abortUpTo map[string]uint64 // group → its executions enqueued up to this number are aborted

	countConn KernelConn // the kernel incarnation count belongs to
	count     int        // the last execution_count it replied with

	idConn   KernelConn // the incarnation kernelID names
	kernelID string
}

// validateJupyter checks the Jupyter options of r.
func (r *ExecRequest) validateJupyter() error {
	if len(r.Parent) > MaxParentBytes {
		return invalid("parent header of %d bytes exceeds %d", len(r.Parent), MaxParentBytes)
	}
	if r.Parent != nil && !json.Valid(r.Parent) {
		return invalid("parent header is not JSON")
	}
	if len(r.Group) > MaxGroupBytes {
		return invalid("group longer than %d bytes", MaxGroupBytes)
	}
	if len(r.Owner) > MaxOwnerBytes {
		return invalid("owner longer than %d bytes", MaxOwnerBytes)
	}
	return nil
}

// number gives j its place in the order of enqueued executions, which
// stop_on_error aborts count on. Called by enqueue with s.mu held, before
// the job enters the queue.
func (js *jupyterState) number(j *job) {
	js.mu.Lock()
	js.enqueued++
	j.seq = js.enqueued
	js.mu.Unlock()
}

// aborted reports whether j must not run: an execution of its group that
// was sent with StopOnError failed after j was enqueued. Worker only.
func (js *jupyterState) aborted(j *job) bool {
	if j.req.Group == "" {
		return false
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	return j.seq <= js.abortUpTo[j.req.Group]
}

// execInfo describes j as it starts on kernel c. Worker only.
func (js *jupyterState) execInfo(j *job, c KernelConn) *ExecInfo {
	js.mu.Lock()
	count := 0
	if js.countConn == c {
		count = js.count
	}
	js.mu.Unlock()
	if !j.req.Silent {
		count++
	}
	return &ExecInfo{Code: j.req.Code, Parent: j.req.Parent, Silent: j.req.Silent, Owner: j.req.Owner, ExecutionCount: count, Started: time.Now()}
}

// finished records how j ended on kernel c (the session's current one):
// the kernel's execution count, and the abort of its group's queued
// executions when j failed with StopOnError. Called by the worker's
// report, without s.mu.
func (js *jupyterState) finished(j *job, c KernelConn, status Status, reply *kernel.ExecuteReply) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if reply != nil && reply.ExecutionCount > 0 {
		js.countConn, js.count = c, reply.ExecutionCount
	}
	if j.req.StopOnError && j.req.Group != "" && j.ran && status != StatusOK {
		if js.abortUpTo == nil || len(js.abortUpTo) >= maxAbortGroups {
			js.abortUpTo = map[string]uint64{} // old marks only concern jobs long gone
		}
		js.abortUpTo[j.req.Group] = js.enqueued
	}
}

// kernelSession returns the random id of kernel incarnation c (the
// session's current one), made on first use.
func (js *jupyterState) kernelSession(c KernelConn) string {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.idConn != c || js.kernelID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("sessions: crypto/rand failed: %v", err))
		}
		js.idConn, js.kernelID = c, hex.EncodeToString(b[:])
	}
	return js.kernelID
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
