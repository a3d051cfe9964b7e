package sessionstest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
)

// Runtime is the fake sandbox.Runtime (and sandbox.KernelLister). Its
// sandboxes run fake kernel processes (sandbox.Incarnation) that Dial
// connects to. Safe for concurrent use; its zero value is not usable
// (NewRuntime).
type Runtime struct {
	dir string // every sandbox's workspace

	failRestart atomic.Bool  // the sandboxes' restarts fail
	panicDial   atomic.Bool  // dials panic
	closeFails  atomic.Int32 // the next Closes that fail
	closePanics atomic.Bool  // the next Close panics
	startDelay  atomic.Int64 // each Start takes this long (a time.Duration)
	inStart     atomic.Int32 // Starts in progress
	maxInStart  atomic.Int32 // the most at once
	cmds        sync.WaitGroup
	cmdsLive    atomic.Int32 // commands running
	cmdsMost    atomic.Int32 // the most at once

	mu        sync.Mutex
	startGate chan Held // GateStarts's, or nil
	ttyGate   chan Held // GateTerminals's, or nil
	started   int       // incarnations started, for their names
	live      int
	incs      map[string]*sandbox.Incarnation // by ConnectionInfo.IP
	ids       []string                        // the ids of the sandboxes started, in order
	calls     []Call                          // every Execute on any of its kernels, in order
	kernels   []*Kernel                       // every kernel dialed, in order
}

// NewRuntime returns a fake runtime whose sandboxes' workspace is dir
// (they neither write nor remove it).
func NewRuntime(dir string) *Runtime {
	return &Runtime{dir: dir, incs: map[string]*sandbox.Incarnation{}}
}

// Call is one Execute on a fake kernel.
type Call struct {
	Code      string
	Silent    bool // kernel.ExecuteOptions.Silent
	NoHistory bool // kernel.ExecuteOptions.NoHistory
}

// Held is a call the runtime holds (GateStarts, GateTerminals) until its
// Release.
type Held struct {
	// Tenant is the starting sandbox's tenant; empty for a terminal.
	Tenant  string
	release chan struct{}
}

// Release lets the held call go on. Call it exactly once.
func (h Held) Release() { close(h.release) }

// hold sends a new Held on gate and waits for its Release.
func hold(gate chan Held, tenant string) {
	if gate == nil {
		return
	}
	h := Held{Tenant: tenant, release: make(chan struct{})}
	gate <- h
	<-h.release
}

// GateStarts makes every later Start wait: it sends a Held on the
// returned (unbuffered) channel, then waits for its Release. The test
// must receive and release every Start, or the Manager's Create and
// Close block. Every call returns the same channel.
func (r *Runtime) GateStarts() <-chan Held {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startGate == nil {
		r.startGate = make(chan Held)
	}
	return r.startGate
}

// GateTerminals is GateStarts for the sandboxes' terminals: every later
// StartCommand of a TTY command waits for its Held's Release before its
// shell starts.
func (r *Runtime) GateTerminals() <-chan Held {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ttyGate == nil {
		r.ttyGate = make(chan Held)
	}
	return r.ttyGate
}

// FailRestarts makes the sandboxes' Restart fail (their kernel process
// killed, none started), while on.
func (r *Runtime) FailRestarts(on bool) { r.failRestart.Store(on) }

// PanicDials makes Dial panic ("truncated READY"), while on.
func (r *Runtime) PanicDials(on bool) { r.panicDial.Store(on) }

// FailCloses makes the next n sandbox Closes fail, as an engine that does
// not answer; the Close after them succeeds.
func (r *Runtime) FailCloses(n int) { r.closeFails.Store(int32(n)) }

// PanicNextClose makes the next sandbox Close panic.
func (r *Runtime) PanicNextClose() { r.closePanics.Store(true) }

// SetStartDelay makes every later Start take d.
func (r *Runtime) SetStartDelay(d time.Duration) { r.startDelay.Store(int64(d)) }

// MaxConcurrentStarts is the most Starts that have run at once.
func (r *Runtime) MaxConcurrentStarts() int { return int(r.maxInStart.Load()) }

// Commands is how many commands its sandboxes run now, and the most
// that ran at once.
func (r *Runtime) Commands() (now, most int) {
	return int(r.cmdsLive.Load()), int(r.cmdsMost.Load())
}

// LiveSandboxes is how many of its sandboxes (contexts' included) are
// started and not closed.
func (r *Runtime) LiveSandboxes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}

// StartedIDs returns the ids of the sandboxes started so far, oldest
// first.
func (r *Runtime) StartedIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// Executions returns every Execute on its kernels so far, oldest first.
func (r *Runtime) Executions() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Kernels returns the kernels Dial connected to so far, oldest first
// (after a restart, the new connection is the last).
func (r *Runtime) Kernels() []*Kernel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Kernel(nil), r.kernels...)
}

// WaitCommands blocks until every command its sandboxes started has
// ended (exited or been killed).
func (r *Runtime) WaitCommands() { r.cmds.Wait() }

func (r *Runtime) record(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// incarnation starts a fake kernel process.
func (r *Runtime) incarnation() *sandbox.Incarnation {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
	inc := sandbox.NewIncarnation(kernel.ConnectionInfo{IP: "fake-" + strconv.Itoa(r.started)})
	r.incs[inc.Connection().IP] = inc
	return inc
}

// Dial is a sessions.DialFunc (sessions.Config.Dial): it connects to the
// kernel process info names, of one of r's sandboxes. The caller must
// Close the connection.
func (r *Runtime) Dial(_ context.Context, info kernel.ConnectionInfo, _ kernel.Config, _ zerolog.Logger) (sessions.KernelConn, error) {
	if r.panicDial.Load() {
		panic("fake: truncated READY")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	inc := r.incs[info.IP]
	if inc == nil {
		return nil, errors.New("fake: no such kernel")
	}
	k := newKernel(inc, r.record)
	r.kernels = append(r.kernels, k)
	return k, nil
}

// Name implements sandbox.Runtime.
func (r *Runtime) Name() string { return "fake" }

// Start implements sandbox.Runtime: a sandbox with a fake kernel
// process, after the start delay (SetStartDelay) and the gate
// (GateStarts).
func (r *Runtime) Start(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	n := r.inStart.Add(1)
	defer r.inStart.Add(-1)
	for {
		m := r.maxInStart.Load()
		if n <= m || r.maxInStart.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(time.Duration(r.startDelay.Load()))
	r.mu.Lock()
	gate := r.startGate
	r.mu.Unlock()
	hold(gate, spec.Tenant)
	sb := &Sandbox{id: spec.ID, rt: r, inc: r.incarnation()}
	r.mu.Lock()
	r.live++
	r.ids = append(r.ids, spec.ID)
	r.mu.Unlock()
	return sb, nil
}

// Installed implements sandbox.KernelLister: the fake "runs" python3, r
// and bash.
func (r *Runtime) Installed() []sandbox.KernelSpec {
	var out []sandbox.KernelSpec
	for _, name := range []string{"python3", "r", "bash"} {
		k, _ := sandbox.LookupKernel(name)
		out = append(out, k)
	}
	return out
}
