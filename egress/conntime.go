package egress

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// Errors that end a proxied connection on the proxy's clock.
var (
	errIdle        = errors.New("egress: no byte either way for the idle timeout")
	errMaxDuration = errors.New("egress: open longer than the connection time limit")
	errStopped     = errors.New("egress: connection stopped by the proxy")
)

// clockEnded reports whether err is the clock ending a connection.
func clockEnded(err error) bool {
	return errors.Is(err, errIdle) || errors.Is(err, errMaxDuration) || errors.Is(err, errStopped)
}

// connClock bounds one proxied connection, both its sides: it ends once
// no byte crossed either way for idle, or end is reached, or stop is
// called. Safe for concurrent use (a tunnel's two pumps share it).
type connClock struct {
	idle    time.Duration
	end     time.Time
	last    atomic.Int64 // UnixNano of the last byte moved, either way
	stopped atomic.Bool
}

func newConnClock(idle, limit time.Duration) *connClock {
	now := time.Now()
	k := &connClock{idle: idle, end: now.Add(limit)}
	k.last.Store(now.UnixNano())
	return k
}

func (k *connClock) touch() { k.last.Store(time.Now().UnixNano()) }

// deadline is when the connection ends if no byte moves until then (in
// the past once stopped).
func (k *connClock) deadline() time.Time {
	if k.stopped.Load() {
		return time.Unix(1, 0)
	}
	d := time.Unix(0, k.last.Load()).Add(k.idle)
	if d.After(k.end) {
		return k.end
	}
	return d
}

// over says why the connection must end at now, or nil while it may go on
// (the other direction moved bytes since the deadline was set).
func (k *connClock) over(now time.Time) error {
	switch {
	case k.stopped.Load():
		return errStopped
	case !now.Before(k.end):
		return errMaxDuration
	case now.Sub(time.Unix(0, k.last.Load())) >= k.idle:
		return errIdle
	}
	return nil
}

// stop ends the connection now: every read and write of conns (the raw
// sides of timedConns on this clock) returns errStopped.
func (k *connClock) stop(conns ...net.Conn) {
	k.stopped.Store(true)
	for _, c := range conns {
		_ = c.SetDeadline(time.Now())
	}
}

// timedConn reads and writes Conn under the clock's deadline: a read or
// write blocked past it fails with the clock's reason, unless the other
// direction moved bytes meanwhile (then it goes on). Every byte moved
// resets the idle clock. It sets Conn's deadlines itself: set none on
// Conn directly, stop the clock instead.
type timedConn struct {
	net.Conn
	clock *connClock
}

func (t *timedConn) Read(b []byte) (int, error) {
	for {
		_ = t.Conn.SetReadDeadline(t.clock.deadline())
		if t.clock.stopped.Load() { // stop's deadline may have come before ours
			return 0, errStopped
		}
		n, err := t.Conn.Read(b)
		if n > 0 {
			t.clock.touch()
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
		if why := t.clock.over(time.Now()); why != nil {
			return 0, why
		}
	}
}

func (t *timedConn) Write(b []byte) (int, error) {
	written := 0
	for {
		_ = t.Conn.SetWriteDeadline(t.clock.deadline())
		if t.clock.stopped.Load() {
			return written, errStopped
		}
		n, err := t.Conn.Write(b[written:])
		written += n
		if n > 0 {
			t.clock.touch()
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return written, err
		}
		if why := t.clock.over(time.Now()); why != nil {
			return written, why
		}
	}
}
