package kernel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// heartbeat watches the kernel's heartbeat channel. It runs only while
// requests are pending: an idle session costs no goroutine wake-up and no
// timer (a kernel that dies while idle is reported by its runtime, which
// watches the process; one that froze is found by the first request,
// within HeartbeatTimeout). Two goroutines own the REQ socket, both
// started and waited for by the Client: recv blocks on the pongs, drive
// sends a ping each interval while busy and declares the kernel dead when
// a pong is late. wake may be called from any goroutine.
type heartbeat struct {
	sock              zmq4.Socket
	interval, timeout time.Duration
	busy              func() bool // whether any request is pending
	fail              func(error) // declares the kernel dead

	pingOut       atomic.Int64  // unix nanos of the unanswered ping, or 0
	wakeUp        chan struct{} // signalled when a request starts (capacity 1)
	firstPing     chan struct{} // closed after the first ping was sent
	firstPingOnce sync.Once
}

func newHeartbeat(sock zmq4.Socket, cfg Config, busy func() bool, fail func(error)) *heartbeat {
	return &heartbeat{sock: sock, interval: cfg.HeartbeatInterval, timeout: cfg.HeartbeatTimeout, busy: busy, fail: fail,
		wakeUp: make(chan struct{}, 1), firstPing: make(chan struct{})}
}

// wake tells drive that a request started; it never blocks.
func (h *heartbeat) wake() { signal(h.wakeUp) }

// recv owns the heartbeat socket's receiving side until ctx ends or the
// socket fails. zmq4's REQ socket cannot receive before its first send,
// so it starts after the first ping.
func (h *heartbeat) recv(ctx context.Context) {
	select {
	case <-h.firstPing:
	case <-ctx.Done():
		return
	}
	for {
		if _, err := h.sock.Recv(); err != nil {
			return
		}
		h.pingOut.Store(0)
	}
}

// drive owns the heartbeat socket's sending side and the timer until ctx
// ends, the socket fails or a pong is late (then it calls fail).
func (h *heartbeat) drive(ctx context.Context) {
	ping := zmq4.NewMsg([]byte("ping"))
	t := time.NewTimer(h.interval)
	t.Stop()
	var lastPing time.Time
	for {
		if !h.busy() {
			// A ping left unanswered when the kernel went idle is forgotten:
			// an idle kernel may be paused, and its next request starts afresh.
			h.pingOut.Store(0)
			select {
			case <-ctx.Done():
				return
			case <-h.wakeUp:
				continue
			}
		}
		now := time.Now()
		if sent := h.pingOut.Load(); sent != 0 {
			if now.Sub(time.Unix(0, sent)) > h.timeout {
				h.fail(ErrHeartbeat)
				return
			}
		} else if now.Sub(lastPing) >= h.interval {
			lastPing = now
			h.pingOut.Store(now.UnixNano())
			if err := h.sock.Send(ping); err != nil {
				return
			}
			h.firstPingOnce.Do(func() { close(h.firstPing) })
		}
		t.Reset(h.interval / 4)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
