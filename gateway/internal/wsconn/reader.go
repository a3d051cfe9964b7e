package wsconn

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

// Limits bound the frames a Reader reads.
type Limits struct {
	// Frame is the size of an ordinary frame, read at once.
	Frame int64
	// Large, when above Frame, lets frames up to Large bytes through
	// when the group's budget for large frames allows (see LargeFrames):
	// an ipywidgets FileUpload's comm_msg, a big array for a widget. A
	// frame above max(Frame, Large) closes the connection with 1009
	// (message too big).
	Large int64
	// Owner is whose large frames these are (the tenant): one owner's
	// connections hold at most LargeFrames.PerOwner of the budget.
	Owner string
}

// LargeFrameSize is the Limits.Large that lets through a frame whose
// payload is n bytes, base64-encoded inside JSON, with room for the
// frame's other fields.
func LargeFrameSize(n int) int64 { return int64(n)*4/3 + 256<<10 }

// ErrLargeFrameBusy is Next's error for a frame above Limits.Frame that
// did not get its share of the group's large-frame budget within
// LargeFrames.Wait. The connection is over: Next has sent the client a
// close frame with code 1013 (try again later), and the client may
// reconnect and send again.
var ErrLargeFrameBusy = Error("the gateway's budget for large frames stayed in use; send the frame again later")

// LargeFrames is a group's budget for large frames (see Limits.Large).
// Zero fields take defaults.
type LargeFrames struct {
	// Budget is how many bytes of large frames the group's connections
	// may hold at once (default 64 MiB). A frame holds its Limits.Large
	// (its share) while it is read and handled.
	Budget int64
	// PerOwner is how much of the budget one owner's connections may
	// hold at once (default half the budget), so that one tenant cannot
	// keep the others' large frames waiting. A connection holds one
	// share at most: its next large frame waits for the last one's.
	PerOwner int64
	// Wait is how long a large frame waits for its share before its
	// connection is closed with 1013, try again later (default 30 s).
	// Meanwhile the reader stops reading (TCP slows the client); shares
	// are served first come, first served.
	Wait time.Duration
	// Read bounds the reading of the rest of a large frame once it has
	// its share (default 60 s): a client slower than that loses its
	// connection.
	Read time.Duration
}

// largeBudget is a group's large-frame budget: the whole, and each
// owner's part of it. Safe for concurrent use.
type largeBudget struct {
	cfg    LargeFrames
	all    *semaphore.Weighted
	mu     sync.Mutex
	owners map[string]*ownerShare // the owners holding or waiting for shares
}

type ownerShare struct {
	sem   *semaphore.Weighted
	users int // acquisitions under way or held
}

func newLargeBudget(cfg LargeFrames) *largeBudget {
	if cfg.Budget <= 0 {
		cfg.Budget = 64 << 20
	}
	if cfg.PerOwner <= 0 || cfg.PerOwner > cfg.Budget {
		cfg.PerOwner = cfg.Budget / 2
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.Read <= 0 {
		cfg.Read = time.Minute
	}
	return &largeBudget{cfg: cfg, all: semaphore.NewWeighted(cfg.Budget), owners: map[string]*ownerShare{}}
}

// owner returns owner's part, counting one more user of it.
func (b *largeBudget) owner(owner string) *ownerShare {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.owners[owner]
	if o == nil {
		o = &ownerShare{sem: semaphore.NewWeighted(b.cfg.PerOwner)}
		b.owners[owner] = o
	}
	o.users++
	return o
}

// leave counts one user of owner's part less, forgetting the part when
// nobody uses it.
func (b *largeBudget) leave(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.owners[owner]; o != nil {
		if o.users--; o.users == 0 {
			delete(b.owners, owner)
		}
	}
}

// acquire takes a share of n bytes for owner (n is at most PerOwner:
// NewReader sees to it), waiting while ctx lasts, and returns what gives
// it back (once).
func (b *largeBudget) acquire(ctx context.Context, owner string, n int64) (release func(), err error) {
	o := b.owner(owner)
	if err := o.sem.Acquire(ctx, n); err != nil {
		b.leave(owner)
		return nil, err
	}
	if err := b.all.Acquire(ctx, n); err != nil {
		o.sem.Release(n)
		b.leave(owner)
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			b.all.Release(n)
			o.sem.Release(n)
			b.leave(owner)
		})
	}, nil
}

// Reader reads a client's frames at most FrameRate a second: past that
// it waits before reading on, so TCP slows a fast client and the server
// never drops it. A Reader belongs to the one goroutine that owns the
// connection's reading side, which closes it when it stops reading.
type Reader struct {
	conn   *websocket.Conn
	limit  *rate.Limiter
	lim    Limits
	budget *largeBudget
	// one holds the connection's one share: its next large frame waits
	// until the last one's share is given back, kept or not.
	one   chan struct{}
	held  func() // gives back the share of the frame last returned, if it was large and is not kept
	large bool   // the frame last returned was above lim.Frame
}

// NewReader returns a Reader of conn's frames within lim, and sets
// conn's read limit to match. The caller closes it.
func (g *Group) NewReader(conn *websocket.Conn, lim Limits) *Reader {
	lim.Large = min(lim.Large, g.large.cfg.PerOwner) // a larger share would wait for ever
	conn.SetReadLimit(max(lim.Frame, lim.Large))
	return &Reader{conn: conn, limit: rate.NewLimiter(FrameRate, FrameRate), lim: lim, budget: g.large, one: make(chan struct{}, 1)}
}

// Next blocks until the rate allows a frame, then reads it whole. It
// returns ctx's error if ctx ends while it waits for the rate or for a
// large frame's share; ctx does not interrupt the read itself (closing
// the connection does).
//
// A frame above Limits.Frame holds a share of the group's large-frame
// budget (Limits.Large bytes) until the next call to Next, or Close,
// unless the caller Keeps it. Past LargeFrames.Wait without its share,
// Next closes the connection (ErrLargeFrameBusy).
func (r *Reader) Next(ctx context.Context) (messageType int, data []byte, err error) {
	r.Close()
	r.large = false
	if err := r.limit.Wait(ctx); err != nil {
		return 0, nil, err
	}
	messageType, rd, err := r.conn.NextReader()
	if err != nil {
		return 0, nil, err
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(rd, r.lim.Frame+1))
	if err != nil {
		return 0, nil, err
	}
	if n <= r.lim.Frame {
		return messageType, buf.Bytes(), nil
	}
	if r.lim.Large <= r.lim.Frame { // the connection's read limit stops it first; kept for safety
		return 0, nil, websocket.ErrReadLimit
	}
	release, err := r.share(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		_ = r.conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "the gateway's budget for large frames is in use; send the frame again later"),
			time.Now().Add(WriteTimeout))
		return 0, nil, ErrLargeFrameBusy
	}
	r.held, r.large = release, true
	buf.Grow(int(r.lim.Large) - buf.Len()) // one allocation: the share is what the frame may take
	// The budget is shared: a client that trickles the rest of its frame
	// must not hold it for long (a read past the deadline ends the
	// connection).
	_ = r.conn.SetReadDeadline(time.Now().Add(r.budget.cfg.Read))
	_, err = buf.ReadFrom(rd)
	_ = r.conn.SetReadDeadline(time.Time{})
	if err != nil {
		r.Close()
		r.large = false
		return 0, nil, err
	}
	return messageType, buf.Bytes(), nil
}

// share takes the connection's one share, then the owner's and the
// group's, within LargeFrames.Wait in all; release gives back all three.
func (r *Reader) share(ctx context.Context) (release func(), err error) {
	wctx, cancel := context.WithTimeout(ctx, r.budget.cfg.Wait)
	defer cancel()
	select {
	case r.one <- struct{}{}:
	case <-wctx.Done():
		return nil, wctx.Err()
	}
	give, err := r.budget.acquire(wctx, r.lim.Owner, r.lim.Large)
	if err != nil {
		<-r.one
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			give()
			<-r.one
		})
	}, nil
}

// Large reports whether the frame Next last returned was above
// Limits.Frame.
func (r *Reader) Large() bool { return r.large }

// Keep takes over the share of the large-frame budget that the frame
// Next last returned holds, for a caller that hands the frame's data on
// beyond its next call to Next: the caller calls release once the data
// is let go (more calls do nothing). The connection's next large frame
// waits for it. For an ordinary frame release does nothing.
func (r *Reader) Keep() (release func()) {
	held := r.held
	r.held = nil
	if held == nil {
		return func() {}
	}
	return held
}

// Close gives back the share the last frame held, unless it was kept.
// The Reader may read on after it (Next calls it first).
func (r *Reader) Close() {
	if r.held != nil {
		r.held()
		r.held = nil
	}
}
