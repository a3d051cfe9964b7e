package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel"
)

// Execution is the result of one execution, as the REST API returns it.
type Execution struct {
	ID             string          `json:"id"`
	Status         string          `json:"status"` // ok|error|timeout|interrupted|died
	ExecutionCount int             `json:"execution_count"`
	Stdout         string          `json:"stdout"`
	Stderr         string          `json:"stderr"`
	Outputs        []Event         `json:"outputs"`
	Result         json.RawMessage `json:"result"` // MIME bundle or null
	Error          *ErrorInfo      `json:"error"`
	Truncated      bool            `json:"truncated"`
	StateLost      bool            `json:"state_lost"`
	Reason         string          `json:"reason,omitempty"`
	DurationMS     int64           `json:"duration_ms"`
	Files          []FileChange    `json:"files"`
}

// ErrorInfo is the exception an execution raised.
type ErrorInfo struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// FileChange is a workspace change made by an execution.
type FileChange struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Change string `json:"change"` // created|modified|deleted
}

// Execution statuses.
const (
	StatusOK          = "ok"
	StatusError       = "error"
	StatusTimeout     = "timeout"
	StatusInterrupted = "interrupted"
	StatusDied        = "died"
)

type job struct {
	req         ExecRequest
	collect     bool // keep outputs for an Execute caller
	result      chan *Execution
	exec        *Execution
	interrupted atomic.Bool // a user interrupt was sent during this job
	ran         bool        // the job reached the kernel (worker only)
	events      int         // kernel events seen (execute goroutine only)

	streamBytes, richBytes int
	stdout, stderr         strings.Builder
}

type execResult struct {
	reply *kernel.ExecuteReply
	err   error
}

// run executes j on the current kernel, enforcing the timeout. Worker only.
func (s *Session) run(j *job) {
	s.queued.Add(-1)
	if s.ctx.Err() != nil {
		s.fail(j, StatusDied, s.reason())
		return
	}
	c := s.kernelClient()
	if c.Err() != nil {
		s.fail(j, StatusDied, "kernel is dead")
		return
	}
	start := time.Now()
	s.mu.Lock()
	s.current = j
	s.lastActive = start
	s.hub.publish(Event{Type: EventStarted, ID: j.req.ID})
	s.mu.Unlock()
	s.setState(StateBusy, "")
	defer func() {
		s.mu.Lock()
		s.current = nil
		s.inputPending = ""
		s.lastActive = time.Now()
		s.mu.Unlock()
	}()

	if s.watch != nil {
		s.watch.Reset()
	}
	j.ran = true
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	done := make(chan execResult, 1)
	go func() { // owned by run, which always waits for done
		reply, err := c.Execute(ctx, j.req.Code, kernel.ExecuteOptions{AllowStdin: j.req.AllowStdin}, func(ev kernel.Event) { s.onEvent(j, ev) })
		done <- execResult{reply, err}
	}()

	timer := time.NewTimer(j.req.Timeout)
	defer timer.Stop()
	var grace <-chan time.Time
	timedOut := false
	var res execResult
	for {
		select {
		case res = <-done:
		case <-timer.C:
			timedOut = true
			ictx, icancel := context.WithTimeout(s.ctx, 2*time.Second)
			if err := c.Interrupt(ictx); err != nil {
				s.log.Debug().Err(err).Msg("interrupt after timeout failed")
			}
			icancel()
			grace = time.After(s.cfg.InterruptGrace)
			continue
		case <-grace:
			// Still busy after the interrupt: only a restart frees the kernel.
			cancel()
			<-done
			j.exec.StateLost = true
			s.finish(j, start, StatusTimeout, nil, "timeout; kernel restarted")
			_ = s.restartKernel("execution timed out and ignored the interrupt")
			return
		case rdone := <-s.restart:
			cancel()
			<-done
			j.exec.StateLost = true
			s.finish(j, start, StatusInterrupted, nil, "kernel restarted")
			rdone <- s.restartKernel("restart requested")
			return
		case <-s.ctx.Done():
			cancel()
			<-done
			j.exec.StateLost = true
			s.finish(j, start, StatusDied, nil, s.reason())
			return
		}
		break
	}
	if res.err != nil {
		reason := s.exitReason(res.err)
		j.exec.StateLost = true
		s.finish(j, start, StatusDied, nil, reason)
		if c.Err() != nil && s.ctx.Err() == nil {
			s.recoverKernel(c)
		}
		return
	}
	status := StatusOK
	switch {
	case timedOut:
		status = StatusTimeout
	case res.reply.Status == "error" && res.reply.EName == "KeyboardInterrupt" && j.interrupted.Load():
		status = StatusInterrupted
	case res.reply.Status != "ok":
		status = StatusError
	}
	s.finish(j, start, status, res.reply, "")
	s.setState(StateIdle, "")
}

// exitReason explains a dead kernel. The connection often drops a moment
// before the runtime has reaped the process, so it waits briefly for the
// runtime's reason (exit status, OOM kill).
func (s *Session) exitReason(err error) string {
	select {
	case <-s.sandbox.Exited():
		return s.sandbox.ExitReason()
	case <-time.After(time.Second):
	}
	var de *kernel.DeadError
	if errors.As(err, &de) {
		return deathReason(de.Cause)
	}
	return deathReason(err)
}

// fail ends a job that never ran.
func (s *Session) fail(j *job, status, reason string) {
	s.finish(j, time.Now(), status, nil, reason)
}

// finish publishes the done event and hands the result to the caller.
func (s *Session) finish(j *job, start time.Time, status string, reply *kernel.ExecuteReply, reason string) {
	e := j.exec
	e.Status = status
	e.Reason = reason
	e.DurationMS = time.Since(start).Milliseconds()
	if reply != nil {
		e.ExecutionCount = reply.ExecutionCount
	}
	e.Stdout, e.Stderr = j.stdout.String(), j.stderr.String()
	if s.watch != nil && j.ran {
		changes, truncated := s.watch.Changes()
		e.Truncated = e.Truncated || truncated
		for _, c := range changes {
			fc := FileChange{Path: c.Path, Size: c.Size, Change: c.Change}
			e.Files = append(e.Files, fc)
			out := s.hub.publish(Event{Type: EventFile, ID: j.req.ID, Path: fc.Path, Size: ptr(fc.Size), Change: fc.Change})
			if j.collect {
				e.Outputs = append(e.Outputs, out)
			}
		}
	}
	done := Event{Type: EventDone, ID: j.req.ID, Status: status, ExecutionCount: ptr(e.ExecutionCount),
		DurationMS: ptr(e.DurationMS), Truncated: ptr(e.Truncated), StateLost: ptr(e.StateLost), Reason: reason}
	s.hub.publish(done)
	j.result <- e
}

// onEvent converts a kernel event, applies the output caps, publishes it
// and records it for the Execute caller. It runs on the job's execute
// goroutine.
func (s *Session) onEvent(j *job, ev kernel.Event) {
	out := Event{ID: j.req.ID}
	if ev.Kind != kernel.EventInputRequest { // the kernel blocks on each input request
		if j.events++; j.events > s.cfg.MaxEvents {
			j.exec.Truncated = true
			return
		}
	}
	switch ev.Kind {
	case kernel.EventStream:
		room := s.cfg.MaxStreamBytes - j.streamBytes
		text := ev.Text
		if len(text) > room {
			text = truncateUTF8(text, room)
			j.exec.Truncated = true
		}
		if text == "" {
			return
		}
		j.streamBytes += len(text)
		out.Type, out.Name, out.Text = EventStream, ev.Name, text
		if j.collect {
			if ev.Name == "stderr" {
				j.stderr.WriteString(text)
			} else {
				j.stdout.WriteString(text)
			}
		}
	case kernel.EventDisplay, kernel.EventUpdateDisplay, kernel.EventResult:
		if len(ev.DisplayID) > maxDisplayID {
			j.exec.Truncated = true
			return
		}
		data, _ := json.Marshal(ev.Data)
		if !s.takeRich(j, len(data)+len(ev.Metadata)+len(ev.DisplayID)) {
			return
		}
		out.Data, out.Metadata, out.DisplayID = data, nonNullJSON(ev.Metadata), ev.DisplayID
		switch ev.Kind {
		case kernel.EventDisplay:
			out.Type = EventDisplay
		case kernel.EventUpdateDisplay:
			out.Type = EventUpdateDisplay
		default:
			out.Type = EventResult
			out.ExecutionCount = ptr(ev.ExecutionCount)
			if j.collect {
				j.exec.Result = data
			}
		}
	case kernel.EventError:
		n := len(ev.EName) + len(ev.EValue)
		for _, t := range ev.Traceback {
			n += len(t)
		}
		if !s.takeRich(j, n) {
			return
		}
		out.Type, out.Name, out.Value, out.Traceback = EventError, ev.EName, ev.EValue, ev.Traceback
		if out.Traceback == nil {
			out.Traceback = []string{}
		}
		if j.collect {
			j.exec.Error = &ErrorInfo{Name: ev.EName, Value: ev.EValue, Traceback: out.Traceback}
		}
	case kernel.EventClearOutput:
		out.Type, out.Wait = EventClearOutput, ev.Wait
	case kernel.EventInputRequest:
		out.Type, out.Prompt, out.Password = EventInputRequest, ptr(truncateUTF8(ev.Prompt, maxPrompt)), ptr(ev.Password)
		s.mu.Lock()
		s.inputPending = j.req.ID
		s.mu.Unlock()
	default:
		return
	}
	out = s.hub.publish(out)
	if j.collect {
		j.exec.Outputs = append(j.exec.Outputs, out)
	}
}

// Bounds on strings the kernel chooses that are not output text.
const (
	maxDisplayID = 256
	maxPrompt    = 4096
)

func (s *Session) takeRich(j *job, n int) bool {
	if j.richBytes+n > s.cfg.MaxRichBytes {
		j.exec.Truncated = true
		return false
	}
	j.richBytes += n
	return true
}

func nonNullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
