package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// How a running job ended, as seen by the worker.
type ending int

const (
	endedReply    ending = iota // Execute returned: a reply, or the kernel died (err)
	endedStubborn               // timed out and ignored the interrupt
	endedRestart                // a restart was requested meanwhile
	endedClosed                 // the session closed meanwhile
)

type outcome struct {
	ending   ending
	reply    *kernel.ExecuteReply
	err      error
	timedOut bool
	restart  chan error // endedRestart: where to answer the restart request
	// After a timeout: how the interrupts went (the reply's reason).
	interrupts int           // interrupts sent
	waited     time.Duration // from the first interrupt to the reply or the restart
	stuck      string        // endedStubborn: why the kernel was taken as stuck
}

// run executes j on the current kernel, once the gateway's fair scheduler
// gives it a slot. Worker only.
func (w *worker) run(j *job) {
	release, err := w.slots.acquire(w.s.ctx, w.s.s.tenant)
	if err != nil {
		w.fail(j, StatusDied, w.reason())
		return
	}
	defer release()
	c, ok := w.begin(j)
	if !ok {
		return
	}
	defer w.end()
	start := time.Now()
	if j.req.hasSettings() && !w.applySettings(c, j, start) {
		return
	}
	o := w.execute(c, j, release)
	w.conclude(c, j, start, o)
}

// begin makes j the running job, or fails it when the session is closing
// or the kernel is dead.
func (w *worker) begin(j *job) (KernelConn, bool) {
	if w.s.ctx.Err() != nil {
		w.fail(j, StatusDied, w.reason())
		return nil, false
	}
	c := w.s.kernelClient()
	if c.Err() != nil {
		w.fail(j, StatusDied, "kernel is dead")
		return nil, false
	}
	if w.s.jup.aborted(j) {
		w.fail(j, StatusAborted, "an earlier execution failed (stop_on_error)")
		return nil, false
	}
	info := w.s.jup.execInfo(j, c)
	w.s.side.comms.rememberParent(c, j.req.ID, j.req.Parent) // a Jupyter client's header, for the side messages of the code
	w.s.mu.Lock()
	w.s.current = j
	j.info = info
	w.s.publish(Event{Type: EventStarted, ID: j.req.ID, Exec: info})
	w.s.mu.Unlock()
	w.s.s.Touch()
	w.setState(StateBusy, "")
	if w.watch != nil {
		w.watch.Reset()
	}
	j.ran = true
	return c, true
}

// end clears the running job. Idempotent: run defers it, and the paths
// that hand a result over call it first.
func (w *worker) end() {
	w.s.mu.Lock()
	w.s.current = nil
	w.s.inputPending = ""
	w.s.mu.Unlock()
	w.s.s.Touch()
}

// execute runs j's code on c and waits for one of: the reply, the
// timeout's interrupt being ignored, a restart request, the session's
// close. A timeout first interrupts; the job then ends normally if the
// kernel obeys, which its reply proves even while a backlog of output is
// still being read.
func (w *worker) execute(c KernelConn, j *job, replied func()) outcome {
	ctx, cancel := context.WithCancel(w.s.ctx)
	type result struct {
		reply *kernel.ExecuteReply
		err   error
	}
	done := make(chan result, 1)
	repliedC := make(chan struct{})
	// The request's msg_id is the execution id: the kernel names it as the
	// parent of what the code sends on the side stream (a widget's
	// comm_open; the msg_id an ipywidgets Output captures), which is
	// what both faces call the execution.
	// Its comm messages come as events (CommEvents), fanned out in order
	// with its output: an Output widget's msg_id is set, then the output
	// it captures comes, then it is reset. The comm messages sent before
	// the execute_request are handled once it is (the kernel handles
	// shell in order).
	commMark := w.s.side.comms.mark()
	opts := kernel.ExecuteOptions{MsgID: j.req.ID, CommEvents: true, AllowStdin: j.req.AllowStdin, Silent: j.req.Silent, NoHistory: j.req.NoHistory,
		UserExpression: j.req.UserExpressions, OnBusy: j.kernelBegan, OnReply: func() {
			w.s.side.comms.handledThrough(c, commMark)
			if j.req.hasSettings() {
				j.codeEnded.Store(true)
			}
			replied() // the kernel is done computing: its scheduler slot goes to the next session
			close(repliedC)
		}}
	go func() { // owned by execute, which always waits for done
		reply, err := c.Execute(ctx, j.req.Code, opts, func(ev kernel.Event) {
			w.s.side.barrier(ctx, c, ev.SideBefore) // the side messages the kernel sent before ev go first
			if ev.Kind == kernel.EventComm {
				w.s.side.deliver(c, ev.Msg)
				return
			}
			w.onEvent(j, ev)
		})
		done <- result{reply, err}
	}()
	abandon := func(o outcome) outcome {
		cancel()
		<-done
		return o
	}
	timer := time.NewTimer(j.req.Timeout)
	defer timer.Stop()
	// After the timeout: the interrupt request in flight (answered closes
	// when the kernel has taken it, or it failed), the grace that starts
	// once it is answered, and the cap on the whole wait.
	var (
		answered    chan struct{}
		grace, capC <-chan time.Time
		probe       *progressProbe
		first       time.Time
		interrupts  int
		timedOut    bool
		iwg         sync.WaitGroup // the interrupt requests' goroutines
	)
	defer iwg.Wait() // after cancel (deferred later, run first) ends them
	defer cancel()
	interrupt := func() {
		interrupts++
		a := make(chan struct{})
		answered, grace = a, nil
		iwg.Add(1)
		go func() { // owned by execute, which waits for it (iwg)
			defer iwg.Done()
			defer close(a)
			w.interruptForTimeout(ctx, c)
		}()
	}
	stubborn := func(why string) outcome {
		return abandon(outcome{ending: endedStubborn, interrupts: interrupts, waited: time.Since(first), stuck: why})
	}
	obeyed := func() bool {
		select {
		case <-repliedC:
			// The kernel obeyed; its output is still draining (the
			// kernel's client bounds that).
			return true
		default:
			return false
		}
	}
	for {
		select {
		case r := <-done:
			o := outcome{ending: endedReply, reply: r.reply, err: r.err, timedOut: timedOut, interrupts: interrupts}
			if timedOut {
				o.waited = time.Since(first)
			}
			return o
		case <-timer.C:
			timedOut, first = true, time.Now()
			capC = time.After(w.s.cfg.InterruptMaxWait)
			interrupt()
		case <-answered:
			// The kernel took the interrupt (a kernel slow to even take
			// it, on a busy machine, is waited for up to the cap). Only
			// what its code does from now on counts as progress.
			answered = nil
			if probe == nil {
				probe = newProgressProbe(ctx, c, w.s.sandbox)
			} else {
				probe.read(ctx)
			}
			grace = time.After(w.s.cfg.InterruptGrace)
		case <-grace:
			grace = nil
			if obeyed() {
				continue
			}
			working, why := probe.advanced(ctx)
			if !working {
				return stubborn(fmt.Sprintf("no progress within %v of the interrupt", w.s.cfg.InterruptGrace))
			}
			// Slow, not stuck: the machine is busy, or the code caught
			// the interrupt and goes on. Ask again.
			w.s.log.Debug().Int("interrupts", interrupts).Dur("waited", time.Since(first)).Str("progress", why).
				Msg("timed-out execution still running but making progress; interrupting again")
			interrupt()
		case <-capC:
			capC = nil
			if obeyed() {
				continue
			}
			return stubborn(fmt.Sprintf("still running %v after the first of %d interrupts", w.s.cfg.InterruptMaxWait, interrupts))
		case rdone := <-w.s.restart:
			return abandon(outcome{ending: endedRestart, restart: rdone})
		case <-w.s.ctx.Done():
			return abandon(outcome{ending: endedClosed})
		}
	}
}

// interruptForTimeout sends the kernel an interrupt and waits for its
// answer, the kernel's death or ctx's end.
func (w *worker) interruptForTimeout(ctx context.Context, c KernelConn) {
	if err := c.Interrupt(ctx); err != nil {
		w.s.log.Debug().Err(err).Msg("interrupt after timeout failed")
	}
}

// conclude reports how j ended and brings the kernel back where needed.
func (w *worker) conclude(c KernelConn, j *job, start time.Time, o outcome) {
	switch o.ending {
	case endedStubborn:
		j.lost()
		w.finish(j, start, StatusTimeout, nil, "timeout; kernel restarted: "+o.stuck)
		_ = w.restartKernel("execution timed out and ignored the interrupt (" + o.stuck + ")")
	case endedRestart:
		j.lost()
		w.finish(j, start, StatusInterrupted, nil, "kernel restarted")
		o.restart <- w.restartKernel("restart requested")
	case endedClosed:
		j.lost()
		w.finish(j, start, StatusDied, nil, w.reason())
	case endedReply:
		if o.err != nil {
			j.lost()
			w.finish(j, start, StatusDied, nil, w.exitReason(o.err))
			if c.Err() != nil && w.s.ctx.Err() == nil {
				w.recoverKernel(c)
			}
			return
		}
		reason := ""
		if o.timedOut && o.interrupts > 1 {
			reason = fmt.Sprintf("timeout; the kernel obeyed the interrupt after %v (%d interrupts: the machine is busy); its variables are kept",
				o.waited.Round(100*time.Millisecond), o.interrupts)
		}
		if j.req.hasSettings() {
			r, ok := w.restoreSettings(c, j)
			if !ok {
				return // the session closed meanwhile; j is reported
			}
			if r != "" {
				reason = strings.TrimPrefix(reason+"; "+r, "; ")
			}
		}
		// The session reads idle, with nothing running, before the caller
		// has its result: a client that looks right after its execute
		// returned sees idle.
		w.report(j, start, statusOf(o, j), o.reply, reason)
		w.end()
		w.setState(StateIdle, "")
		j.deliver()
	}
}

// statusOf maps a kernel reply to the execution's status.
func statusOf(o outcome, j *job) Status {
	switch {
	case o.timedOut:
		return StatusTimeout
	case o.reply.Status != "ok" && j.interrupted.Load():
		// ipykernel replies error KeyboardInterrupt, IRkernel "abort",
		// Deno an error of its own, bash an exit status: whatever the
		// language, a cell a client interrupted that did not finish is
		// interrupted.
		return StatusInterrupted
	case o.reply.Status != "ok":
		return StatusError
	}
	return StatusOK
}

// fail ends a job that never ran.
func (w *worker) fail(j *job, status Status, reason string) {
	w.finish(j, time.Now(), status, nil, reason)
}

// finish reports the job and hands its result to the caller, once the
// session no longer names it as running.
func (w *worker) finish(j *job, start time.Time, status Status, reply *kernel.ExecuteReply, reason string) {
	w.report(j, start, status, reply, reason)
	w.end()
	j.deliver()
}

// report completes the job's execution and publishes its file changes and
// its done event.
func (w *worker) report(j *job, start time.Time, status Status, reply *kernel.ExecuteReply, reason string) {
	e := j.exec
	e.Status = status
	e.Reason = reason
	e.DurationMS = time.Since(start).Milliseconds()
	var payload []json.RawMessage
	if reply != nil && status == StatusError && !j.out.errored && (reply.EName != "" || reply.EValue != "") &&
		!j.req.Silent && j.req.Parent == nil {
		// An error reply without an error message (IPython's UsageError
		// writes its text to stderr): the reply's ename, evalue and
		// traceback are the /v1 execution's error, for its clients. (A
		// Jupyter client's execution keeps the kernel's messages as
		// they were.)
		w.onEvent(j, kernel.Event{Kind: kernel.EventError, EName: reply.EName, EValue: reply.EValue, Traceback: reply.Traceback})
	}
	if reply != nil {
		e.ExecutionCount = reply.ExecutionCount
		e.Truncated = e.Truncated || reply.Truncated
		e.UserExpressions, payload = reply.UserExpressions, reply.Payload
	}
	e.Stdout, e.Stderr = j.out.stdout.String(), j.out.stderr.String()
	if w.watch != nil && j.ran {
		changes, truncated := w.watch.Changes()
		e.Truncated = e.Truncated || truncated
		for _, c := range changes {
			fc := FileChange{Path: c.Path, Size: c.Size, Change: c.Change}
			e.Files = append(e.Files, fc)
			j.out.record(w.s.publish(Event{Type: EventFile, ID: j.req.ID, Path: fc.Path, Size: ptr(fc.Size), Change: fc.Change}))
		}
	}
	w.s.jup.finished(j, w.s.kernelClient(), status, reply)
	c := w.s.kernelClient()
	w.s.side.barrier(w.s.ctx, c, c.SideAccepted()) // a widget's last update before the cell's end
	for _, p := range payload {
		if ev, ok := payloadEvent(j.req.ID, p); ok {
			j.out.record(w.s.publish(ev))
		}
	}
	w.s.publish(Event{Type: EventDone, ID: j.req.ID, Status: status, ExecutionCount: ptr(e.ExecutionCount),
		DurationMS: ptr(e.DurationMS), Truncated: ptr(e.Truncated), StateLost: ptr(e.StateLost), Reason: reason,
		UserExpressions: e.UserExpressions, Payload: payload})
	w.s.cfg.Observer.ExecutionDone(status, time.Since(start))
}

// onEvent takes one kernel event of job j: output counts it against the
// execution's caps and converts it, then it is published and recorded for
// an Execute caller. It runs on the job's execute goroutine.
func (w *worker) onEvent(j *job, ev kernel.Event) {
	out, ok := j.out.take(j.req.ID, ev)
	if !ok {
		return
	}
	if out.Type == EventInputRequest {
		w.s.mu.Lock()
		w.s.inputPending = j.req.ID
		w.s.mu.Unlock()
	}
	j.out.record(w.s.publish(out))
}
