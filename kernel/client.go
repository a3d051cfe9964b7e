package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// (default 2 s without any output of the request, and without any
	// status of another request: a backlog of earlier requests' iopub
	// messages, such as a widget flood's echoes, still being read holds
	// the wait open, up to MaxDrain, since the idle is behind them).
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

	cancel context.CancelFunc // ends the read loops and the heartbeat
	wg     sync.WaitGroup     // the read loops' and the heartbeat's goroutines

	socks  sockets
	calls  *pendingCalls
	order  *outputOrder // iopub's order across requests' events and the side stream
	input  *pendingInput
	side   *sideQueue // messages of no pending request (side.go)
	router *router
	hb     *heartbeat

	deadOnce sync.Once
	dead     chan struct{}
	deadErr  error
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
	order := newOutputOrder()
	c = &Client{
		cfg: cfg, log: log, codec: codec, session: newID(), order: order,
		cancel: cancel,
		socks:  sockets{dials: dials},
		calls:  newPendingCalls(order),
		input:  &pendingInput{},
		side:   newSideQueue(cfg.SideBuffer, cfg.SideBufferBytes),
		dead:   make(chan struct{}),
	}
	c.router = &router{
		ctx: cctx, log: log, codec: codec, maxMessageBytes: cfg.MaxMessageBytes,
		msgRate: rate.NewLimiter(rate.Limit(cfg.MessageRate), cfg.MessageRate),
		calls:   c.calls, input: c.input, side: c.side, order: order, drops: &dropLog{log: log},
		dead: c.dead, abort: c.Abort,
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
	c.socks.shell.sock = zmq4.NewDealer(cctx, append(opts, id)...)
	c.socks.control.sock = zmq4.NewDealer(cctx, append(opts, id)...)
	c.socks.stdin.sock = zmq4.NewDealer(cctx, append(opts, id)...)
	c.socks.iopub = zmq4.NewSub(cctx, opts...)
	c.socks.hb = zmq4.NewReq(cctx, opts...)
	socks := map[Channel]zmq4.Socket{Shell: c.socks.shell.sock, Control: c.socks.control.sock, Stdin: c.socks.stdin.sock, IOPub: c.socks.iopub, Heartbeat: c.socks.hb}
	for _, ch := range Channels {
		if err := socks[ch].Dial(info.endpoint(ch)); err != nil {
			c.socks.close()
			cancel()
			return nil, fmt.Errorf("kernel: dial %s: %w", ch, err)
		}
	}
	if err := c.socks.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		c.socks.close()
		cancel()
		return nil, fmt.Errorf("kernel: subscribe iopub: %w", err)
	}
	for _, ch := range []Channel{Shell, Control, Stdin, IOPub} {
		sock := socks[ch]
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.router.readLoop(ch, sock)
		}()
	}
	c.hb = newHeartbeat(c.socks.hb, cfg, c.calls.busy, c.Abort)
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.hb.recv(cctx)
	}()
	go func() {
		defer c.wg.Done()
		c.hb.drive(cctx)
	}()

	if err := c.waitIOPub(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Cuts returns how many kernel messages the transport guard cut for being
// over their channel's ceiling.
func (c *Client) Cuts() int64 { return c.router.cuts.Load() }

// Published returns how many iopub messages other than status the kernel
// has sent so far: output, displays, comm traffic. A rising count shows
// that the kernel's code makes progress (a status message does not: the
// kernel sends one for every request, an interrupt's included). Safe for
// concurrent use.
func (c *Client) Published() int64 { return c.router.published.Load() }

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
			c.calls.unregister(msg.Header.MsgID)
			return nil
		case <-t.C:
			c.calls.unregister(msg.Header.MsgID)
		case <-c.dead:
			t.Stop()
			c.calls.unregister(msg.Header.MsgID)
			return c.deadError()
		case <-ctx.Done():
			t.Stop()
			c.calls.unregister(msg.Header.MsgID)
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
		c.socks.close()
	})
}

// Close disconnects from the kernel (it does not stop the kernel process)
// and waits for every goroutine of the client to exit.
func (c *Client) Close() error {
	c.Abort(ErrClosed)
	c.wg.Wait()
	c.socks.drain()
	return nil
}
