package gateway

import (
	"context"
	"sync"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/sessions"
)

// introspector runs a connection's complete, inspect and comm_info requests beside
// its reader (their answers, complete_reply, inspect_reply and
// comm_info_reply, go to that client only, not to the event log), so a busy kernel (which answers them only between cells)
// never stalls the connection. A newer request of a kind cancels the older
// one (a typing user only wants the latest). It owns its goroutines:
// close cancels them and waits.
type introspector struct {
	ctx          context.Context
	sess         *sessions.Session
	out          chan<- any
	recoverPanic func(*error)

	mu      sync.Mutex
	cancels map[string]context.CancelFunc // frame type → running request
	wg      sync.WaitGroup
}

func newIntrospector(ctx context.Context, sess *sessions.Session, out chan<- any, recoverPanic func(*error)) *introspector {
	return &introspector{ctx: ctx, sess: sess, out: out, recoverPanic: recoverPanic, cancels: map[string]context.CancelFunc{}}
}

// start runs f (a complete or inspect frame with id, code and cursor_pos,
// or a comm_info frame).
func (in *introspector) start(f api.AnyClientFrame) {
	ctx, cancel := context.WithCancel(in.ctx)
	in.mu.Lock()
	if prev := in.cancels[f.Type]; prev != nil {
		prev()
	}
	in.cancels[f.Type] = cancel
	in.mu.Unlock()
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		defer cancel()
		var err error
		defer in.recoverPanic(&err)
		var reply any
		k, err := in.sess.Contexts().Resolve(ctx, f.Context, f.Language) // comm_info: that context's comms
		switch {
		case err != nil:
		case f.Type == api.FrameCommInfo:
			var comms map[string]sessions.CommTarget
			if comms, err = k.Comms().CommInfo(ctx, f.TargetName); err == nil {
				reply = api.CommInfoReplyFrame{Type: api.EventCommInfoReply, ID: f.ID, Comms: sessions.WireCommTargets(comms)}
			}
		case f.Type == api.FrameComplete:
			var c *sessions.Completion
			if c, err = k.Complete(ctx, *f.Code, *f.CursorPos); err == nil {
				reply = c.WireCompletion(f.ID)
			}
		default:
			var r *sessions.Inspection
			if r, err = k.Inspect(ctx, *f.Code, *f.CursorPos, f.DetailLevel); err == nil {
				reply = r.WireInspection(f.ID)
			}
		}
		if ctx.Err() != nil {
			return // superseded or the connection ended
		}
		if err != nil {
			reply = rejection(f.ID, err)
		}
		send(ctx, in.out, reply)
	}()
}

// close cancels every running request and waits for them.
func (in *introspector) close() {
	in.mu.Lock()
	for _, cancel := range in.cancels {
		cancel()
	}
	in.mu.Unlock()
	in.wg.Wait()
}
