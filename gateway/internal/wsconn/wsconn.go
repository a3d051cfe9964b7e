package wsconn

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

const (
	// WriteTimeout bounds one write (a frame, a ping) to a client.
	WriteTimeout = 10 * time.Second
	// FrameRate is how many frames per second a client may send,
	// sustained (the burst is the same). A faster client is not refused:
	// the server stops reading its socket until the rate allows, so TCP
	// slows the client down.
	FrameRate = 200
)

// NewUpgrader allows same-origin browsers, the allowed origins, and
// clients that send no Origin (scripts, agents).
func NewUpgrader(allowed []string) websocket.Upgrader {
	set := map[string]bool{}
	for _, o := range allowed {
		set[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return websocket.Upgrader{
		ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10,
		CheckOrigin: func(r *http.Request) bool {
			origin := r.Header.Get("Origin")
			if origin == "" {
				return true
			}
			u, err := url.Parse(origin)
			if err != nil {
				return false
			}
			return strings.EqualFold(u.Host, r.Host) || set[strings.ToLower(origin)]
		},
	}
}

// Limits bound the frames a Reader reads.
type Limits struct {
	// Frame is the size of an ordinary frame, read at once.
	Frame int64
	// Large, when above Frame, lets frames up to Large bytes through
	// when the group's budget for large frames allows (see Group): an
	// ipywidgets FileUpload's comm_msg, a big array for a widget. A frame
	// above max(Frame, Large) closes the connection with 1009 (message
	// too big).
	Large int64
}

// LargeFrameSize is the Limits.Large that lets through a frame whose
// payload is n bytes, base64-encoded inside JSON, with room for the
// frame's other fields.
func LargeFrameSize(n int) int64 { return int64(n)*4/3 + 256<<10 }

// ErrLargeFrameBusy is Next's error for a frame above Limits.Frame that
// did not get the group's large-frame budget within LargeFrames.Wait. The
// connection is over: Next has sent the client a close frame with code
// 1013 (try again later), and the client may reconnect and send again.
var ErrLargeFrameBusy = Error("the gateway's budget for large frames stayed in use; send the frame again later")

// Reader reads a client's frames at most FrameRate a second: past that
// it waits before reading on, so TCP slows a fast client and the server
// never drops it. A Reader belongs to the one goroutine that owns the
// connection's reading side, which closes it when it stops reading.
type Reader struct {
	conn  *websocket.Conn
	limit *rate.Limiter
	lim   Limits
	group *Group
	held  int64 // the large-frame budget the frame last returned holds
	large bool  // the frame last returned was above lim.Frame
}

// NewReader returns a Reader of conn's frames within lim, and sets
// conn's read limit to match. The caller closes it.
func (g *Group) NewReader(conn *websocket.Conn, lim Limits) *Reader {
	lim.Large = min(lim.Large, g.budget) // a frame larger than the whole budget would wait for ever
	conn.SetReadLimit(max(lim.Frame, lim.Large))
	return &Reader{conn: conn, limit: rate.NewLimiter(FrameRate, FrameRate), lim: lim, group: g}
}

// Next blocks until the rate allows a frame, then reads it whole. It
// returns ctx's error if ctx ends while it waits for the rate or for the
// large-frame budget; ctx does not interrupt the read itself (closing the
// connection does).
//
// A frame above Limits.Frame holds Limits.Large bytes of the group's
// large-frame budget until the next call to Next, or Close, unless the
// caller Keeps it. Past LargeFrames.Wait without the budget, Next closes
// the connection (ErrLargeFrameBusy).
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
	if err := r.group.acquireLarge(ctx, r.lim.Large); err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		_ = r.conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "the gateway's budget for large frames is in use; send the frame again later"),
			time.Now().Add(WriteTimeout))
		return 0, nil, ErrLargeFrameBusy
	}
	r.held, r.large = r.lim.Large, true
	// The budget is shared: a client that trickles the rest of its frame
	// must not hold it for long (a read past the deadline ends the
	// connection).
	_ = r.conn.SetReadDeadline(time.Now().Add(r.group.largeRead))
	_, err = buf.ReadFrom(rd)
	_ = r.conn.SetReadDeadline(time.Time{})
	if err != nil {
		r.Close()
		r.large = false
		return 0, nil, err
	}
	return messageType, buf.Bytes(), nil
}

// Large reports whether the frame Next last returned was above
// Limits.Frame.
func (r *Reader) Large() bool { return r.large }

// Keep takes over the large-frame budget the frame Next last returned
// holds, for a caller that hands the frame's data on beyond its next
// call to Next: the caller calls release once the data is let go (more
// calls do nothing). For an ordinary frame release does nothing.
func (r *Reader) Keep() (release func()) {
	n := r.held
	r.held = 0
	if n == 0 {
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(func() { r.group.large.Release(n) }) }
}

// Close gives back the large-frame budget the last frame held. The
// Reader may read on after it (Next calls it first).
func (r *Reader) Close() {
	if r.held > 0 {
		r.group.large.Release(r.held)
		r.held = 0
	}
}

// Group is a server's live WebSocket connections. Safe for concurrent
// use.
//
// Frames larger than a connection's ordinary limit (Limits.Large) draw
// on one budget for the whole group (LargeFrames.Budget bytes), so that
// many connections sending large frames at once cannot take the
// gateway's memory: past the budget they wait, then their frames are
// refused.
type Group struct {
	log       zerolog.Logger
	large     *semaphore.Weighted
	budget    int64
	largeWait time.Duration
	largeRead time.Duration
	base      context.Context // cancelled when shutdown starts
	stop      context.CancelFunc
	mu        sync.Mutex // orders Enter's Add before Shutdown, so Wait never races an Add
	shut      bool       // Shutdown was called: Enter counts no more connections
	wg        sync.WaitGroup
}

// LargeFrames is a group's budget for large frames (see Limits.Large).
// Zero fields take defaults.
type LargeFrames struct {
	// Budget is how many bytes of large frames the group's connections
	// may hold at once (default 64 MiB). A frame holds its Limits.Large
	// while it is read and handled.
	Budget int64
	// Wait is how long a large frame waits for the budget before its
	// connection is closed with 1013, try again later (default 30 s).
	// Meanwhile the reader stops reading (TCP slows the client); the
	// budget is served first come, first served.
	Wait time.Duration
	// Read bounds the reading of a large frame once it has the budget
	// (default 60 s): a client slower than that loses its connection.
	Read time.Duration
}

// NewGroup returns an empty group; log gets the panics Recover catches.
func NewGroup(log zerolog.Logger, large LargeFrames) *Group {
	if large.Budget <= 0 {
		large.Budget = 64 << 20
	}
	if large.Wait <= 0 {
		large.Wait = 30 * time.Second
	}
	if large.Read <= 0 {
		large.Read = time.Minute
	}
	base, stop := context.WithCancel(context.Background())
	return &Group{log: log, base: base, stop: stop, large: semaphore.NewWeighted(large.Budget), budget: large.Budget, largeWait: large.Wait, largeRead: large.Read}
}

// acquireLarge takes n bytes of the large-frame budget (n is at most the
// budget: NewReader sees to it), waiting at most the group's Wait.
func (g *Group) acquireLarge(ctx context.Context, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, g.largeWait)
	defer cancel()
	return g.large.Acquire(ctx, n)
}

// Enter counts a connection that has just been upgraded. Its context ends
// when the group shuts down; the handler calls leave once the
// connection's goroutines have exited (and not before: Wait waits for it).
//
// A connection that enters after Shutdown gets a context that has already
// ended and is not counted (Wait may be running): its handler sees the
// end at once and closes it.
func (g *Group) Enter() (ctx context.Context, leave func()) {
	ctx, cancel := context.WithCancel(g.base)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		cancel()
		return ctx, cancel
	}
	g.wg.Add(1)
	return ctx, func() {
		cancel()
		g.wg.Done()
	}
}

// Accept upgrades the request with up, enters the connection in the group
// (see Enter) and limits the frames it reads to readLimit bytes (a
// Reader of the connection sets its own limits instead). ok is
// false when the upgrade failed: the upgrader has written the error
// response. Otherwise the handler calls done, which closes conn and
// leaves, once the connection's goroutines have exited.
func (g *Group) Accept(up *websocket.Upgrader, w http.ResponseWriter, r *http.Request, readLimit int64) (conn *websocket.Conn, ctx context.Context, done func(), ok bool) {
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return nil, nil, nil, false
	}
	ctx, leave := g.Enter()
	conn.SetReadLimit(readLimit)
	return conn, ctx, func() {
		_ = conn.Close()
		leave()
	}, true
}

// ShuttingDown reports whether Shutdown has been called (a connection
// that ends then tells its client the gateway is going away).
func (g *Group) ShuttingDown() bool { return g.base.Err() != nil }

// Shutdown ends every connection's context, those to come included. It
// does not wait; Wait does.
func (g *Group) Shutdown() {
	g.mu.Lock()
	g.shut = true
	g.mu.Unlock()
	g.stop()
}

// Wait blocks until every connection that entered has left.
func (g *Group) Wait() { g.wg.Wait() }

// Recover turns a panic into an error that ends this connection only. A
// connection's goroutines defer it: defer g.Recover(&err).
func (g *Group) Recover(err *error) {
	if r := recover(); r != nil {
		g.log.Error().Interface("panic", r).Msg("websocket handler panicked")
		*err = Error("internal error")
	}
}

// Error is why a connection's goroutine ended, when it was not an I/O
// error.
type Error string

func (e Error) Error() string { return string(e) }

// Why a connection's goroutine ended.
const (
	ErrClientGone   = Error("client disconnected")
	ErrSessionEnded = Error("session ended")
)
