package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
)

// worker owns the session's kernel: its goroutine (loop) runs queued jobs
// one at a time and performs every restart, so kernel lifecycle
// transitions never race. The functions of this file and run.go run on
// that goroutine (onEvent on the goroutine execute starts for each job),
// except start, which starts it, and stop, which waits for it to end.
//
// What the worker shares with the Session's methods (the state, the
// kernel's connection, the running job, the queue) is the Session's and
// guarded by s.mu; its fields below are its own.
type worker struct {
	s         *Kernel
	slots     *execSlots         // the gateway's fair scheduler
	watch     workspace.Tracker  // nil when changes are not tracked
	stopWatch context.CancelFunc // ends the current kernel watcher
	wg        sync.WaitGroup     // loop and the kernel watcher
}

// start starts the worker's goroutine on kernel c. The session's context
// ends it; stop waits for it.
func (w *worker) start(c KernelConn) {
	w.s.side.begin(c)
	w.watchKernel(c)
	w.startSide(c)
	w.wg.Add(1)
	go w.loop()
}

// startSide starts the owner of kernel c's side stream (side.go). It ends
// when c dies or is replaced (restartKernel closes the old connection),
// or when the session ends; stop waits for it.
func (w *worker) startSide(c KernelConn) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() {
			if r := recover(); r != nil { // a bug must cost this kernel's side stream, never the gateway
				w.s.log.Error().Interface("panic", r).Msg("side stream owner panicked; comm messages are lost until the kernel restarts")
			}
		}()
		w.s.side.run(w.s.ctx, c)
	}()
}

// stop waits for the worker's goroutines, once the session's context is
// cancelled, then fails the jobs queued meanwhile and closes the kernel's
// connection and the change tracker. Called by close and detach.
func (w *worker) stop() {
	w.wg.Wait()
	w.drain() // jobs queued while the worker was stopping
	_ = w.s.kernelClient().Close()
	if w.watch != nil {
		_ = w.watch.Close()
	}
}

// loop runs until the session closes.
func (w *worker) loop() {
	defer w.wg.Done()
	defer func() {
		// A bug must cost this session, never the gateway.
		if r := recover(); r != nil {
			w.s.log.Error().Interface("panic", r).Msg("session worker panicked; session is dead")
			w.setState(StateDead, "internal error")
			w.drain()
		}
	}()
	for {
		c := w.s.kernelClient()
		select {
		case <-w.s.ctx.Done():
			w.drain()
			return
		case j := <-w.s.queue:
			w.took(j)
			if w.s.State() == StateDead { // its kernel died and could not be restarted
				w.restartThenRun(j)
				continue
			}
			w.runAwake(j)
		case done := <-w.s.restart:
			done <- w.restartKernel("restart requested")
		case <-c.Done():
			if w.s.State() == StateDead {
				w.waitWhileDead() // restarting failed before
				continue
			}
			w.recoverKernel(c)
		}
	}
}

// runAwake runs j with the kernel thawed (and kept awake meanwhile).
func (w *worker) runAwake(j *job) {
	release, err := w.s.pause.use(w.s.ctx)
	if err != nil {
		w.fail(j, StatusDied, "the paused kernel could not be resumed: "+err.Error())
		return
	}
	defer release()
	w.run(j)
}

// took records that the worker took j off the queue, waking SubmitWait
// callers.
func (w *worker) took(j *job) {
	w.s.queued.Add(-1)
	w.s.queuedCode.Add(-int64(len(j.req.Code)))
	w.s.mu.Lock()
	close(w.s.room)
	w.s.room = make(chan struct{})
	w.s.mu.Unlock()
}

// waitWhileDead handles one request while the kernel is dead and could not
// be restarted (its container engine was down, say): a restart request
// tries again, and so does a job, which runs on the new kernel if that
// works and fails with the reason if not.
func (w *worker) waitWhileDead() {
	select {
	case <-w.s.ctx.Done():
	case done := <-w.s.restart:
		done <- w.restartKernel("restart requested")
	case j := <-w.s.queue:
		w.took(j)
		w.restartThenRun(j)
	}
}

// restartThenRun tries to restart a dead kernel for job j, then runs it
// on the new kernel, or fails it with the reason.
func (w *worker) restartThenRun(j *job) {
	if err := w.restartKernel("the kernel was dead: started again for a new execution, variables lost"); err != nil {
		switch {
		case sandbox.IsFenced(w.s.sandbox): // another replica has the session now
			w.fail(j, StatusDied, fencedReason)
			return
		case w.s.ctx.Err() != nil: // the session ended meanwhile: say why
			w.fail(j, StatusDied, w.reason())
			return
		}
		w.fail(j, StatusDied, "kernel is dead: "+err.Error())
		return
	}
	w.runAwake(j)
}

// drain fails every queued job when the session closes. Taking s.mu
// orders it with enqueue, which checks the context under it.
func (w *worker) drain() {
	reason := w.reason()
	w.s.mu.Lock()
	var jobs []*job
	for done := false; !done; {
		select {
		case j := <-w.s.queue:
			jobs = append(jobs, j)
		default:
			done = true
		}
	}
	w.s.mu.Unlock()
	for _, j := range jobs {
		w.s.queued.Add(-1)
		w.s.queuedCode.Add(-int64(len(j.req.Code)))
		w.fail(j, StatusDied, reason)
	}
}

// reason is why the session closed (the queued jobs fail with it).
func (w *worker) reason() string {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closeReason != "" {
		return w.s.closeReason
	}
	return "session closed"
}

// watchKernel starts the goroutine that declares c dead when the sandbox's
// kernel process exits, once the messages it sent before it ended have
// had exitDrain to arrive (or c ended on its own). It is stopped by the next watchKernel or by the
// session's end.
func (w *worker) watchKernel(c KernelConn) {
	ctx, cancel := context.WithCancel(w.s.ctx)
	w.stopWatch = cancel
	exited := w.s.sandbox.Exited()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		select {
		case <-exited:
		case <-ctx.Done():
			return
		}
		// What the kernel sent before it ended is read first: an
		// execute_reply sent just before exit() took the process down.
		drain := time.NewTimer(exitDrain)
		defer drain.Stop()
		select {
		case <-drain.C:
		case <-c.Done():
		case <-ctx.Done():
			return
		}
		c.Abort(&ExitError{Reason: w.s.sandbox.ExitReason()})
	}()
}

// exitDrain is how long a kernel whose process exited has to deliver the
// messages it sent before it ended, before its connection is aborted.
const exitDrain = 300 * time.Millisecond

// recoverKernel restarts a kernel that died on its own.
func (w *worker) recoverKernel(c KernelConn) {
	reason := w.exitReason(c.Err())
	if sandbox.IsFenced(w.s.sandbox) { // another gateway's now: the manager lets it go (watchFence)
		w.setState(StateDead, fencedReason)
		return
	}
	w.s.cfg.Observer.KernelDied(strings.Contains(reason, "OOMKilled"))
	w.s.log.Info().Str("reason", reason).Msg("kernel died; restarting")
	w.setState(StateDead, reason)
	_ = w.restartKernel("kernel died: " + reason)
}

// exitReason explains a dead kernel. The connection often drops a moment
// before the runtime has reaped the process, so it waits briefly for the
// runtime's reason (exit status, OOM kill).
func (w *worker) exitReason(err error) string {
	select {
	case <-w.s.sandbox.Exited():
		return w.s.sandbox.ExitReason()
	case <-time.After(time.Second):
	}
	var de *kernel.DeadError
	if errors.As(err, &de) {
		err = de.Cause
	}
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		return ee.Reason
	case err == nil:
		return "unknown"
	}
	return err.Error()
}

var errRestarting = errors.New("sessions: kernel restarting")

// restartKernel replaces the kernel process and its connection. If that
// fails the session stays dead (calls fail) until a restart succeeds.
func (w *worker) restartKernel(reason string) error {
	if release, err := w.s.pause.use(w.s.ctx); err == nil { // never frozen while it starts
		defer release()
	}
	w.setState(StateRestarting, reason)
	old := w.s.kernelClient()
	w.stopWatch()
	old.Abort(errRestarting)
	_ = old.Close()
	ctx, cancel := context.WithTimeout(w.s.ctx, w.s.cfg.StartTimeout)
	defer cancel()
	c, err := w.reconnect(ctx)
	if err != nil {
		w.s.log.Warn().Err(err).Msg("kernel restart failed")
		w.s.mu.Lock()
		w.s.client = old // dead; calls fail with ErrDead
		w.s.mu.Unlock()
		w.s.side.comms.reset(old) // its comms are gone with it
		w.watchKernel(old)
		w.setState(StateDead, "restart failed: "+err.Error())
		return fmt.Errorf("%w: restart: %w", ErrKernelDead, err)
	}
	w.s.side.begin(c) // before anyone can send to c: its comm table is new
	w.s.mu.Lock()
	w.s.client = c
	w.s.mu.Unlock()
	w.watchKernel(c)
	w.startSide(c)
	w.setState(StateIdle, "")
	w.s.cfg.Observer.KernelRestarted()
	w.s.s.persist() // a new kernel, a new key: the store must know it
	return nil
}

// reconnect restarts the sandbox's kernel and dials it. A panic in the
// dial (a hostile handshake) is an error.
func (w *worker) reconnect(ctx context.Context) (c KernelConn, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("dial panicked: %v", r)
		}
	}()
	if err := w.s.sandbox.Restart(ctx); err != nil {
		return nil, err
	}
	return w.s.cfg.Dial(ctx, w.s.sandbox.Connection(), w.s.cfg.Kernel, w.s.log)
}

// setState sets the session's state and publishes a kernel event when it
// changed.
func (w *worker) setState(st State, reason string) {
	w.s.mu.Lock()
	changed := w.s.state != st
	w.s.state = st
	w.s.mu.Unlock()
	if changed {
		w.s.publish(Event{Type: EventKernel, State: string(st), Reason: reason})
	}
}
