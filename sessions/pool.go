package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// pool keeps pre-started kernels with the default spec (no env, default
// limits), so that most sessions are created in about a millisecond. A
// pooled kernel has never run a user's code: it is started, dialed and
// its workspace opened, has imported Config.PoolPreload (the gateway's
// silent import, which binds no name: preload.go), then waits, idle (its
// heartbeat sleeps), until a session takes it. Its refill loop (run) is
// owned by Manager.Run.
type pool struct {
	target int
	start  func(context.Context, sandbox.Spec) (*readyKernel, error)
	log    zerolog.Logger

	mu       sync.Mutex
	ready    []*readyKernel
	starting int
	closed   bool
	failures int           // consecutive failed starts, for the back-off
	wake     chan struct{} // signalled when a kernel is taken (capacity 1)
}

// PoolState describes the warm pool (for health and metrics).
type PoolState struct {
	Target   int `json:"target"`
	Ready    int `json:"ready"`
	Starting int `json:"starting"`
}

func newPool(target int, start func(context.Context, sandbox.Spec) (*readyKernel, error), log zerolog.Logger) *pool {
	return &pool{target: target, start: start, log: log.With().Str("component", "pool").Logger(), wake: make(chan struct{}, 1)}
}

// eligible reports whether a session of spec may use a pooled kernel.
func eligible(spec sandbox.Spec) bool {
	return len(spec.Env) == 0 && spec.Limits == (sandbox.Limits{}) && spec.EgressSocket == "" && spec.Kernel == "" && len(spec.Volumes) == 0
}

// take hands out a ready kernel for spec, if spec is the default one and
// one is ready. Pooled kernels found dead on the way are closed.
func (p *pool) take(spec sandbox.Spec) (*readyKernel, bool) {
	if !eligible(spec) {
		return nil, false
	}
	var dead []*readyKernel
	defer func() {
		for _, k := range dead {
			k.close(context.Background())
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	signal(p.wake) // whatever happens, the pool may need a refill
	for len(p.ready) > 0 {
		k := p.ready[0]
		p.ready = p.ready[1:]
		if k.conn.Err() == nil {
			return k, true
		}
		dead = append(dead, k)
	}
	return nil, false
}

// State returns the pool's state now.
func (p *pool) State() PoolState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolState{Target: p.target, Ready: len(p.ready), Starting: p.starting}
}

// run keeps the pool full until ctx ends, starting one kernel at a time
// (sharing the manager's start limit with sessions being created, so a
// refill never delays a user's start by more than one slot). A failed
// start backs off, up to a minute. Idle, it waits on a channel: no timer.
func (p *pool) run(ctx context.Context) {
	for {
		p.mu.Lock()
		need := !p.closed && len(p.ready)+p.starting < p.target
		if need {
			p.starting++
		}
		failures := p.failures
		p.mu.Unlock()
		if !need {
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
				continue
			}
		}
		if failures > 0 {
			backoff := min(time.Minute, time.Duration(1<<min(failures, 6))*time.Second)
			select {
			case <-ctx.Done():
				p.done(nil)
				return
			case <-time.After(backoff):
			}
		}
		k, err := p.start(ctx, sandbox.Spec{ID: newSessionID()})
		if err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("warm pool: kernel start failed")
		}
		p.done(k)
	}
}

// done records the end of a refill: k joins the pool, or is closed if the
// pool closed meanwhile; nil counts as a failure.
func (p *pool) done(k *readyKernel) {
	p.mu.Lock()
	p.starting--
	switch {
	case k == nil:
		p.failures++
	case p.closed:
		p.mu.Unlock()
		k.close(context.Background())
		return
	default:
		p.failures = 0
		p.ready = append(p.ready, k)
	}
	p.mu.Unlock()
}

// close closes every ready kernel; later refills are closed on arrival.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.close(ctx)
		}()
	}
	wg.Wait()
}

// signal wakes the receiver of c (capacity 1) without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
