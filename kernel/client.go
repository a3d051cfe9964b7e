package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// Config tunes a Client. The zero value of each field selects its default.
type Config struct {
	// HeartbeatInterval is the time between heartbeat pings while a request
	// is pending (default 1 s); an idle client sends none.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout declares the kernel dead when a ping has had no
	// reply for this long (default 3 s, so a frozen kernel is reported
	// within 4 s of a request).
	HeartbeatTimeout time.Duration
	// ConnectTimeout bounds Dial, including the wait for iopub to carry
	// messages (default 20 s).
	ConnectTimeout time.Duration
	// MaxMessageBytes drops, with a log line, any kernel message larger than
	// this (default and ceiling MaxMessageBytes; each channel has its own,
	// lower ceilings enforced below zmq4, see limitsFor).
	MaxMessageBytes int
	// MessageRate is the sustained number of messages per second read from
	// the kernel; a kernel that sends faster is slowed by backpressure
	// (default 5000, burst of the same size).
	MessageRate int
	// ByteRate is the sustained number of bytes per second read from the
	// kernel's sockets, all together (default 64 MiB), enforced on the
	// byte stream below zmq4: a kernel that sends faster waits in its
	// socket's buffer, and nothing of it is allocated meanwhile.
	ByteRate int
	// EventBuffer and EventBufferBytes bound one request's queue of
	// undelivered events (default 256 events, 8 MiB); a full queue stops
	// the reading of the kernel's socket until the caller catches up.
	EventBuffer      int
	EventBufferBytes int
	// IdleGrace bounds the wait for iopub's idle status once the reply has
	// arrived: iopub is PUB/SUB, which drops messages when the subscriber
	// falls behind, so the idle of a flooding request can be lost
	// (default 2 s without any output of the request).
	IdleGrace time.Duration
	// MaxDrain bounds how long output is still read after the reply
	// (default 10 s): a kernel that keeps sending output for a finished
	// request cannot hold its caller; the rest is reported truncated.
	MaxDrain time.Duration
}

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = time.Second
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = 3 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 20 * time.Second
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = MaxMessageBytes
	}
	if c.MessageRate == 0 {
		c.MessageRate = 5000
	}
	if c.ByteRate == 0 {
		c.ByteRate = 64 << 20
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = 256
	}
	if c.EventBufferBytes == 0 {
		c.EventBufferBytes = 8 << 20
	}
	if c.IdleGrace == 0 {
		c.IdleGrace = 2 * time.Second
	}
	if c.MaxDrain == 0 {
		c.MaxDrain = 10 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.HeartbeatInterval < 0 || c.HeartbeatTimeout <= c.HeartbeatInterval:
		return fmt.Errorf("kernel: config: heartbeat timeout %v must exceed interval %v", c.HeartbeatTimeout, c.HeartbeatInterval)
	case c.MaxMessageBytes < 0 || c.MaxMessageBytes > MaxMessageBytes:
		return fmt.Errorf("kernel: config: max message bytes %d outside 1..%d", c.MaxMessageBytes, MaxMessageBytes)
	case c.MessageRate < 0 || c.ByteRate < 0 || c.EventBuffer < 0 || c.EventBufferBytes < 0 || c.ConnectTimeout < 0 || c.IdleGrace < 0 || c.MaxDrain < 0:
		return errors.New("kernel: config: negative limit")
	}
	return nil
}

// Errors reported by Client calls.
var (
	// ErrDead is wrapped by every error returned after the kernel died or
	// the client was closed.
	ErrDead = errors.New("kernel: dead")
	// ErrClosed is the cause when Close ended the client.
	ErrClosed = errors.New("kernel: client closed")
	// ErrHeartbeat is the cause when the heartbeat stopped answering.
	ErrHeartbeat = errors.New("kernel: heartbeat lost")
)

// DeadError is returned by calls on a dead kernel. Cause says why it died.
type DeadError struct{ Cause error }

func (e *DeadError) Error() string { return "kernel: dead: " + e.Cause.Error() }

// Is makes errors.Is(err, ErrDead) true.
func (e *DeadError) Is(target error) bool { return target == ErrDead }

// Unwrap returns the cause.
func (e *DeadError) Unwrap() error { return e.Cause }

// Client is a connection to one running kernel.
//
// All methods are safe for concurrent use. The kernel itself runs one
// execute at a time; concurrent Execute calls are queued by the kernel in
// the order they were sent. Each zmq socket has one reading goroutine;
// sends are serialised per socket. Close must be called to release the
// sockets and goroutines.
type Client struct {
	cfg     Config
	log     zerolog.Logger
	codec   *Codec
	session string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	shell, control, stdin, iopub, hb zmq4.Socket
	sendMu                           [3]sync.Mutex // shell, control, stdin

	mu       sync.Mutex
	pending  map[string]*call
	inputReq *Message // the outstanding input_request, if any

	deadOnce sync.Once
	dead     chan struct{}
	deadErr  error

	pingOut atomic.Int64  // unix nanos of the unanswered ping, or 0
	wake    chan struct{} // signalled when a request starts (capacity 1)

	firstPing     chan struct{} // closed after the first ping was sent
	firstPingOnce sync.Once
	msgRate       *rate.Limiter
	dials         *dialState
	cuts          atomic.Int64 // messages cut by the transport guard

	lastDropLog  atomic.Int64 // unix nanos of the last "dropped" log line
	droppedSince atomic.Int64 // drops not logged since then
}

type call struct {
	events *eventQueue
	reply  chan reply // capacity 1: the first reply wins
	done   chan struct{}
}

// reply is a request's shell or control reply. cut reports that the reply
// was over the channel's ceiling and was dropped unread (msg is nil).
type reply struct {
	msg *Message
	cut bool
}

// Dial connects to the kernel described by info and waits until iopub
// carries messages, so no output of the first request is lost. The kernel
// is hostile: a malformed handshake that makes zmq4 panic is returned as
// an error, with every socket closed. The caller must Close the client.
func Dial(ctx context.Context, info ConnectionInfo, cfg Config, log zerolog.Logger) (c *Client, err error) {
	if err := info.Validate(); err != nil {
		return nil, fmt.Errorf("kernel: dial: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	codec, err := NewCodec([]byte(info.Key))
	if err != nil {
		return nil, err
	}
	if info.Transport == "ipc" {
		for _, ch := range Channels {
			if err := CheckSocket(info.SocketPath(ch)); err != nil {
				return nil, fmt.Errorf("kernel: dial: %w", err)
			}
		}
	}
	dials := &dialState{bytes: rate.NewLimiter(rate.Limit(cfg.ByteRate), max(cfg.ByteRate, readChunk))}
	cctx, cancel := context.WithCancel(context.WithValue(context.Background(), dialStateKey{}, dials))
	c = &Client{
		cfg: cfg, log: log, codec: codec, session: newID(), dials: dials,
		ctx: cctx, cancel: cancel,
		pending:   make(map[string]*call),
		dead:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		firstPing: make(chan struct{}),
		msgRate:   rate.NewLimiter(rate.Limit(cfg.MessageRate), cfg.MessageRate),
	}
	defer func() {
		// zmq4's handshake indexes into what the peer sent and panics on a
		// truncated READY command.
		if r := recover(); r != nil {
			_ = c.Close()
			c, err = nil, fmt.Errorf("%w: kernel: dial: handshake failed (%v)", ErrMalformed, r)
		}
	}()
	opts := []zmq4.Option{zmq4.WithDialerMaxRetries(2), zmq4.WithDialerRetry(100 * time.Millisecond)}
	id := zmq4.WithID(zmq4.SocketIdentity(c.session))
	c.shell = zmq4.NewDealer(cctx, append(opts, id)...)
	c.control = zmq4.NewDealer(cctx, append(opts, id)...)
	c.stdin = zmq4.NewDealer(cctx, append(opts, id)...)
	c.iopub = zmq4.NewSub(cctx, opts...)
	c.hb = zmq4.NewReq(cctx, opts...)
	socks := map[Channel]zmq4.Socket{Shell: c.shell, Control: c.control, Stdin: c.stdin, IOPub: c.iopub, Heartbeat: c.hb}
	for _, ch := range Channels {
		if err := socks[ch].Dial(info.endpoint(ch)); err != nil {
			c.closeSockets()
			cancel()
			return nil, fmt.Errorf("kernel: dial %s: %w", ch, err)
		}
	}
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		c.closeSockets()
		cancel()
		return nil, fmt.Errorf("kernel: subscribe iopub: %w", err)
	}
	for _, r := range []struct {
		ch   Channel
		sock zmq4.Socket
	}{{Shell, c.shell}, {Control, c.control}, {Stdin, c.stdin}, {IOPub, c.iopub}} {
		c.wg.Add(1)
		go c.readLoop(r.ch, r.sock)
	}
	c.wg.Add(2)
	go c.heartbeatRecv()
	go c.heartbeatDrive()

	if err := c.waitIOPub(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Cuts returns how many kernel messages the transport guard cut for being
// over their channel's ceiling.
func (c *Client) Cuts() int64 { return c.cuts.Load() }

// waitIOPub sends kernel_info requests until one of them produces an iopub
// message, proving the subscription is live. They go on the control
// channel, which ipykernel serves while a cell runs: a client connecting
// to a busy kernel (after a gateway restart) does not wait for the cell.
func (c *Client) waitIOPub(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	for {
		msg, cl, err := c.send(Control, "kernel_info_request", struct{}{})
		if err != nil {
			return err
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-cl.events.ready:
			t.Stop()
			c.unregister(msg.Header.MsgID)
			return nil
		case <-t.C:
			c.unregister(msg.Header.MsgID)
		case <-c.dead:
			t.Stop()
			c.unregister(msg.Header.MsgID)
			return c.deadError()
		case <-ctx.Done():
			t.Stop()
			c.unregister(msg.Header.MsgID)
			return fmt.Errorf("kernel: wait for iopub: %w", ctx.Err())
		}
	}
}

// Done is closed when the kernel is dead or the client closed.
func (c *Client) Done() <-chan struct{} { return c.dead }

// Err returns the DeadError after Done is closed, and nil before.
func (c *Client) Err() error {
	select {
	case <-c.dead:
		return c.deadError()
	default:
		return nil
	}
}

func (c *Client) deadError() error { return &DeadError{Cause: c.deadErr} }

// Abort declares the kernel dead with cause, for example when its runtime
// saw the process exit. Every pending and future call returns a DeadError.
func (c *Client) Abort(cause error) {
	c.deadOnce.Do(func() {
		c.deadErr = cause
		c.log.Debug().Err(cause).Msg("kernel declared dead")
		close(c.dead)
		c.cancel()
		c.closeSockets()
	})
}

// Close disconnects from the kernel (it does not stop the kernel process)
// and waits for every goroutine of the client to exit.
func (c *Client) Close() error {
	c.Abort(ErrClosed)
	c.wg.Wait()
	c.drainQueues()
	return nil
}

// drainQueues empties zmq4's per-socket receive queues after Close. zmq4's
// connection reader blocks, without watching its context, on a send into
// a full queue (10 messages); one free slot lets it see the closed
// connection and exit, instead of staying blocked with up to 11 messages.
// After Close, Recv returns queued messages or an error at once.
func (c *Client) drainQueues() {
	for _, s := range []zmq4.Socket{c.shell, c.control, c.stdin, c.iopub} {
		if s == nil {
			continue
		}
		for i, misses := 0, 0; i < 64 && misses < 16; i++ {
			if _, err := s.Recv(); err != nil {
				misses++
			} else {
				misses = 0
			}
		}
	}
}

func (c *Client) closeSockets() {
	for _, s := range []zmq4.Socket{c.shell, c.control, c.stdin, c.iopub, c.hb} {
		if s != nil {
			_ = s.Close()
		}
	}
	c.dials.closeAll() // including any zmq4 never took over
}

// send registers a call for a new message and sends it on ch.
func (c *Client) send(ch Channel, msgType string, content any) (*Message, *call, error) {
	body, err := json.Marshal(content)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel: %s: encode content: %w", msgType, err)
	}
	msg := &Message{Header: newHeader(c.session, msgType), Content: body}
	cl := &call{events: newEventQueue(c.cfg.EventBuffer, c.cfg.EventBufferBytes), reply: make(chan reply, 1), done: make(chan struct{})}
	c.mu.Lock()
	c.pending[msg.Header.MsgID] = cl
	c.mu.Unlock()
	signal(c.wake) // the heartbeat runs while requests are pending
	if err := c.sendMsg(ch, msg); err != nil {
		c.unregister(msg.Header.MsgID)
		return nil, nil, err
	}
	return msg, cl, nil
}

func (c *Client) sendMsg(ch Channel, msg *Message) error {
	frames, err := c.codec.Encode(msg)
	if err != nil {
		return err
	}
	var sock zmq4.Socket
	var mu *sync.Mutex
	switch ch {
	case Shell:
		sock, mu = c.shell, &c.sendMu[0]
	case Control:
		sock, mu = c.control, &c.sendMu[1]
	case Stdin:
		sock, mu = c.stdin, &c.sendMu[2]
	default:
		return fmt.Errorf("kernel: cannot send on %s", ch)
	}
	select {
	case <-c.dead:
		return c.deadError()
	default:
	}
	mu.Lock()
	err = sock.SendMulti(zmq4.NewMsgFrom(frames...))
	mu.Unlock()
	if err != nil {
		if c.Err() != nil {
			return c.deadError()
		}
		return fmt.Errorf("kernel: send %s on %s: %w", msg.Header.MsgType, ch, err)
	}
	return nil
}

func (c *Client) unregister(msgID string) {
	c.mu.Lock()
	if cl, ok := c.pending[msgID]; ok {
		delete(c.pending, msgID)
		close(cl.done)
	}
	c.mu.Unlock()
}

func (c *Client) lookup(msgID string) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[msgID]
}

// readLoop owns sock's receiving side: it verifies each message and routes
// it to the call named by its parent header. Reading is rate-limited in
// messages here and in bytes below zmq4 (see guardConn); a kernel that
// sends faster waits, and its PUB socket drops what it cannot queue.
func (c *Client) readLoop(ch Channel, sock zmq4.Socket) {
	defer c.wg.Done()
	for {
		zmsg, err := sock.Recv()
		if err != nil {
			if c.ctx.Err() == nil {
				c.log.Debug().Err(err).Str("channel", string(ch)).Msg("kernel recv failed")
				c.Abort(fmt.Errorf("kernel: recv on %s: %w", ch, err))
			}
			return
		}
		size, cut := 0, false
		for _, f := range zmsg.Frames {
			size += len(f) + frameOverhead
			cut = cut || string(f) == CutMarker
		}
		if c.msgRate.Wait(c.ctx) != nil {
			return
		}
		if cut {
			c.cut(ch, zmsg.Frames)
			continue
		}
		if size > c.cfg.MaxMessageBytes {
			c.dropped(ch, fmt.Errorf("message of %d bytes over the limit", size))
			continue
		}
		msg, err := c.codec.Decode(zmsg.Frames)
		if err != nil {
			c.dropped(ch, err)
			continue
		}
		c.route(ch, msg)
	}
}

// errCut is logged for messages the transport guard cut.
var errCut = errors.New("kernel: message over the channel's size ceiling cut unread")

// cut handles a message the transport guard cut: it is dropped, counted,
// and reported to the request named by its parent header, read without
// verification (a forged parent can only mark a request truncated).
func (c *Client) cut(ch Channel, frames [][]byte) {
	c.cuts.Add(1)
	c.dropped(ch, errCut)
	idx := -1
	for i, f := range frames {
		if bytes.Equal(f, delimiter) {
			idx = i
			break
		}
	}
	if idx < 0 || len(frames) <= idx+3 || len(frames[idx+3]) > 64<<10 {
		return
	}
	var parent Header
	if json.Unmarshal(frames[idx+3], &parent) != nil {
		return
	}
	cl := c.lookup(parent.MsgID)
	if cl == nil {
		return
	}
	switch ch {
	case Shell, Control:
		select {
		case cl.reply <- reply{cut: true}:
		default:
		}
	case IOPub, Stdin:
		cl.events.push(Event{Kind: EventCut}, cl.done, c.dead)
	}
}

func (c *Client) route(ch Channel, msg *Message) {
	c.log.Trace().Str("channel", string(ch)).Str("type", msg.Header.MsgType).Str("parent", msg.Parent.MsgID).RawJSON("content", msg.Content).Msg("kernel message")
	cl := c.lookup(msg.Parent.MsgID)
	if cl == nil {
		c.log.Trace().Str("channel", string(ch)).Str("type", msg.Header.MsgType).Msg("unrouted kernel message")
		return
	}
	switch ch {
	case Shell, Control:
		select {
		case cl.reply <- reply{msg: msg}:
		default: // a second reply to one request is ignored
		}
		return
	case Stdin:
		if msg.Header.MsgType != string(EventInputRequest) {
			return
		}
		c.mu.Lock()
		c.inputReq = msg
		c.mu.Unlock()
	}
	ev, ok, err := decodeEvent(msg)
	if err != nil {
		c.dropped(ch, err)
		return
	}
	if !ok {
		return
	}
	cl.events.push(ev, cl.done, c.dead)
}

// dropped logs a dropped kernel message: the kernel controls how many it
// sends, so at most one line a second is written, with a count of the rest.
func (c *Client) dropped(ch Channel, err error) {
	now := time.Now().UnixNano()
	last := c.lastDropLog.Load()
	if now-last < int64(time.Second) || !c.lastDropLog.CompareAndSwap(last, now) {
		c.droppedSince.Add(1)
		return
	}
	c.log.Warn().Err(err).Str("channel", string(ch)).Int64("suppressed", c.droppedSince.Swap(0)).Msg("dropped kernel message")
}

// The heartbeat runs only while requests are pending: an idle session
// costs no goroutine wake-up and no timer (a kernel that dies while idle is
// reported by its runtime, which watches the process; one that froze is
// found by the first request, within HeartbeatTimeout). Two goroutines own
// the REQ socket: heartbeatRecv blocks on the pongs, heartbeatDrive sends
// a ping each interval while busy and declares the kernel dead when a pong
// is late.

// heartbeatRecv owns the heartbeat socket's receiving side. zmq4's REQ
// socket cannot receive before its first send, so it starts after the
// first ping.
func (c *Client) heartbeatRecv() {
	defer c.wg.Done()
	select {
	case <-c.firstPing:
	case <-c.ctx.Done():
		return
	}
	for {
		if _, err := c.hb.Recv(); err != nil {
			return
		}
		c.pingOut.Store(0)
	}
}

// heartbeatDrive owns the heartbeat socket's sending side and the timer.
func (c *Client) heartbeatDrive() {
	defer c.wg.Done()
	ping := zmq4.NewMsg([]byte("ping"))
	t := time.NewTimer(c.cfg.HeartbeatInterval)
	t.Stop()
	var lastPing time.Time
	for {
		if !c.busy() {
			// A ping left unanswered when the kernel went idle is forgotten:
			// an idle kernel may be paused, and its next request starts afresh.
			c.pingOut.Store(0)
			select {
			case <-c.ctx.Done():
				return
			case <-c.wake:
				continue
			}
		}
		now := time.Now()
		if sent := c.pingOut.Load(); sent != 0 {
			if now.Sub(time.Unix(0, sent)) > c.cfg.HeartbeatTimeout {
				c.Abort(ErrHeartbeat)
				return
			}
		} else if now.Sub(lastPing) >= c.cfg.HeartbeatInterval {
			lastPing = now
			c.pingOut.Store(now.UnixNano())
			if err := c.hb.Send(ping); err != nil {
				return
			}
			c.firstPingOnce.Do(func() { close(c.firstPing) })
		}
		t.Reset(c.cfg.HeartbeatInterval / 4)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// busy reports whether any request is pending.
func (c *Client) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// ExecuteOptions modify an execute_request.
type ExecuteOptions struct {
	Silent     bool
	NoHistory  bool
	AllowStdin bool
	// StopOnError asks the kernel to abort requests queued behind this one
	// if it fails. Off by default: ipykernel also aborts requests that merely
	// arrive shortly after the error, and callers queue executions themselves.
	StopOnError    bool
	UserExpression map[string]string
	// OnReply, if set, is called on Execute's goroutine when the
	// execute_reply arrives (output may still follow until idle).
	OnReply func()
	// OnBusy, if set, is called on Execute's goroutine when the kernel
	// reports (status busy) that it began the request: an interrupt sent
	// before then finds the kernel idle and is lost.
	OnBusy func()
}

// Execute runs code and calls onEvent, on the calling goroutine, for each
// output in kernel order. It returns after the execute_reply has arrived
// and iopub has gone idle for this request, so every output has been
// delivered. input_request events are answered with Input.
//
// If ctx ends first, Execute returns its error and stops delivering
// events; the code keeps running in the kernel (use Interrupt).
// If the kernel dies, Execute returns a DeadError.
func (c *Client) Execute(ctx context.Context, code string, opts ExecuteOptions, onEvent func(Event)) (*ExecuteReply, error) {
	ue := opts.UserExpression
	if ue == nil {
		ue = map[string]string{}
	}
	msg, cl, err := c.send(Shell, "execute_request", map[string]any{
		"code": code, "silent": opts.Silent, "store_history": !opts.NoHistory,
		"user_expressions": ue, "allow_stdin": opts.AllowStdin, "stop_on_error": opts.StopOnError,
	})
	if err != nil {
		return nil, err
	}
	defer c.unregister(msg.Header.MsgID)
	var rep *reply
	replies := cl.reply
	idle, truncated := false, false
	var grace <-chan time.Time // runs once the reply is in; reset by output
	var graceTimer *time.Timer
	var drain <-chan time.Time // runs once the reply is in; never reset
	var drainTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
			drainTimer.Stop()
		}
	}()
	var batch []Event
	for rep == nil || !idle {
		select {
		case <-cl.events.ready:
			batch = cl.events.takeAll(batch[:0])
			if graceTimer != nil && len(batch) > 0 {
				graceTimer.Reset(c.cfg.IdleGrace)
			}
			for _, ev := range batch {
				truncated = truncated || ev.Truncated
				switch ev.Kind {
				case EventStatus:
					idle = idle || ev.State == "idle"
					if ev.State == "busy" && opts.OnBusy != nil {
						opts.OnBusy()
						opts.OnBusy = nil
					}
				case EventCut:
					truncated = true
				default:
					if onEvent != nil {
						onEvent(ev)
					}
				}
			}
		case <-grace:
			// The idle status was dropped (iopub is PUB/SUB) or is stuck
			// behind a backlog: output may be missing, so say so.
			c.log.Debug().Msg("iopub idle not seen after the reply; assuming it was dropped")
			idle, truncated = true, true
		case <-drain:
			c.log.Debug().Msg("output still arriving long after the reply; stopped reading it")
			idle, truncated = true, true
		case r := <-replies:
			rep = &r
			replies = nil // received; never select it again
			graceTimer = time.NewTimer(c.cfg.IdleGrace)
			grace = graceTimer.C
			drainTimer = time.NewTimer(c.cfg.MaxDrain)
			drain = drainTimer.C
			if opts.OnReply != nil {
				opts.OnReply()
			}
		case <-c.dead:
			return nil, c.deadError()
		case <-ctx.Done():
			return nil, fmt.Errorf("kernel: execute: %w", ctx.Err())
		}
	}
	if rep.cut {
		// The reply was over the shell ceiling: its status is unknown, the
		// kernel and its state are fine.
		return &ExecuteReply{Status: "ok", Truncated: true}, nil
	}
	var r struct {
		Status         string          `json:"status"`
		ExecutionCount int             `json:"execution_count"`
		EName          string          `json:"ename"`
		EValue         string          `json:"evalue"`
		Traceback      json.RawMessage `json:"traceback"`
	}
	if err := json.Unmarshal(rep.msg.Content, &r); err != nil {
		return nil, fmt.Errorf("%w: execute_reply: %w", ErrMalformed, err)
	}
	tb, cut, err := decodeStrings(r.Traceback, MaxTracebackEntries, MaxTracebackBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: execute_reply traceback: %w", ErrMalformed, err)
	}
	return &ExecuteReply{Status: r.Status, ExecutionCount: r.ExecutionCount, EName: r.EName, EValue: r.EValue,
		Traceback: tb, Truncated: truncated || cut}, nil
}

// ErrNoInputRequest is returned by Input when the kernel is not waiting for input.
var ErrNoInputRequest = errors.New("kernel: no input request is pending")

// Input answers the kernel's outstanding input_request with value.
func (c *Client) Input(value string) error {
	c.mu.Lock()
	req := c.inputReq
	c.inputReq = nil
	c.mu.Unlock()
	if req == nil {
		return ErrNoInputRequest
	}
	body, err := json.Marshal(map[string]string{"value": value})
	if err != nil {
		return fmt.Errorf("kernel: input reply: %w", err)
	}
	return c.sendMsg(Stdin, &Message{Header: newHeader(c.session, "input_reply"), Parent: req.Header, Content: body})
}

// Request sends msgType on ch (Shell or Control) and returns the reply
// message. Use it for kernel_info, complete, inspect, is_complete and
// history; the typed helpers below cover the common ones.
func (c *Client) Request(ctx context.Context, ch Channel, msgType string, content any) (*Message, error) {
	msg, cl, err := c.send(ch, msgType, content)
	if err != nil {
		return nil, err
	}
	defer c.unregister(msg.Header.MsgID)
	select {
	case r := <-cl.reply:
		if r.cut {
			return nil, fmt.Errorf("kernel: %s: %w", msgType, errCut)
		}
		return r.msg, nil
	case <-c.dead:
		return nil, c.deadError()
	case <-ctx.Done():
		return nil, fmt.Errorf("kernel: %s: %w", msgType, ctx.Err())
	}
}

// KernelInfo returns the kernel_info_reply content.
func (c *Client) KernelInfo(ctx context.Context) (json.RawMessage, error) {
	r, err := c.Request(ctx, Shell, "kernel_info_request", struct{}{})
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// Complete returns the complete_reply content for code at cursorPos.
func (c *Client) Complete(ctx context.Context, code string, cursorPos int) (json.RawMessage, error) {
	r, err := c.Request(ctx, Shell, "complete_request", map[string]any{"code": code, "cursor_pos": cursorPos})
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// Inspect returns the inspect_reply content for code at cursorPos.
func (c *Client) Inspect(ctx context.Context, code string, cursorPos, detail int) (json.RawMessage, error) {
	r, err := c.Request(ctx, Shell, "inspect_request", map[string]any{"code": code, "cursor_pos": cursorPos, "detail_level": detail})
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// Interrupt sends interrupt_request on the control channel and waits for
// the reply. The running execution then ends with KeyboardInterrupt.
func (c *Client) Interrupt(ctx context.Context) error {
	_, err := c.Request(ctx, Control, "interrupt_request", struct{}{})
	return err
}

// Shutdown asks the kernel to exit (restart tells it a new kernel will
// follow) and waits for the reply. The runtime must still reap the process.
func (c *Client) Shutdown(ctx context.Context, restart bool) error {
	_, err := c.Request(ctx, Control, "shutdown_request", map[string]bool{"restart": restart})
	return err
}
