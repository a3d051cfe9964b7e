package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Limits of a session's commands.
const (
	// MaxRunningCommands is how many commands of one session run at once.
	MaxRunningCommands = 16
	// KeptCommands is how many finished commands a session keeps (with
	// their output) for List and Get; older ones are forgotten.
	KeptCommands = 64
	// MaxTerminals is how many terminals of one session are open at once.
	MaxTerminals = 4
	// MaxCommandBytes bounds a command's text.
	MaxCommandBytes = sandbox.MaxCommandBytes
)

// Errors of commands.
var (
	// ErrCommandNotFound: no command of that pid in the session (or it
	// finished so long ago it was forgotten).
	ErrCommandNotFound = errors.New("sessions: command not found")
	// ErrTooManyCommands: MaxRunningCommands (or MaxTerminals) run.
	ErrTooManyCommands = errors.New("sessions: too many commands running in this session")
	// ErrCommandEnded: stdin for a command that has ended.
	ErrCommandEnded = errors.New("sessions: the command has ended")
	// ErrStdinBusy: a write to the command's stdin is still waiting for
	// the command to read; one at a time may wait.
	ErrStdinBusy = errors.New("sessions: a write to this command's stdin is still waiting for the command to read")
	// ErrNoCommands: the session's runtime cannot run commands.
	ErrNoCommands = sandbox.ErrNoCommands
)

// CommandRequest is a shell command to run in a session's sandbox, as
// `bash -lc Cmd`.
type CommandRequest struct {
	Cmd string
	Cwd string            // a workspace path (sandbox.SandboxPath); "": the workspace
	Env map[string]string // added to the session's environment (CheckEnv)
	// Timeout kills the command's process group once it has run this
	// long. 0: Config.ExecTimeout for a foreground command, none for a
	// background one. At most Config.MaxExecTimeout in the foreground.
	Timeout    time.Duration
	Background bool
	// Stdin is written to the command's stdin first; a foreground
	// command's stdin is then closed, a background one's stays open
	// (Commands.Stdin).
	Stdin string
	// Login runs a login shell, which reads the workspace's start-up
	// files (sandbox.CommandSpec.Login).
	Login bool
	// PTY runs the command on a pseudo-terminal of this size (E2B's
	// pty): its output is one stream (stdout), its stdin the terminal's
	// keys, Resize changes its size; an empty Cmd is an interactive bash.
	PTY *TerminalSize
}

// TerminalSize is a pseudo-terminal's size, each within
// 1..sandbox.MaxTerminalSize (0: 80 × 24).
type TerminalSize struct {
	Cols, Rows int
}

// CommandInfo describes one command of a session.
type CommandInfo struct {
	PID        int       `json:"pid"`
	Cmd        string    `json:"cmd"`
	Cwd        string    `json:"cwd"`
	Running    bool      `json:"running"`
	ExitCode   *int      `json:"exit_code,omitempty"` // once ended: bash's status, 128+n for signal n, -1 when killed before it had one
	StartedAt  time.Time `json:"started_at"`
	DurationMS *int64    `json:"duration_ms,omitempty"` // once ended
	TimedOut   bool      `json:"timed_out,omitempty"`
	PTY        bool      `json:"pty,omitempty"` // it runs on a pseudo-terminal (CommandRequest.PTY)
}

// CommandStatus is a command with its output so far (stdout and stderr
// together at most Config.MaxStreamBytes; Truncated once some was not
// kept).
type CommandStatus struct {
	CommandInfo
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

// Commands are the shell commands of one session (its first context's),
// run in its sandbox beside its kernels (sandbox.CommandRunner). Each
// command has a pid, its process id in the sandbox where the sandbox's
// processes share one pid namespace (else OwnPIDBase and up), one goroutine that
// reads its output (publishing EventCommand events under the same caps
// as an execution's output) until it ends, and holds the sandbox awake
// (no pause) and the session alive (no idle expiry) while it runs.
// Terminals are commands on a PTY whose output goes to their one reader,
// not to the event log. Its methods are safe for concurrent use; close
// kills every command and terminal and waits for their goroutines.
//
// Lock order: a Session's mu, then Commands.mu, then hub.mu.
type Commands struct {
	s *Session

	mu        sync.Mutex
	closed    bool
	next      int
	running   int
	terminals map[*Terminal]struct{}
	relays    map[*PortConn]struct{} // open connections to the sandbox's ports
	byPID     map[int]*command
	finished  []int // pids of ended commands, oldest first
	wg        sync.WaitGroup
	// probes holds a place for each short command the gateway runs in
	// the sandbox for itself (Ports, ReadSandboxFile, StatSandboxFile):
	// at most maxProbes at once, the rest wait.
	probes chan struct{}
}

func newCommands(s *Session) *Commands {
	return &Commands{s: s, byPID: map[int]*command{}, terminals: map[*Terminal]struct{}{}, relays: map[*PortConn]struct{}{},
		probes: make(chan struct{}, maxProbes)}
}

// command is one command: what its goroutine records, under
// Commands.mu.
type command struct {
	pid     int
	req     CommandRequest
	cwd     string
	started time.Time
	c       sandbox.Command
	done    chan struct{} // closed once ended and recorded

	events, streamBytes int
	out                 *keptOutput // what Get shows, charged to the session's Account
	truncated           bool
	running             bool
	exit                int
	duration            time.Duration
	timedOut            bool
	stdinDone           chan struct{} // closed once the initial stdin is written (or failed)
	// stdinSlot is held by the one stdin write that may wait for the
	// command to read (Stdin): a command that reads nothing holds one
	// goroutine and one request's data, however many requests come.
	stdinSlot chan struct{}
	// resizeSlot is held by the one resize in flight (Resize).
	resizeSlot chan struct{}
}

// runner validates spec (see sandbox.CommandSpec.Validate) and returns
// it with the sandbox's CommandRunner.
func (m *Commands) runner(spec sandbox.CommandSpec) (sandbox.CommandRunner, sandbox.CommandSpec, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, spec, err
	}
	cr, ok := m.s.sandbox.(sandbox.CommandRunner)
	if !ok {
		return nil, spec, fmt.Errorf("%w (runtime %s)", ErrNoCommands, m.s.runtime)
	}
	return cr, spec, nil
}

// launch starts spec on cr once the session is not paused. It holds a
// use of the pause gate for the command: the caller calls release once
// the command has ended (launch has released it if it fails). op names
// the operation in the error.
func (m *Commands) launch(ctx context.Context, cr sandbox.CommandRunner, spec sandbox.CommandSpec, op string) (sandbox.Command, func(), error) {
	m.s.Touch()
	release, err := m.s.pause.use(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("sessions: %s: %w", op, err)
	}
	c, err := cr.StartCommand(ctx, spec)
	if err != nil {
		release()
		if errors.Is(err, sandbox.ErrClosed) { // the session is closing under the request
			return nil, nil, fmt.Errorf("sessions: %s: %w: %w", op, ErrClosed, err)
		}
		return nil, nil, fmt.Errorf("sessions: %s: %w", op, err)
	}
	return c, release, nil
}

// Start starts a command and returns its pid at once; its output goes to
// the session's events and is kept for Get.
func (m *Commands) Start(ctx context.Context, req CommandRequest) (int, error) {
	cmd, err := m.start(ctx, req)
	if err != nil {
		return 0, err
	}
	return cmd.pid, nil
}

// Run runs a command in the foreground: it returns once the command has
// ended (killed at its timeout: TimedOut, ExitCode -1). If ctx ends
// first the command is killed, and Run returns ctx's error.
func (m *Commands) Run(ctx context.Context, req CommandRequest) (*CommandStatus, error) {
	req.Background = false
	cmd, err := m.start(ctx, req)
	if err != nil {
		return nil, err
	}
	select {
	case <-cmd.done:
	case <-ctx.Done():
		_ = cmd.c.Kill()
		<-cmd.done
		return nil, fmt.Errorf("sessions: run command: %w", ctx.Err())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := cmd.statusLocked()
	return &st, nil
}

func (m *Commands) start(ctx context.Context, req CommandRequest) (*command, error) {
	cfg := &m.s.cfg
	switch {
	case req.Timeout < 0:
		return nil, invalid("timeout must be positive")
	case !req.Background && req.Timeout > cfg.MaxExecTimeout:
		return nil, invalid("timeout must be at most %v in the foreground (run it in the background)", cfg.MaxExecTimeout)
	case req.Timeout == 0 && !req.Background:
		req.Timeout = cfg.ExecTimeout
	}
	spec := sandbox.CommandSpec{Cmd: req.Cmd, Cwd: req.Cwd, Env: req.Env, Login: req.Login}
	if req.PTY != nil {
		spec.TTY, spec.Cols, spec.Rows = true, req.PTY.Cols, req.PTY.Rows
	} else if req.Cmd == "" {
		return nil, invalid("the command is empty")
	}
	cr, spec, err := m.runner(spec)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case m.running >= MaxRunningCommands:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w (at most %d)", ErrTooManyCommands, MaxRunningCommands)
	}
	m.running++
	m.wg.Add(1)
	m.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			m.mu.Lock()
			m.running--
			m.mu.Unlock()
			m.wg.Done()
		}
	}()
	c, release, err := m.launch(ctx, cr, spec, "start command")
	if err != nil {
		return nil, err
	}
	ok = true
	// A kept command keeps what List and Get show and follow needs: not
	// its stdin or env (megabytes each), which only the start uses.
	kept := CommandRequest{Cmd: req.Cmd, Timeout: req.Timeout, Background: req.Background, Login: req.Login, PTY: req.PTY}
	cmd := &command{req: kept, cwd: spec.Cwd, started: time.Now(), c: c, done: make(chan struct{}), running: true, out: m.s.budget.newKept(),
		stdinDone: make(chan struct{}), stdinSlot: make(chan struct{}, 1), resizeSlot: make(chan struct{}, 1)}
	pidCtx, cancel := context.WithTimeout(ctx, pidWait)
	told := c.PID(pidCtx) // the launcher tells it as it starts the command
	cancel()
	m.mu.Lock()
	m.assignPID(cmd, told)
	closed := m.closed
	m.mu.Unlock()
	if closed { // close began meanwhile: it may not have seen this one
		_ = c.Kill()
	}
	m.s.hub.publish(Event{Type: EventCommand, PID: ptr(cmd.pid), State: "started", Text: truncateUTF8(req.Cmd, 4096)})
	m.wg.Add(1)
	go func() { // owned by m: close waits for it; ends when the command's stdin is written or the command ends
		defer m.wg.Done()
		defer close(cmd.stdinDone)
		if req.Stdin != "" {
			if err := c.Write([]byte(req.Stdin)); err != nil {
				return
			}
		}
		if !req.Background {
			_ = c.CloseStdin()
		}
	}()
	go func() { // owned by m: close waits for it; ends when the command does
		defer m.wg.Done()
		defer release()
		m.follow(cmd)
	}()
	return cmd, nil
}

// follow reads cmd's output until it ends (killing it at its timeout),
// then records its end.
func (m *Commands) follow(cmd *command) {
	var timeout <-chan time.Time
	if cmd.req.Timeout > 0 {
		t := time.NewTimer(cmd.req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var carry [3][]byte // a rune cut between two chunks, by stream
	for {
		select {
		case o, ok := <-cmd.c.Output():
			if !ok {
				for st, rest := range carry {
					if len(rest) > 0 {
						m.take(cmd, sandbox.Stream(st), rest)
					}
				}
				m.end(cmd)
				return
			}
			st := o.Stream
			if st != sandbox.Stderr {
				st = sandbox.Stdout
			}
			data := append(carry[st], o.Data...)
			data, carry[st] = splitUTF8(data)
			if len(data) > 0 {
				m.take(cmd, st, data)
			}
		case <-timeout:
			timeout = nil
			m.mu.Lock()
			cmd.timedOut = true
			m.mu.Unlock()
			_ = cmd.c.Kill()
		}
	}
}

// splitUTF8 holds back a rune cut at the end of b.
func splitUTF8(b []byte) (whole, rest []byte) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i], append([]byte(nil), b[i:]...)
			}
			break
		}
	}
	return b, nil
}

// take counts a chunk of output against the command's caps (those of an
// execution: Config.MaxEvents, Config.MaxStreamBytes), publishes what
// fits and keeps it for Get, charged to the session's Account (kept
// output: the first to be evicted when live output needs room).
func (m *Commands) take(cmd *command, st sandbox.Stream, data []byte) {
	cfg := &m.s.cfg
	m.mu.Lock()
	cmd.events++
	room := cfg.MaxStreamBytes - cmd.streamBytes
	if cmd.events > cfg.MaxEvents || room <= 0 {
		cmd.truncated = true
		m.mu.Unlock()
		return
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	if len(text) > room {
		text = truncateUTF8(text, room)
		cmd.truncated = true
	}
	cmd.streamBytes += len(text)
	if !m.s.budget.keep(cmd.out, st, text) {
		cmd.truncated = true
	}
	m.mu.Unlock()
	if text != "" {
		m.s.hub.publish(Event{Type: EventCommand, PID: ptr(cmd.pid), Name: st.String(), Text: text})
	}
}

// OwnPIDBase is the first of the pids a session numbers itself, for
// commands whose process id the sandbox's other processes do not see (on
// the local runtime each command has a pid namespace of its own): above
// any pid_max, so that `kill -0 PID` in another command never finds an
// unrelated process.
const OwnPIDBase = 1 << 22

// pidWait bounds the wait for the launcher to tell a command's pid.
const pidWait = 10 * time.Second

// assignPID gives cmd its pid: told, the command's process id in the
// sandbox, unless it is unknown (0) or still names a running command (a
// reused pid whose end has not been recorded yet); then the session's
// own next number from OwnPIDBase. A finished command that had the same
// pid is forgotten. Called with m.mu held.
func (m *Commands) assignPID(cmd *command, told int) {
	if old, taken := m.byPID[told]; told <= 0 || told >= OwnPIDBase || taken && old.running {
		m.next++
		cmd.pid = OwnPIDBase + m.next
	} else {
		if taken {
			m.finished = slices.DeleteFunc(m.finished, func(p int) bool { return p == told })
			m.s.budget.drop(old.out)
		}
		cmd.pid = told
	}
	m.byPID[cmd.pid] = cmd
}

// end records how cmd ended, publishes it and forgets the oldest finished
// command beyond KeptCommands.
func (m *Commands) end(cmd *command) {
	exit := cmd.c.Exit()
	m.mu.Lock()
	cmd.running = false
	cmd.exit = exit.Code
	if cmd.timedOut {
		cmd.exit = -1
	}
	cmd.duration = time.Since(cmd.started)
	m.running--
	m.finished = append(m.finished, cmd.pid)
	for len(m.finished) > KeptCommands {
		old := m.byPID[m.finished[0]]
		m.finished = m.finished[1:]
		delete(m.byPID, old.pid)
		m.s.budget.drop(old.out)
	}
	ev := Event{Type: EventCommand, PID: ptr(cmd.pid), State: "exited", ExitCode: ptr(cmd.exit),
		DurationMS: ptr(cmd.duration.Milliseconds())}
	if cmd.timedOut {
		ev.TimedOut = ptr(true)
	}
	if exit.Reason != "" && !cmd.timedOut {
		ev.Reason = exit.Reason
	}
	m.mu.Unlock()
	m.s.hub.publish(ev)
	m.s.Touch()
	close(cmd.done)
}

func (cmd *command) infoLocked() CommandInfo {
	in := CommandInfo{PID: cmd.pid, Cmd: cmd.req.Cmd, Cwd: cmd.cwd, Running: cmd.running, StartedAt: cmd.started, TimedOut: cmd.timedOut, PTY: cmd.req.PTY != nil}
	if !cmd.running {
		in.ExitCode = ptr(cmd.exit)
		in.DurationMS = ptr(cmd.duration.Milliseconds())
	}
	return in
}

func (cmd *command) statusLocked() CommandStatus {
	stdout, stderr, evicted := cmd.out.text()
	return CommandStatus{CommandInfo: cmd.infoLocked(), Stdout: stdout, Stderr: stderr, Truncated: cmd.truncated || evicted}
}

// List describes the running commands and the last KeptCommands
// finished ones, by pid.
func (m *Commands) List() []CommandInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]CommandInfo, 0, len(m.byPID))
	for _, cmd := range m.byPID {
		out = append(out, cmd.infoLocked())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Get returns command pid with its output so far.
func (m *Commands) Get(pid int) (*CommandStatus, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd, ok := m.byPID[pid]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrCommandNotFound, pid)
	}
	st := cmd.statusLocked()
	return &st, nil
}

func (m *Commands) lookup(pid int) (*command, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd, ok := m.byPID[pid]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrCommandNotFound, pid)
	}
	return cmd, nil
}

// running reports whether a command or terminal runs (the session is
// not idle then).
func (m *Commands) busy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running > 0 || len(m.terminals) > 0
}

// close kills every command and terminal, refuses new ones and waits for
// their goroutines.
func (m *Commands) close() {
	m.mu.Lock()
	m.closed = true
	var kill []sandbox.Command
	for _, cmd := range m.byPID {
		if cmd.running {
			kill = append(kill, cmd.c)
		}
	}
	for t := range m.terminals {
		// A terminal still starting holds its place with no shell yet
		// (t.c nil): Terminal kills the shell it gets once it sees closed.
		if t.c != nil {
			kill = append(kill, t.c)
		}
	}
	for p := range m.relays { // as terminals: one still starting has no relay yet
		if p.c != nil {
			kill = append(kill, p.c)
		}
	}
	m.mu.Unlock()
	for _, c := range kill {
		_ = c.Kill()
	}
	m.wg.Wait()
	m.mu.Lock()
	for _, cmd := range m.byPID {
		m.s.budget.drop(cmd.out)
	}
	m.mu.Unlock()
}
