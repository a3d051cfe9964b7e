package sessions

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel"
)

// Bounds on strings the kernel chooses that are not output text.
const (
	maxDisplayID = 256
	maxPrompt    = 4096
)

// outputCaps are Config's caps on what one execution's kernel sends.
type outputCaps struct {
	events, inputs int // MaxEvents, MaxInputRequests
	stream, rich   int // MaxStreamBytes, MaxRichBytes
}

func capsOf(cfg *Config) outputCaps {
	return outputCaps{events: cfg.MaxEvents, inputs: cfg.MaxInputRequests, stream: cfg.MaxStreamBytes, rich: cfg.MaxRichBytes}
}

// output is the accounting of what the kernel sent for one execution: it
// counts every kernel event against the execution's caps before anything
// of it is kept, and for an Execute caller (collect) keeps the published
// events in the execution's result, charged to the gateway's Budget until
// release. It has no lock: the job's execute goroutine owns it while the
// kernel runs the code, then the worker (after execute has returned).
type output struct {
	caps    outputCaps
	budget  *Account
	collect bool       // keep outputs for an Execute caller
	exec    *Execution // the result it fills (the job's)

	events, inputs         int
	streamBytes, richBytes int
	held                   int  // bytes of the budget the collected outputs hold
	errored                bool // the kernel sent an error message (kept or not)
	stdout, stderr         strings.Builder
}

// take counts one kernel event against the caps and converts it to the
// session's wire event for execution id; false: nothing is published
// (over a cap, or nothing to show).
func (o *output) take(id string, ev kernel.Event) (Event, bool) {
	if ev.Truncated {
		o.exec.Truncated = true
	}
	o.errored = o.errored || ev.Kind == kernel.EventError
	if !o.admit(ev) {
		o.exec.Truncated = true
		return Event{}, false
	}
	return o.convert(id, ev)
}

// admit counts the event against the per-execution count caps. Input
// requests have their own allowance, so input() still works after a flood
// of output.
func (o *output) admit(ev kernel.Event) bool {
	if ev.Kind == kernel.EventInputRequest {
		o.inputs++
		return o.inputs <= o.caps.inputs
	}
	o.events++
	return o.events <= o.caps.events
}

// convert turns ev into the session's wire event, applying the byte caps.
func (o *output) convert(id string, ev kernel.Event) (Event, bool) {
	out := Event{ID: id}
	switch ev.Kind {
	case kernel.EventStream:
		room := o.caps.stream - o.streamBytes
		text := ev.Text
		if len(text) > room {
			text = truncateUTF8(text, room)
			o.exec.Truncated = true
		}
		if text == "" {
			return out, false
		}
		o.streamBytes += len(text)
		out.Type, out.Name, out.Text = EventStream, ev.Name, text
	case kernel.EventDisplay, kernel.EventUpdateDisplay, kernel.EventResult:
		if len(ev.DisplayID) > maxDisplayID {
			o.exec.Truncated = true
			return out, false
		}
		if !o.takeRich(ev.Size()) {
			// A bundle over the cap loses its structured JSON first: the
			// image or HTML beside it still gets in if it fits alone.
			var ok bool
			if ev, ok = withoutStructured(ev); !ok || !o.takeRich(ev.Size()) {
				return out, false
			}
		}
		data := ev.DataJSON
		if data == nil {
			data, _ = json.Marshal(ev.Data)
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
		if !o.takeRich(n) {
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
		if !o.takeRich(len(prompt)) {
			return out, false
		}
		out.Type, out.Prompt, out.Password = EventInputRequest, ptr(prompt), ptr(ev.Password)
	default:
		return out, false
	}
	return out, true
}

// record keeps a published event for an Execute caller, charged to the
// gateway's budget; when the budget is spent the execution is truncated.
func (o *output) record(out Event) {
	if !o.collect {
		return
	}
	n := out.size() + len(out.Text) // stream text is kept twice: in the event and in stdout/stderr
	if !o.budget.TryAcquire(n) {
		o.exec.Truncated = true
		return
	}
	o.held += n
	o.exec.Outputs = append(o.exec.Outputs, out)
	switch out.Type {
	case EventStream:
		if out.Name == "stderr" {
			o.stderr.WriteString(out.Text)
		} else {
			o.stdout.WriteString(out.Text)
		}
	case EventResult:
		o.exec.Result = out.Data
	case EventError:
		o.exec.Error = &ErrorInfo{Name: out.Name, Value: out.Value, Traceback: out.Traceback}
	}
}

func (o *output) takeRich(n int) bool {
	if o.richBytes+n > o.caps.rich {
		o.exec.Truncated = true
		return false
	}
	o.richBytes += n
	return true
}

// release returns the bytes the collected outputs hold to the budget,
// once the caller owns the result.
func (o *output) release() {
	o.budget.Release(o.held)
	o.held = 0
}

// StructuredMIMEPrefix begins the MIME types of the python3 kernel's
// structured rich output (a chart's or a DataFrame's JSON), which always
// come beside an image or HTML of the same value.
const StructuredMIMEPrefix = "application/vnd.glassroom."

// withoutStructured returns ev without its structured entries; false when
// it had none, or nothing else.
func withoutStructured(ev kernel.Event) (kernel.Event, bool) {
	rest := make(kernel.MimeBundle, len(ev.Data))
	for k, v := range ev.Data {
		if !strings.HasPrefix(k, StructuredMIMEPrefix) {
			rest[k] = v
		}
	}
	if len(rest) == len(ev.Data) || len(rest) == 0 {
		return ev, false
	}
	ev.Data, ev.DataJSON = rest, nil
	return ev, true
}

func nonNullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune. A cut
// string is copied, so it does not keep the whole original alive (its
// size is what the caps count).
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
	return strings.Clone(s[:n])
}
