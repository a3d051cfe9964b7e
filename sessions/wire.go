package sessions

import (
	"errors"
	"fmt"

	"github.com/glassroom/glassroom/api"
)

// ErrUnknownEvent is the error of an event whose type has no wire frame
// (a bug: a test proves every type the package publishes has one).
var ErrUnknownEvent = errors.New("sessions: event type without a wire frame")

// Frame converts the event to the frame the native WebSocket writes for
// its type (package api), each carrying only its type's fields; the JSON
// is the event's own. It is the one place an event meets the wire: a new
// event type needs a case here, and a new field a frame field.
func (e Event) Frame() (api.ServerFrame, error) {
	env := api.Envelope{Seq: e.Seq, Type: api.EventType(e.Type), ID: e.ID, Context: e.Context}
	switch e.Type {
	case EventKernel:
		return api.KernelEvent{Envelope: env, State: e.State, Reason: e.Reason}, nil
	case EventQueued:
		return api.QueuedEvent{Envelope: env, Position: e.Position}, nil
	case EventStarted:
		return api.StartedEvent{Envelope: env}, nil
	case EventStream:
		return api.StreamEvent{Envelope: env, Name: e.Name, Text: e.Text}, nil
	case EventDisplay:
		return api.DisplayEvent{Envelope: env, Data: api.Bundle(e.Data), Metadata: e.Metadata, DisplayID: e.DisplayID}, nil
	case EventUpdateDisplay:
		return api.UpdateDisplayEvent{Envelope: env, Data: api.Bundle(e.Data), Metadata: e.Metadata, DisplayID: e.DisplayID}, nil
	case EventClearOutput:
		return api.ClearOutputEvent{Envelope: env, Wait: e.Wait}, nil
	case EventResult:
		return api.ResultEvent{Envelope: env, Data: api.Bundle(e.Data), Metadata: e.Metadata, DisplayID: e.DisplayID,
			ExecutionCount: e.ExecutionCount}, nil
	case EventError:
		return api.ErrorEvent{Envelope: env, Name: e.Name, Value: e.Value, Traceback: e.Traceback}, nil
	case EventInputRequest:
		return api.InputRequestEvent{Envelope: env, Prompt: e.Prompt, Password: e.Password}, nil
	case EventFile:
		return api.FileChangeEvent{Envelope: env, Path: e.Path, Size: e.Size, Change: e.Change}, nil
	case EventDone:
		return api.DoneEvent{Envelope: env, ExecutionCount: e.ExecutionCount, Status: string(e.Status), DurationMS: e.DurationMS,
			Truncated: e.Truncated, StateLost: e.StateLost, Reason: e.Reason, UserExpressions: e.UserExpressions}, nil
	case EventGap:
		return api.GapEvent{Envelope: env, Reason: e.Reason}, nil
	case EventNetwork:
		return api.NetworkEvent{Envelope: env, Reason: e.Reason, Host: e.Host, Port: e.Port, Allowed: e.Allowed}, nil
	case EventContext:
		return api.ContextEvent{Envelope: env, Name: e.Name, State: e.State, Reason: e.Reason}, nil
	case EventCommand:
		return api.CommandEvent{Envelope: env, Name: e.Name, Text: e.Text, DurationMS: e.DurationMS, State: e.State,
			Reason: e.Reason, PID: e.PID, ExitCode: e.ExitCode, TimedOut: e.TimedOut}, nil
	case EventPage:
		return api.PageEvent{Envelope: env, Data: api.Bundle(e.Data)}, nil
	case EventSetNextInput:
		return api.SetNextInputEvent{Envelope: env, Text: e.Text, Replace: e.Replace}, nil
	case EventAskExit:
		return api.AskExitEvent{Envelope: env, KeepKernel: e.KeepKernel}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownEvent, e.Type)
}

// WireCompletion is c as a complete_reply frame answering request id.
func (c *Completion) WireCompletion(id string) api.CompleteReplyFrame {
	f := api.CompleteReplyFrame{Type: api.EventCompleteReply, ID: id,
		Completion: api.Completion{Matches: c.Matches, CursorStart: c.CursorStart, CursorEnd: c.CursorEnd}}
	if c.Types != nil {
		f.Types = make([]api.CompletionType, len(c.Types))
		for i, t := range c.Types {
			f.Types[i] = api.CompletionType(t)
		}
	}
	return f
}

// WireInspection is r as an inspect_reply frame answering request id.
func (r *Inspection) WireInspection(id string) api.InspectReplyFrame {
	return api.InspectReplyFrame{Type: api.EventInspectReply, ID: id, Found: r.Found, Data: api.Bundle(r.Data), Metadata: r.Metadata}
}

// WireComm is m as a comm frame.
func (m SideMessage) WireComm() api.CommEvent {
	f := api.CommEvent{Type: api.EventComm, Context: m.Context, Msg: api.CommMessage{
		Header:       api.CommHeader{MsgID: m.MsgID, MsgType: m.MsgType},
		ParentHeader: api.CommParent{MsgID: m.ParentID},
		Content:      m.Content, Metadata: m.Metadata, Buffers: m.Buffers,
	}}
	if f.Msg.Buffers == nil {
		f.Msg.Buffers = [][]byte{}
	}
	return f
}

// WireCommTargets is a comm_info answer's comms as the wire has them.
func WireCommTargets(comms map[string]CommTarget) map[string]api.CommTarget {
	if comms == nil {
		return nil
	}
	out := make(map[string]api.CommTarget, len(comms))
	for id, c := range comms {
		out[id] = api.CommTarget(c)
	}
	return out
}

// LimitsFromWire is a request's limits (api.Limits) as the session's. A
// Go conversion: the two types must keep the same fields, or this does
// not compile.
func LimitsFromWire(l api.Limits) Limits { return Limits(l) }

// WireLimits is l as the wire's api.Limits (see LimitsFromWire).
func WireLimits(l Limits) api.Limits { return api.Limits(l) }
