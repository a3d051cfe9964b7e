package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/workspace"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// e2bAPI serves what E2B's SDKs need beyond the core API: templates,
// metrics, pause and resume, moves and the files-watch socket. Safe for
// concurrent use.
type e2bAPI struct {
	lookup
	conns    *wsconn.Group
	upgrader websocket.Upgrader
	watches  *watchShares // the open files-watch sockets: maxWatchesPerGW, shared out per tenant and session
}

// The routes E2B's SDK semantics need: templates, metrics, a client's
// pause and resume, moving files and watching a directory.

func (s *e2bAPI) route(g *echo.Group) {
	g.GET("/templates", s.listTemplates)
	g.GET("/sessions/:id/metrics", s.sessionMetrics)
	g.GET("/sessions/:id/metrics/history", s.sessionMetricsHistory)
	g.POST("/sessions/:id/pause", s.pauseSession)
	g.POST("/sessions/:id/resume", s.resumeSession)
	g.POST("/sessions/:id/files-move", s.moveFile)
	g.GET("/sessions/:id/files-watch", s.watchFiles)
}

func (s *e2bAPI) listTemplates(c echo.Context) error {
	ts := s.mgr.Templates()
	out := make([]api.Template, 0, len(ts))
	for _, t := range ts {
		out = append(out, api.Template{Name: t.Name, Description: t.Description, Language: t.Language,
			Limits:  sessions.WireLimits(t.Limits),
			Network: api.Network{Allow: t.Network.Allow}, IdleTimeoutS: t.IdleS})
	}
	return c.JSON(http.StatusOK, map[string][]api.Template{"templates": out})
}

// listQuery reads GET /v1/sessions's query: metadata.KEY=VALUE
// (repeatable), state=running|paused (repeatable), limit, next_token,
// order=asc|desc, template, started_after and started_before (RFC 3339).
func listQuery(c echo.Context) (sessions.ListQuery, error) {
	var q sessions.ListQuery
	params := c.QueryParams()
	for k, vs := range params {
		key, ok := strings.CutPrefix(k, "metadata.")
		if !ok {
			continue
		}
		if q.Metadata == nil {
			q.Metadata = map[string]string{}
		}
		for _, v := range vs {
			if old, dup := q.Metadata[key]; dup && old != v {
				q.Metadata[key] = "\x00never" // two values for one key: nothing matches both
				continue
			}
			q.Metadata[key] = v
		}
	}
	if len(q.Metadata) > sessions.MaxMetadataKeys {
		return q, httperr.New(http.StatusBadRequest, "bad_request", "at most %d metadata filters", sessions.MaxMetadataKeys)
	}
	running, paused := false, false
	for _, st := range params["state"] {
		switch st {
		case "running":
			running = true
		case "paused":
			paused = true
		default:
			return q, httperr.New(http.StatusBadRequest, "bad_request", "state must be running or paused")
		}
	}
	if running != paused {
		q.Paused = &paused
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > sessions.MaxListLimit {
			return q, httperr.New(http.StatusBadRequest, "bad_request", "limit must be an integer within 1..%d", sessions.MaxListLimit)
		}
		q.Limit = n
	}
	q.NextToken = c.QueryParam("next_token")
	switch c.QueryParam("order") {
	case "", "asc":
	case "desc":
		q.Descending = true
	default:
		return q, httperr.New(http.StatusBadRequest, "bad_request", "order must be asc or desc")
	}
	q.Template = c.QueryParam("template")
	for name, at := range map[string]*time.Time{"started_after": &q.After, "started_before": &q.Before} {
		if v := c.QueryParam(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return q, httperr.New(http.StatusBadRequest, "bad_request", "%s must be an RFC 3339 time", name)
			}
			*at = t
		}
	}
	return q, nil
}

func (s *e2bAPI) sessionMetrics(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 10*time.Second)
	defer cancel()
	m, err := sess.Metrics().Now(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.Metrics(m))
}

// sessionMetricsHistory answers GET .../metrics/history?start=&end=
// (RFC 3339, each optional): the session's samples in that range.
func (s *e2bAPI) sessionMetricsHistory(c echo.Context) error {
	var start, end time.Time
	for name, at := range map[string]*time.Time{"start": &start, "end": &end} {
		if v := c.QueryParam(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return httperr.New(http.StatusBadRequest, "bad_request", "%s must be an RFC 3339 time", name)
			}
			*at = t
		}
	}
	if !start.IsZero() && !end.IsZero() && end.Before(start) {
		return httperr.New(http.StatusBadRequest, "bad_request", "end is before start")
	}
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 10*time.Second)
	defer cancel()
	ms, err := sess.Metrics().History(ctx, start, end)
	if err != nil {
		return err
	}
	out := api.MetricsHistory{Samples: make([]api.Metrics, len(ms))}
	for i, m := range ms {
		out.Samples[i] = api.Metrics(m)
	}
	return c.JSON(http.StatusOK, out)
}

// pauseSession freezes the session (its memory kept), or with
// keep_memory false hibernates it (sessions.Hibernate). A hibernated
// session is described as it is.
func (s *e2bAPI) pauseSession(c echo.Context) error {
	sess, err := s.mgr.Get(tenant.Of(c), c.Param("id"))
	var he *sessions.HibernatedError
	if errors.As(err, &he) {
		return c.JSON(http.StatusOK, s.annotate(he.Info))
	}
	if err != nil {
		return err
	}
	var req api.PauseRequest
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	if req.KeepMemory != nil && !*req.KeepMemory {
		if err := sessions.Hibernate(c.Request().Context(), s.mgr, sess, "a client asked"); err != nil {
			return err
		}
		if _, err := s.mgr.Get(tenant.Of(c), sess.ID()); errors.As(err, &he) {
			return c.JSON(http.StatusOK, s.annotate(he.Info))
		}
		return sessions.ErrNotFound // deleted meanwhile
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Minute)
	defer cancel()
	if err := sess.Pause(ctx); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.info(sess))
}

// resumeSession thaws a paused session, or wakes a hibernated one.
func (s *e2bAPI) resumeSession(c echo.Context) error {
	sess, err := s.mgr.Get(tenant.Of(c), c.Param("id"))
	if errors.Is(err, sessions.ErrHibernated) {
		sess, err = sessions.Wake(c.Request().Context(), s.mgr, tenant.Of(c), c.Param("id"))
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Minute)
	defer cancel()
	if err := sess.Resume(ctx); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.info(sess))
}

func (s *e2bAPI) moveFile(c echo.Context) error {
	var req api.MoveFileRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if req.From == "" || req.To == "" {
		return httperr.New(http.StatusBadRequest, "bad_request", "fields from and to are required")
	}
	r, ok := sess.Files().(workspace.Renamer)
	if !ok {
		return httperr.New(http.StatusNotImplemented, "no_move", "this gateway's runtime cannot move files")
	}
	if err := r.Rename(req.From, req.To); err != nil {
		return err
	}
	e, err := sess.Files().Stat(req.To)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

// Bounds of the files-watch sockets. MaxWatchSockets and MaxWatchDirs are
// what they may hold of the host's inotify ceilings at most (the app
// counts them into sessions.Config's host check).
const (
	MaxWatchDirs    = 256 // directories one recursive watch follows
	MaxWatchSockets = 32  // sockets open at once, gateway-wide (each holds an inotify instance)
	maxWatchDirs    = MaxWatchDirs
	watchBuffer     = 1024 // events waiting for a slow client before overflow
	maxWatchesPerGW = MaxWatchSockets
	// Of those, one tenant's sessions hold at most a quarter and one
	// session an eighth (watchShares), so one tenant cannot take them all.
	maxWatchesPerTenant  = maxWatchesPerGW / 4
	maxWatchesPerSession = maxWatchesPerGW / 8
	watchWriteWait       = 10 * time.Second
	watchFrameMaxLen     = 4096
)

// watchFiles serves the files-watch WebSocket: each change under the
// directory is a text frame {"type","name"} (with ?entry=true, and
// "entry" describing the path); a client's {"type":"sync","id"} is
// answered {"type":"synced","id"} once the events of the changes made
// before it are sent (api.WatchSyncRequest). The watch (and its
// goroutine) is closed with the socket, which ends when the client
// closes it, the session ends, or the gateway shuts down.
func (s *e2bAPI) watchFiles(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	var recursive, withEntry bool
	for name, flag := range map[string]*bool{"recursive": &recursive, "entry": &withEntry} {
		if v := c.QueryParam(name); v != "" {
			if *flag, err = strconv.ParseBool(v); err != nil {
				return httperr.New(http.StatusBadRequest, "bad_request", "%s must be true or false", name)
			}
		}
	}
	files := sess.Files()
	root, ok := files.(workspace.DirWatching)
	if !ok {
		return httperr.New(http.StatusNotImplemented, "no_watch", "this gateway's runtime cannot watch files")
	}
	release, err := s.watches.acquire(tenant.Of(c), sess.ID())
	if err != nil {
		return err
	}
	defer release()
	dir := c.QueryParam("path")
	if st, err := files.Stat(dir); err != nil {
		return err
	} else if st.Type != "dir" {
		return httperr.New(http.StatusBadRequest, "bad_path", "path must be a directory")
	}
	w, err := root.WatchDirectory(dir, recursive, maxWatchDirs, watchBuffer)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	conn, ctx, done, ok := s.conns.Accept(&s.upgrader, c.Response(), c.Request(), watchFrameMaxLen)
	if !ok {
		return nil // the upgrader has written the error response
	}
	defer done()
	syncer, _ := w.(workspace.DirSyncer)
	asked := make(chan watchSync, maxWatchSyncs)
	gone := make(chan struct{})
	go func() { // the reading side: the client's syncs, and its leaving; ends with conn.Close
		defer close(gone)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			ask, ok := readWatchSync(b, syncer)
			if !ok {
				continue
			}
			select {
			case asked <- ask:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { _ = conn.Close(); <-gone }()
	var pending []watchSync // asked, their mark not seen yet; oldest first
	var marked uint64       // the last mark seen (it may come before its ask)
	write := func(out api.FileEvent) bool {
		b, _ := json.Marshal(out)
		_ = conn.SetWriteDeadline(time.Now().Add(watchWriteWait))
		return conn.WriteMessage(websocket.TextMessage, b) == nil
	}
	for {
		select {
		case <-ctx.Done():
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "gateway shutting down"), time.Now().Add(time.Second))
			return nil
		case <-sess.Done():
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "session ended"), time.Now().Add(time.Second))
			return nil
		case <-gone:
			return nil
		case ask := <-asked:
			if ask.seq <= marked || len(pending) == maxWatchSyncs { // marked already, no barrier here (0), or too many waiting: at once
				if !write(api.FileEvent{Type: "synced", ID: ask.id}) {
					return nil
				}
				continue
			}
			pending = append(pending, ask)
		case ev, ok := <-w.Events():
			if !ok {
				return nil
			}
			if ev.Type == workspace.DirSync {
				seq, _ := strconv.ParseUint(ev.Name, 10, 64)
				marked = max(marked, seq)
				for len(pending) > 0 && pending[0].seq <= marked {
					if !write(api.FileEvent{Type: "synced", ID: pending[0].id}) {
						return nil
					}
					pending = pending[1:]
				}
				continue
			}
			out := api.FileEvent{Type: ev.Type, Name: ev.Name}
			if withEntry {
				out.Entry = watchedEntry(files, dir, ev)
			}
			if !write(out) {
				return nil
			}
		}
	}
}

// watchSync is a client's sync on a files-watch socket: its ID, and the
// mark asked of the watch (0: none, answered at once).
type watchSync struct {
	id  string
	seq uint64
}

// maxWatchSyncs bounds the syncs a socket waits on; one more is answered
// at once.
const maxWatchSyncs = 16

// readWatchSync reads a client's frame on a files-watch socket: a
// WatchSyncRequest asks syncer (nil on a runtime without a barrier) for a
// mark. Anything else is ignored (ok false).
func readWatchSync(b []byte, syncer workspace.DirSyncer) (ask watchSync, ok bool) {
	var req api.WatchSyncRequest
	if json.Unmarshal(b, &req) != nil || req.Type != "sync" || len(req.ID) > api.MaxWatchSyncID {
		return watchSync{}, false
	}
	ask.id = req.ID
	if syncer != nil {
		if seq, err := syncer.Sync(); err == nil {
			ask.seq = seq
		}
	}
	return ask, true
}

// watchedEntry describes the path of ev under the watched dir as it is
// now: nil for the events without one (remove, rename, overflow) and for
// a path gone already.
func watchedEntry(files workspace.FS, dir string, ev workspace.DirEvent) *api.FileEntry {
	switch ev.Type {
	case workspace.DirRemove, workspace.DirRename, workspace.DirOverflow:
		return nil
	}
	e, err := files.Stat(path.Join(dir, ev.Name))
	if err != nil {
		return nil
	}
	return &api.FileEntry{Name: e.Name, Path: e.Path, Size: e.Size, MTime: e.MTime, Type: e.Type, Mode: int(e.Mode),
		SymlinkTarget: e.SymlinkTarget, TargetType: e.TargetType, Metadata: e.Metadata}
}

// lifetime converts a lifetime_s field.
func lifetime(v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	return seconds("lifetime_s", v)
}
