package sessions

import (
	"context"
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
}

// run executes j on the current kernel, once the gateway's fair scheduler
// gives it a slot. Worker only.
func (s *Session) run(j *job) {
	release, err := s.slots.acquire(s.ctx)
	if err != nil {
		s.fail(j, StatusDied, s.reason())
		return
	}
	defer release()
	c, ok := s.begin(j)
	if !ok {
		return
	}
	defer s.end()
	start := time.Now()
	o := s.execute(c, j, release)
	s.conclude(c, j, start, o)
}

// begin makes j the running job, or fails it when the session is closing
// or the kernel is dead.
func (s *Session) begin(j *job) (KernelConn, bool) {
	if s.ctx.Err() != nil {
		s.fail(j, StatusDied, s.reason())
		return nil, false
	}
	c := s.kernelClient()
	if c.Err() != nil {
		s.fail(j, StatusDied, "kernel is dead")
		return nil, false
	}
	if s.jup.aborted(j) {
		s.fail(j, StatusAborted, "an earlier execution failed (stop_on_error)")
		return nil, false
	}
	info := s.jup.execInfo(j, c)
	s.mu.Lock()
	s.current = j
	j.info = info
	s.lastActive = time.Now()
	s.hub.publish(Event{Type: EventStarted, ID: j.req.ID, Exec: info})
	s.mu.Unlock()
	s.setState(StateBusy, "")
	if s.watch != nil {
		s.watch.Reset()
	}
	j.ran = true
	return c, true
}

// end clears the running job.
func (s *Session) end() {
	s.mu.Lock()
	s.current = nil
	s.inputPending = ""
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// execute runs j's code on c and waits for one of: the reply, the
// timeout's interrupt being ignored, a restart request, the session's
// close. A timeout first interrupts; the job then ends normally if the
// kernel obeys, which its reply proves even while a backlog of output is
// still being read.
func (s *Session) execute(c KernelConn, j *job, replied func()) outcome {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	type result struct {
		reply *kernel.ExecuteReply
		err   error
	}
	done := make(chan result, 1)
	repliedC := make(chan struct{})
	opts := kernel.ExecuteOptions{AllowStdin: j.req.AllowStdin, Silent: j.req.Silent, NoHistory: j.req.NoHistory,
		OnBusy: j.kernelBegan, OnReply: func() {
			replied() // the kernel is done computing: its scheduler slot goes to the next session
			close(repliedC)
		}}
	go func() { // owned by execute, which always waits for done
		reply, err := c.Execute(ctx, j.req.Code, opts, func(ev kernel.Event) { s.onEvent(j, ev) })
		done <- result{reply, err}
	}()
	abandon := func(o outcome) outcome {
		cancel()
		<-done
		return o
	}
	timer := time.NewTimer(j.req.Timeout)
	defer timer.Stop()
	var grace <-chan time.Time
	timedOut := false
	for {
		select {
		case r := <-done:
			return outcome{ending: endedReply, reply: r.reply, err: r.err, timedOut: timedOut}
		case <-timer.C:
			timedOut = true
			s.interruptForTimeout(c)
			grace = time.After(s.cfg.InterruptGrace)
		case <-grace:
			select {
			case <-repliedC:
				// The kernel obeyed; its output is still draining (the
				// kernel's client bounds that).
				grace = nil
				continue
			default:
			}
			return abandon(outcome{ending: endedStubborn})
		case rdone := <-s.restart:
			return abandon(outcome{ending: endedRestart, restart: rdone})
		case <-s.ctx.Done():
			return abandon(outcome{ending: endedClosed})
		}
	}
}

func (s *Session) interruptForTimeout(c KernelConn) {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	if err := c.Interrupt(ctx); err != nil {
		s.log.Debug().Err(err).Msg("interrupt after timeout failed")
	}
}

// conclude reports how j ended and brings the kernel back where needed.
func (s *Session) conclude(c KernelConn, j *job, start time.Time, o outcome) {
	switch o.ending {
	case endedStubborn:
		j.lost()
		s.finish(j, start, StatusTimeout, nil, "timeout; kernel restarted")
		_ = s.restartKernel("execution timed out and ignored the interrupt")
	case endedRestart:
		j.lost()
		s.finish(j, start, StatusInterrupted, nil, "kernel restarted")
		o.restart <- s.restartKernel("restart requested")
	case endedClosed:
		j.lost()
		s.finish(j, start, StatusDied, nil, s.reason())
	case endedReply:
		if o.err != nil {
			j.lost()
			s.finish(j, start, StatusDied, nil, s.exitReason(o.err))
			if c.Err() != nil && s.ctx.Err() == nil {
				s.recoverKernel(c)
			}
			return
		}
		// The session reads idle before the caller has its result: a
		// client that looks right after its execute returned sees idle.
		s.report(j, start, statusOf(o, j), o.reply, "")
		s.setState(StateIdle, "")
		j.deliver()
	}
}

// statusOf maps a kernel reply to the execution's status.
func statusOf(o outcome, j *job) Status {
	switch {
	case o.timedOut:
		return StatusTimeout
	case o.reply.Status == "error" && o.reply.EName == "KeyboardInterrupt" && j.interrupted.Load():
		return StatusInterrupted
	case o.reply.Status != "ok":
		return StatusError
	}
	return StatusOK
}

// fail ends a job that never ran.
func (s *Session) fail(j *job, status Status, reason string) {
	s.finish(j, time.Now(), status, nil, reason)
}

// finish reports the job and hands its result to the caller.
func (s *Session) finish(j *job, start time.Time, status Status, reply *kernel.ExecuteReply, reason string) {
	s.report(j, start, status, reply, reason)
	j.deliver()
}

// report completes the job's execution and publishes its file changes and
// its done event.
func (s *Session) report(j *job, start time.Time, status Status, reply *kernel.ExecuteReply, reason string) {
	e := j.exec
	e.Status = status
	e.Reason = reason
	e.DurationMS = time.Since(start).Milliseconds()
	if reply != nil {
		e.ExecutionCount = reply.ExecutionCount
		e.Truncated = e.Truncated || reply.Truncated
	}
	e.Stdout, e.Stderr = j.out.stdout.String(), j.out.stderr.String()
	if s.watch != nil && j.ran {
		changes, truncated := s.watch.Changes()
		e.Truncated = e.Truncated || truncated
		for _, c := range changes {
			fc := FileChange{Path: c.Path, Size: c.Size, Change: c.Change}
			e.Files = append(e.Files, fc)
			j.out.record(s.hub.publish(Event{Type: EventFile, ID: j.req.ID, Path: fc.Path, Size: ptr(fc.Size), Change: fc.Change}))
		}
	}
	s.jup.finished(j, s.kernelClient(), status, reply)
	s.hub.publish(Event{Type: EventDone, ID: j.req.ID, Status: status, ExecutionCount: ptr(e.ExecutionCount),
		DurationMS: ptr(e.DurationMS), Truncated: ptr(e.Truncated), StateLost: ptr(e.StateLost), Reason: reason})
	s.cfg.Observer.ExecutionDone(status, time.Since(start))
}

// onEvent takes one kernel event of job j: output counts it against the
// execution's caps and converts it, then it is published and recorded for
// an Execute caller. It runs on the job's execute goroutine.
func (s *Session) onEvent(j *job, ev kernel.Event) {
	out, ok := j.out.take(j.req.ID, ev)
	if !ok {
		return
	}
	if out.Type == EventInputRequest {
		s.mu.Lock()
		s.inputPending = j.req.ID
		s.mu.Unlock()
	}
	j.out.record(s.hub.publish(out))
}
