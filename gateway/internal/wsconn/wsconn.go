package wsconn

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
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

// Group is a server's live WebSocket connections. Safe for concurrent
// use.
//
// Frames larger than a connection's ordinary limit (Limits.Large) draw
// on one budget for the whole group (see LargeFrames), so that many
// connections sending large frames at once cannot take the gateway's
// memory: past the budget they wait, then their connections are closed.
type Group struct {
	log   zerolog.Logger
	large *largeBudget
	base  context.Context // cancelled when shutdown starts
	stop  context.CancelFunc
	mu    sync.Mutex // orders Enter's Add before Shutdown, so Wait never races an Add
	shut  bool       // Shutdown was called: Enter counts no more connections
	wg    sync.WaitGroup
}

// NewGroup returns an empty group; log gets the panics Recover catches.
func NewGroup(log zerolog.Logger, large LargeFrames) *Group {
	base, stop := context.WithCancel(context.Background())
	return &Group{log: log, base: base, stop: stop, large: newLargeBudget(large)}
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
