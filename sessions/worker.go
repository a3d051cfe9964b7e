package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// The worker goroutine owns the session's kernel: it runs queued jobs one
// at a time and performs every restart, so kernel lifecycle transitions
// never race. Every function in this file runs on it.

// worker loops until the session closes.
func (s *Session) worker() {
	defer s.wg.Done()
	defer func() {
		// A bug must cost this session, never the gateway.
		if r := recover(); r != nil {
			s.log.Error().Interface("panic", r).Msg("session worker panicked; session is dead")
			s.setState(StateDead, "internal error")
			s.drain()
		}
	}()
	for {
		c := s.kernelClient()
		select {
		case <-s.ctx.Done():
			s.drain()
			return
		case j := <-s.queue:
			s.took()
			s.runAwake(j)
		case done := <-s.restart:
			done <- s.restartKernel("restart requested")
		case <-c.Done():
			if s.Info().State == StateDead {
				s.waitWhileDead() // restarting failed before
				continue
			}
			s.recoverKernel(c)
		}
	}
}

// runAwake runs j with the kernel thawed (and kept awake meanwhile).
func (s *Session) runAwake(j *job) {
	release, err := s.pause.use(s.ctx)
	if err != nil {
		s.fail(j, StatusDied, "the paused kernel could not be resumed: "+err.Error())
		return
	}
	defer release()
	s.run(j)
}

// took records that the worker took a job off the queue, waking
// SubmitWait callers.
func (s *Session) took() {
	s.queued.Add(-1)
	s.mu.Lock()
	close(s.room)
	s.room = make(chan struct{})
	s.mu.Unlock()
}

// waitWhileDead handles one request while the kernel is dead and could not
// be restarted (its container engine was down, say): a restart request
// tries again, and so does a job, which runs on the new kernel if that
// works and fails with the reason if not.
func (s *Session) waitWhileDead() {
	select {
	case <-s.ctx.Done():
	case done := <-s.restart:
		done <- s.restartKernel("restart requested")
	case j := <-s.queue:
		s.took()
		if err := s.restartKernel("the kernel was dead: started again for a new execution, variables lost"); err != nil {
			s.fail(j, StatusDied, "kernel is dead: "+err.Error())
			return
		}
		s.runAwake(j)
	}
}

// drain fails every queued job when the session closes. Taking s.mu
// orders it with enqueue, which checks the context under it.
func (s *Session) drain() {
	reason := s.reason()
	s.mu.Lock()
	var jobs []*job
	for done := false; !done; {
		select {
		case j := <-s.queue:
			jobs = append(jobs, j)
		default:
			done = true
		}
	}
	s.mu.Unlock()
	for _, j := range jobs {
		s.queued.Add(-1)
		s.fail(j, StatusDied, reason)
	}
}

func (s *Session) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeReason != "" {
		return s.closeReason
	}
	return "session closed"
}

// watchKernel starts the goroutine that declares c dead when the sandbox's
// kernel process exits. It is stopped by the next watchKernel or by close.
func (s *Session) watchKernel(c KernelConn) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.stopWatch = cancel
	exited := s.sandbox.Exited()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-exited:
			c.Abort(&ExitError{Reason: s.sandbox.ExitReason()})
		case <-ctx.Done():
		}
	}()
}

// recoverKernel restarts a kernel that died on its own.
func (s *Session) recoverKernel(c KernelConn) {
	reason := s.exitReason(c.Err())
	s.cfg.Observer.KernelDied(strings.Contains(reason, "OOMKilled"))
	s.log.Info().Str("reason", reason).Msg("kernel died; restarting")
	s.setState(StateDead, reason)
	_ = s.restartKernel("kernel died: " + reason)
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
func (s *Session) restartKernel(reason string) error {
	if release, err := s.pause.use(s.ctx); err == nil { // never frozen while it starts
		defer release()
	}
	s.setState(StateRestarting, reason)
	old := s.kernelClient()
	s.stopWatch()
	old.Abort(errRestarting)
	_ = old.Close()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.StartTimeout)
	defer cancel()
	c, err := s.reconnect(ctx)
	if err != nil {
		s.log.Warn().Err(err).Msg("kernel restart failed")
		s.mu.Lock()
		s.client = old // dead; calls fail with ErrDead
		s.mu.Unlock()
		s.watchKernel(old)
		s.setState(StateDead, "restart failed: "+err.Error())
		return fmt.Errorf("%w: restart: %w", ErrKernelDead, err)
	}
	s.mu.Lock()
	s.client = c
	s.mu.Unlock()
	s.watchKernel(c)
	s.setState(StateIdle, "")
	s.cfg.Observer.KernelRestarted()
	s.persist() // a new kernel, a new key: the store must know it
	return nil
}

// reconnect restarts the sandbox's kernel and dials it. A panic in the
// dial (a hostile handshake) is an error.
func (s *Session) reconnect(ctx context.Context) (c KernelConn, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("dial panicked: %v", r)
		}
	}()
	if err := s.sandbox.Restart(ctx); err != nil {
		return nil, err
	}
	return s.cfg.Dial(ctx, s.sandbox.Connection(), s.cfg.Kernel, s.log)
}

// close stops the worker, kills the kernel and ends all subscriptions.
func (s *Session) close(ctx context.Context, reason string) {
	s.mu.Lock()
	if s.closeReason == "" {
		s.closeReason = reason
	}
	s.mu.Unlock()
	s.cancel()
	// Kill the kernel first: nothing the code does can then keep the
	// worker busy while we wait for it.
	if err := s.sandbox.Close(ctx); err != nil {
		s.log.Warn().Err(err).Msg("sandbox close failed")
	}
	if s.egress != nil { // nothing can use it once the sandbox is gone
		if err := s.egress.Close(); err != nil {
			s.log.Warn().Err(err).Msg("egress proxy close failed")
		}
	}
	s.wg.Wait()
	s.drain() // jobs queued while the worker was stopping
	_ = s.kernelClient().Close()
	if s.watch != nil {
		_ = s.watch.Close()
	}
	_ = s.files.Close()
	s.mu.Lock()
	s.state = StateDead
	s.mu.Unlock()
	s.hub.publish(Event{Type: EventKernel, State: string(StateDead), Reason: reason})
	s.hub.close()
}
