package kernel

import (
	"context"
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
	// SideBuffer and SideBufferBytes bound the side stream of messages
	// that belong to no pending request (comm traffic, debug events, the
	// output of a comm's handler: see Side), default 1024 messages and
	// 8 MiB; past them the stream drops messages until its consumer
	// catches up.
	SideBuffer      int
	SideBufferBytes int
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
	if c.SideBuffer == 0 {
		c.SideBuffer = 1024
	}
	if c.SideBufferBytes == 0 {
		c.SideBufferBytes = 8 << 20
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
	case c.MessageRate < 0 || c.ByteRate < 0 || c.EventBuffer < 0 || c.EventBufferBytes < 0 || c.SideBuffer < 0 || c.SideBufferBytes < 0 || c.ConnectTimeout < 0 || c.IdleGrace < 0 || c.MaxDrain < 0:
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

	side *sideQueue // messages of no pending request (side.go)

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
	published     atomic.Int64 // iopub messages other than status routed from the kernel

	lastDropLog  atomic.Int64 // unix nanos of the last "dropped" log line
	droppedSince atomic.Int64 // drops not logged since then
}

type call struct {
	// comms: the request's comm messages come as EventComm events
	// (ExecuteOptions.CommEvents), not on the side stream.
	comms  bool
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
		side:      newSideQueue(cfg.SideBuffer, cfg.SideBufferBytes),
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

// Published returns how many iopub messages other than status the kernel
// has sent so far: output, displays, comm traffic. A rising count shows
// that the kernel's code makes progress (a status message does not: the
// kernel sends one for every request, an interrupt's included). Safe for
// concurrent use.
func (c *Client) Published() int64 { return c.published.Load() }

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
