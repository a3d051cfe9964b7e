package sessions

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel"
)

// Bounds on strings the kernel chooses that are not output text.
const (
	maxDisplayID = 256
	maxPrompt    = 4096
)

// onEvent takes one kernel event of job j: it counts it against the
// execution's caps, converts it to a session Event, publishes it and
// records it for an Execute caller. Everything the kernel chooses is
// counted before it is kept. It runs on the job's execute goroutine.
func (s *Session) onEvent(j *job, ev kernel.Event) {
	if ev.Truncated {
		j.exec.Truncated = true
	}
	if !s.admit(j, ev) {
		j.exec.Truncated = true
		return
	}
	out, ok := s.convert(j, ev)
	if !ok {
		return
	}
	s.record(j, s.hub.publish(out))
}

// admit counts the event against the per-execution count caps. Input
// requests have their own allowance, so input() still works after a flood
// of output.
func (s *Session) admit(j *job, ev kernel.Event) bool {
	if ev.Kind == kernel.EventInputRequest {
		j.inputs++
		return j.inputs <= s.cfg.MaxInputRequests
	}
	j.events++
	return j.events <= s.cfg.MaxEvents
}

// convert turns ev into the session's wire event, applying the byte caps.
func (s *Session) convert(j *job, ev kernel.Event) (Event, bool) {
	out := Event{ID: j.req.ID}
	switch ev.Kind {
	case kernel.EventStream:
		room := s.cfg.MaxStreamBytes - j.streamBytes
		text := ev.Text
		if len(text) > room {
			text = truncateUTF8(text, room)
			j.exec.Truncated = true
		}
		if text == "" {
			return out, false
		}
		j.streamBytes += len(text)
		out.Type, out.Name, out.Text = EventStream, ev.Name, text
	case kernel.EventDisplay, kernel.EventUpdateDisplay, kernel.EventResult:
		if len(ev.DisplayID) > maxDisplayID {
			j.exec.Truncated = true
			return out, false
		}
		data, _ := json.Marshal(ev.Data)
		if !s.takeRich(j, len(data)+len(ev.Metadata)+len(ev.DisplayID)+len(ev.Data)*entryOverhead) {
			return out, false
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
		}
	case kernel.EventError:
		n := len(ev.EName) + len(ev.EValue)
		for _, t := range ev.Traceback {
			n += len(t) + entryOverhead
		}
		if !s.takeRich(j, n) {
			return out, false
		}
		out.Type, out.Name, out.Value, out.Traceback = EventError, ev.EName, ev.EValue, ev.Traceback
		if out.Traceback == nil {
			out.Traceback = []string{}
		}
	case kernel.EventClearOutput:
		out.Type, out.Wait = EventClearOutput, ev.Wait
	case kernel.EventInputRequest:
		prompt := truncateUTF8(ev.Prompt, maxPrompt)
		if !s.takeRich(j, len(prompt)) {
			return out, false
		}
		out.Type, out.Prompt, out.Password = EventInputRequest, ptr(prompt), ptr(ev.Password)
		s.mu.Lock()
		s.inputPending = j.req.ID
		s.mu.Unlock()
	default:
		return out, false
	}
	return out, true
}

// record keeps a published event for an Execute caller, charged to the
// gateway's budget; when the budget is spent the execution is truncated.
func (s *Session) record(j *job, out Event) {
	if !j.collect {
		return
	}
	n := out.size() + len(out.Text) // stream text is kept twice: in the event and in stdout/stderr
	if !s.budget.TryAcquire(n) {
		j.exec.Truncated = true
		return
	}
	j.held += n
	j.exec.Outputs = append(j.exec.Outputs, out)
	switch out.Type {
	case EventStream:
		if out.Name == "stderr" {
			j.stderr.WriteString(out.Text)
		} else {
			j.stdout.WriteString(out.Text)
		}
	case EventResult:
		j.exec.Result = out.Data
	case EventError:
		j.exec.Error = &ErrorInfo{Name: out.Name, Value: out.Value, Traceback: out.Traceback}
	}
}

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
