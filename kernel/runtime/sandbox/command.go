package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoCommands is returned (wrapped) by a runtime whose sandboxes cannot
// run commands (StartCommand of a sandbox that is no CommandRunner is the
// caller's to refuse with it).
var ErrNoCommands = errors.New("sandbox: this runtime cannot run commands in a sandbox")

// ErrCommandDone is returned by a Command's Write, CloseStdin and Resize
// once the command has ended.
var ErrCommandDone = errors.New("sandbox: the command has ended")

// Limits of a command.
const (
	// MaxCommandBytes bounds CommandSpec.Cmd.
	MaxCommandBytes = 64 << 10
	// MaxTerminalSize bounds a terminal's columns and rows.
	MaxTerminalSize = 1000
	// maxFrame bounds one frame the launcher sends (it sends at most 64
	// KiB of output at once).
	maxFrame = 1 << 20
)

// CommandSpec describes a shell command to run in a running sandbox.
type CommandSpec struct {
	// Cmd is run as `bash -c Cmd`, without start-up files (code in the
	// sandbox can write the workspace's ~/.bash_profile, and a command's
	// own Env must not reach it). With TTY, "" is an interactive shell.
	Cmd string
	// Login runs a login shell instead (`bash -lc Cmd`, `bash -l`), which
	// reads /etc/profile and the workspace's ~/.bash_profile or ~/.profile:
	// only when the client asks for it.
	Login bool
	// Cwd is the command's working directory: "" is WorkDir; a path in
	// the workspace is made canonical (SandboxPath); any other absolute
	// path is a directory of the sandbox's own file system (code in it
	// can cd anywhere it can read): the runtime starts the launcher in
	// StartDir, and the launcher changes to Cwd, failing the command
	// (exit 1, why on stderr) when it cannot.
	Cwd string
	// Env is added to the sandbox's environment (the kernels'); see
	// CheckEnv.
	Env map[string]string
	// TTY runs the command on a pseudo-terminal of Cols × Rows (80 × 24
	// when 0), with TERM=xterm-256color; its output is one stream.
	TTY        bool
	Cols, Rows int
	// Relay, when not 0, runs no shell: the launcher connects to that TCP
	// port on the sandbox's own loopback and relays the connection's
	// bytes as the command's stdin and stdout (a preview's connection;
	// launcher.py's run_relay). Its first output is on Stderr:
	// RelayConnected, or why nothing answered; Cmd and TTY must be unset.
	Relay int
}

// RelayConnected is a relay's first output (on Stderr) once it has
// connected to its port.
const RelayConnected = "connected"

// Validate checks the spec (Cmd's size and NUL bytes, Cwd, Env, the
// terminal's size) and returns it with Cwd canonical and the terminal's
// size defaulted. Its errors are *SpecError.
func (c CommandSpec) Validate() (CommandSpec, error) {
	switch {
	case c.Relay != 0 && (c.Relay < 1 || c.Relay > 65535):
		return c, badSpec("port %d out of 1..65535", c.Relay)
	case c.Relay != 0 && (c.Cmd != "" || c.TTY || c.Login):
		return c, badSpec("a relay runs no command")
	case c.Relay != 0:
	case c.Cmd == "" && !c.TTY:
		return c, badSpec("the command is empty")
	case len(c.Cmd) > MaxCommandBytes:
		return c, badSpec("the command is over %d bytes", MaxCommandBytes)
	}
	for i := 0; i < len(c.Cmd); i++ {
		if c.Cmd[i] == 0 {
			return c, badSpec("the command has a NUL byte")
		}
	}
	cwd, err := SandboxPath(c.Cwd)
	switch {
	case err == nil:
		c.Cwd = cwd
	case path.IsAbs(c.Cwd) && !strings.ContainsRune(c.Cwd, 0) && len(c.Cwd) <= maxCwdBytes:
		c.Cwd = path.Clean(c.Cwd)
	case len(c.Cwd) > maxCwdBytes:
		return c, badSpec("cwd is over %d bytes", maxCwdBytes)
	default:
		return c, err
	}
	if err := CheckEnv(c.Env); err != nil {
		return c, err
	}
	if c.TTY {
		if c.Cols == 0 {
			c.Cols = 80
		}
		if c.Rows == 0 {
			c.Rows = 24
		}
		if c.Cols < 1 || c.Rows < 1 || c.Cols > MaxTerminalSize || c.Rows > MaxTerminalSize {
			return c, badSpec("terminal size %d×%d out of 1..%d", c.Cols, c.Rows, MaxTerminalSize)
		}
	}
	return c, nil
}

// maxCwdBytes bounds a command's Cwd outside the workspace (PATH_MAX).
const maxCwdBytes = 4096

// StartDir is where the runtime starts the launcher of c (validated):
// Cwd when it is in the workspace, else WorkDir (the launcher changes to
// Cwd itself; see CommandArgv).
func (c CommandSpec) StartDir() string {
	if c.inWorkspace() {
		return c.Cwd
	}
	return WorkDir
}

func (c CommandSpec) inWorkspace() bool {
	return c.Cwd == WorkDir || strings.HasPrefix(c.Cwd, WorkDir+"/")
}

// LauncherOptions are what a runtime (not the client) sets for the
// launcher's command mode.
type LauncherOptions struct {
	// MemoryGuard has the launcher kill the command when the sandbox's
	// memory is nearly spent (launcher.py, --memory-guard): for sandboxes
	// whose /proc/meminfo is their own (gVisor), where the host's OOM
	// killer would end the whole sandbox, kernels included, instead of
	// the command.
	MemoryGuard bool
}

// CommandArgv is the launcher's command line (inside the sandbox, with
// python the interpreter's absolute path) that runs spec, a validated
// CommandSpec: see launcher.py's run_command.
func CommandArgv(python string, spec CommandSpec, opts LauncherOptions) []string {
	if spec.Relay != 0 {
		return []string{python, "-I", "-B", "-c", launcherCode(), "--relay", strconv.Itoa(spec.Relay)}
	}
	argv := []string{python, "-I", "-B", "-c", launcherCode(), "--command"}
	if opts.MemoryGuard {
		argv = append(argv, "--memory-guard")
	}
	if spec.Login {
		argv = append(argv, "--login")
	}
	if spec.Cwd != "" && !spec.inWorkspace() {
		argv = append(argv, "--cwd", spec.Cwd)
	}
	if spec.TTY {
		return append(argv, "tty", strconv.Itoa(spec.Cols), strconv.Itoa(spec.Rows), spec.Cmd)
	}
	return append(argv, "pipe", spec.Cmd)
}

// CommandRunner is implemented by sandboxes that run shell commands beside
// their kernels: the same uid, workspace, environment, network policy and
// resource limits (the command counts against the sandbox's memory, CPU
// and pids), with oom_score_adj 1000 (a kernel's is 500), so that the OOM
// killer takes a command before a kernel.
type CommandRunner interface {
	// StartCommand starts spec (checked with CommandSpec.Validate by the
	// runtime) and returns once it runs. The caller must read its Output
	// until that is closed (the command waits while it is not read) and
	// may Kill it; closing the sandbox kills it. Safe for concurrent use;
	// it fails with ErrClosed once the sandbox is closed, with
	// ErrUnavailable while the sandbox cannot run one (a container that
	// does not run), and with a *SpecError for a bad spec.
	StartCommand(ctx context.Context, spec CommandSpec) (Command, error)
}

// Stream names an output stream of a command.
type Stream int

// The streams of a command. A terminal's output is Stdout.
const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// CommandOutput is one chunk of a command's output (at most 64 KiB).
type CommandOutput struct {
	Stream Stream
	Data   []byte
}

// CommandExit is how a command ended.
type CommandExit struct {
	// Code is bash's exit status (128+n when it died of signal n), or -1
	// when the command was killed before it could report one (Reason).
	Code int
	// Reason says why Code is -1; "" otherwise.
	Reason string
}

// Command is one running command (CommandRunner). Its methods are safe for
// concurrent use.
type Command interface {
	// Output delivers the command's output in order; it is closed once
	// the command has ended and its output has been read (Exit is known
	// then). The command blocks while its output is not read.
	Output() <-chan CommandOutput
	// Write sends p to the command's stdin (a terminal's input). It may
	// block while the command reads none (up to 1 MiB waits in the
	// sandbox).
	Write(p []byte) error
	// CloseStdin ends the command's stdin (^D on a terminal).
	CloseStdin() error
	// Resize changes a terminal's size (cols, rows within
	// 1..MaxTerminalSize); nothing without a terminal.
	Resize(cols, rows int) error
	// Kill kills the command's process group (on a terminal, every
	// process of its session), never the sandbox's kernels. It does not
	// wait: Output is closed once they are gone.
	Kill() error
	// Exit is how the command ended, once Output is closed.
	Exit() CommandExit
	// PID is the command's process id as the sandbox's other processes
	// see it (`kill -0 PID` in another command finds it while it runs):
	// it blocks until the launcher has told it, the command has ended, or
	// ctx ends. It is 0 when not known then, or when the command's pid
	// namespace is its own (CommandTransport.OwnPIDNamespace).
	PID(ctx context.Context) int
}

// CommandTransport is the runtime's side of a started launcher (see
// CommandArgv): its stdin and stdout, carrying frames, and how to end it.
type CommandTransport struct {
	// In is the launcher's stdin. Its Close, at the end, must kill the
	// launcher's command (the launcher does on its stdin's EOF).
	In io.WriteCloser
	// Out is the launcher's stdout.
	Out io.Reader
	// Kill kills the command (the launcher, and its process group, whose
	// id inside the sandbox is pgid, or 0 while the launcher has not told
	// it) without waiting. It must not block for long.
	Kill func(pgid int)
	// Wait is called once Out has ended (or the exit frame was read): it
	// waits for the launcher to be gone and releases what it held; its
	// string, when the command had reported no exit, says why.
	Wait func() string
	// Abandon (optional) closes Out, so that a read blocked on it returns:
	// it is called when the command was killed and Out has still not
	// ended AbandonAfter later (a process that outlived the kill holds it
	// open), so that a killed command always ends and its sandbox's Close
	// never waits for it. Wait must then not wait for Out's writers either.
	Abandon func()
	// AbandonAfter is how long after a kill Abandon waits (default
	// DefaultAbandonAfter).
	AbandonAfter time.Duration
	// OwnPIDNamespace says the command runs in a pid namespace of its own
	// (the local runtime's), so that its pid means nothing to the
	// sandbox's other processes: PID is 0.
	OwnPIDNamespace bool
}

// DefaultAbandonAfter is how long a killed command's output may go on
// before its reading is abandoned (CommandTransport.Abandon).
const DefaultAbandonAfter = 5 * time.Second

// NewCommand supervises a launcher through t: one goroutine, which the
// Command owns, reads its frames until the exit frame or the end of Out,
// then calls t.Wait and closes Output.
func NewCommand(t CommandTransport) Command {
	c := &framed{t: t, out: make(chan CommandOutput), done: make(chan struct{}), told: make(chan struct{})}
	go c.read() // owned by c: ends with the launcher's output; Output's close says it has
	return c
}

// framed is a Command over a launcher's frames.
type framed struct {
	t    CommandTransport
	out  chan CommandOutput
	done chan struct{}
	told chan struct{} // closed once pgid is known or the command has ended
	tell sync.Once

	wmu sync.Mutex // one frame at a time to the launcher

	mu      sync.Mutex
	pgid    int
	killed  bool
	exit    CommandExit
	ended   bool
	abandon *time.Timer // armed by the first Kill when the transport can abandon
}

func (c *framed) Output() <-chan CommandOutput { return c.out }

func (c *framed) PID(ctx context.Context) int {
	if c.t.OwnPIDNamespace {
		return 0 // at once: nothing to wait for
	}
	select {
	case <-c.told:
	case <-ctx.Done():
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pgid
}

func (c *framed) Exit() CommandExit {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

func (c *framed) send(kind byte, body []byte) error {
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if ended {
		return ErrCommandDone
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(body)))
	if _, err := c.t.In.Write(append(h[:], body...)); err != nil {
		return fmt.Errorf("%w: %w", ErrCommandDone, err)
	}
	return nil
}

func (c *framed) Write(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), 64<<10)
		if err := c.send('i', p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func (c *framed) CloseStdin() error { return c.send('e', nil) }

func (c *framed) Resize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > MaxTerminalSize || rows > MaxTerminalSize {
		return badSpec("terminal size %d×%d out of 1..%d", cols, rows, MaxTerminalSize)
	}
	var b [4]byte
	binary.BigEndian.PutUint16(b[:2], uint16(cols))
	binary.BigEndian.PutUint16(b[2:], uint16(rows))
	return c.send('r', b[:])
}

func (c *framed) Kill() error {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return nil
	}
	c.killed = true
	pgid := c.pgid
	if c.abandon == nil && c.t.Abandon != nil {
		after := c.t.AbandonAfter
		if after <= 0 {
			after = DefaultAbandonAfter
		}
		c.abandon = time.AfterFunc(after, c.abandonOutput)
	}
	c.mu.Unlock()
	c.t.Kill(pgid)
	return nil
}

// abandonOutput gives up reading a killed command's output that has not
// ended: read's blocked read returns, and the command ends.
func (c *framed) abandonOutput() {
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if !ended {
		c.t.Abandon()
	}
}

// read owns the launcher's output: frames to Output, then the end.
func (c *framed) read() {
	r := bufio.NewReaderSize(c.t.Out, 64<<10)
	exit := CommandExit{Code: -1}
	reported := false
	for !reported {
		var h [5]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			break
		}
		n := binary.BigEndian.Uint32(h[1:])
		if n > maxFrame {
			break
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			break
		}
		switch h[0] {
		case 'p':
			if pgid, err := strconv.Atoi(string(body)); err == nil && pgid > 0 {
				c.mu.Lock()
				c.pgid = pgid
				killed := c.killed
				c.mu.Unlock()
				if killed { // Kill came before the launcher said whom to kill
					c.t.Kill(pgid)
				}
				c.tell.Do(func() { close(c.told) })
			}
		case 'o', 'e':
			// The launcher tells the pid before any output: none will come
			// now (a cwd it could not enter). PID must not wait on this
			// send, which waits for a reader that may wait on PID.
			c.tell.Do(func() { close(c.told) })
			s := Stdout
			if h[0] == 'e' {
				s = Stderr
			}
			c.out <- CommandOutput{Stream: s, Data: body}
		case 'x':
			c.tell.Do(func() { close(c.told) })
			if code, err := strconv.Atoi(string(body)); err == nil {
				exit.Code, reported = code, true
			}
		}
	}
	c.tell.Do(func() { close(c.told) })
	c.mu.Lock()
	c.ended = true
	if c.abandon != nil {
		c.abandon.Stop()
	}
	c.mu.Unlock()
	_ = c.t.In.Close() // unblocks a Write the launcher does not read
	why := c.t.Wait()
	if !reported {
		c.mu.Lock()
		killed := c.killed
		c.mu.Unlock()
		switch {
		case killed:
			exit.Reason = "killed"
		case why != "":
			exit.Reason = why
		default:
			exit.Reason = "the command's supervisor ended without its exit status"
		}
	}
	c.mu.Lock()
	c.exit = exit
	c.mu.Unlock()
	close(c.out)
	close(c.done)
}

// CommandSet is the set of one sandbox's running commands, for a runtime
// whose sandboxes run them: the sandbox's Close kills them and waits
// until they are reaped. The zero value is empty and open; its methods
// are safe for concurrent use.
type CommandSet struct {
	mu     sync.Mutex
	closed bool
	live   map[*CommandSlot]struct{}
	wg     sync.WaitGroup // one per slot not yet ended
}

// CommandSlot is one command's place in a CommandSet, from before it
// starts until it is reaped.
type CommandSlot struct {
	set     *CommandSet
	c       Command
	started bool // Started was called; guarded by set.mu
	once    sync.Once
}

// Begin takes a slot for a command about to start; ErrClosed once the set
// is closed. The caller must End it (once the command is reaped, or when
// it did not start: EndUnlessStarted).
func (s *CommandSet) Begin() (*CommandSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.wg.Add(1)
	return &CommandSlot{set: s}, nil
}

// Started records the slot's command; one started while the set closed
// is killed at once.
func (sl *CommandSlot) Started(c Command) {
	s := sl.set
	s.mu.Lock()
	sl.started = true
	closed := s.closed
	if !closed {
		if s.live == nil {
			s.live = map[*CommandSlot]struct{}{}
		}
		sl.c = c
		s.live[sl] = struct{}{}
	}
	s.mu.Unlock()
	if closed {
		_ = c.Kill()
	}
}

// EndUnlessStarted ends the slot unless Started has been called: a
// runtime's StartCommand defers it right after Begin, so that every way
// of failing to start gives the slot back.
func (sl *CommandSlot) EndUnlessStarted() {
	sl.set.mu.Lock()
	started := sl.started
	sl.set.mu.Unlock()
	if !started {
		sl.End()
	}
}

// End gives the slot back (its command is gone). Later calls do nothing.
func (sl *CommandSlot) End() {
	sl.once.Do(func() {
		s := sl.set
		s.mu.Lock()
		delete(s.live, sl)
		s.mu.Unlock()
		s.wg.Done()
	})
}

// Close refuses new commands, kills the running ones and waits (bounded
// by ctx) until every slot has ended.
func (s *CommandSet) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	live := make([]Command, 0, len(s.live))
	for sl := range s.live {
		live = append(live, sl.c)
	}
	s.mu.Unlock()
	for _, c := range live {
		_ = c.Kill()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }() // ends when the commands do; Close waits for it or gives up on ctx
	if ctx.Err() != nil {
		// A sandbox's Close does its work even with a done ctx: the
		// commands were killed; give them a moment to be reaped.
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-done:
			return nil
		case <-t.C:
			return fmt.Errorf("sandbox: waiting for the commands to end: %w", ctx.Err())
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sandbox: waiting for the commands to end: %w", ctx.Err())
	}
}

// closeGrace is how long CommandSet.Close waits for killed commands when
// its ctx is already done.
const closeGrace = 5 * time.Second
