package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/gorilla/websocket"
)

// Types of the routes E2B's SDK semantics need.
type (
	// Template is the wire type api.Template.
	Template = api.Template
	// Metrics is the wire type api.Metrics.
	Metrics = api.Metrics
	// FileEvent is the wire type api.FileEvent.
	FileEvent = api.FileEvent
)

// IsPaused reports whether err is the gateway's session_paused answer.
func IsPaused(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == "session_paused" {
		return true
	}
	var re *RejectedError
	return errors.As(err, &re) && re.Code == "session_paused"
}

// Templates lists the gateway's session templates.
func (c *Client) Templates(ctx context.Context) ([]Template, error) {
	var out struct {
		Templates []Template `json:"templates"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/templates"}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out.Templates, nil
}

// ListQuery selects sessions in ListSessionsPage.
type ListQuery struct {
	Metadata  map[string]string // all must match
	State     []string          // "running", "paused"; none: both
	Limit     int               // 1..100; 0: the gateway's default (100)
	NextToken string            // from the previous page
	Newest    bool              // newest first (the default: oldest first)
	Template  string            // only this template's sessions
	After     time.Time         // only sessions created at or after it
	Before    time.Time         // only sessions created at or before it
}

// ListSessionsPage returns one page of the key's sessions matching q and
// the token of the next page ("" on the last).
func (c *Client) ListSessionsPage(ctx context.Context, q ListQuery) ([]Session, string, error) {
	v := url.Values{}
	for k, val := range q.Metadata {
		v.Set("metadata."+k, val)
	}
	for _, s := range q.State {
		v.Add("state", s)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.NextToken != "" {
		v.Set("next_token", q.NextToken)
	}
	if q.Newest {
		v.Set("order", "desc")
	}
	if q.Template != "" {
		v.Set("template", q.Template)
	}
	if !q.After.IsZero() {
		v.Set("started_after", q.After.Format(time.RFC3339Nano))
	}
	if !q.Before.IsZero() {
		v.Set("started_before", q.Before.Format(time.RFC3339Nano))
	}
	var out api.SessionList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/sessions", query: v}, &out, http.StatusOK); err != nil {
		return nil, "", err
	}
	next := ""
	if out.NextToken != nil {
		next = *out.NextToken
	}
	return out.Sessions, next, nil
}

// SetLifetime makes the session end d from now (E2B's set_timeout) and
// returns it updated.
func (c *Client) SetLifetime(ctx context.Context, id string, d time.Duration) (*Session, error) {
	if d <= 0 {
		return nil, errors.New("client: SetLifetime: the lifetime must be positive")
	}
	var s Session
	body := api.UpdateSessionRequest{LifetimeS: api.Ptr(d.Seconds())}
	if err := c.do(ctx, request{method: http.MethodPatch, path: sessionPath(id), json: body}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// SessionMetrics returns the session's CPU, memory and disk use now. It
// takes about a fifth of a second (CPU use is measured over that).
func (c *Client) SessionMetrics(ctx context.Context, id string) (*Metrics, error) {
	var m Metrics
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(id, "metrics")}, &m, http.StatusOK); err != nil {
		return nil, err
	}
	return &m, nil
}

// SessionMetricsHistory returns the session's samples taken within
// start..end (a zero bound is open), oldest first: one every 5 s while it
// runs, the last ten minutes or so; when end is zero or not yet past,
// the gateway takes a sample of now first.
func (c *Client) SessionMetricsHistory(ctx context.Context, id string, start, end time.Time) ([]Metrics, error) {
	q := url.Values{}
	if !start.IsZero() {
		q.Set("start", start.UTC().Format(time.RFC3339Nano))
	}
	if !end.IsZero() {
		q.Set("end", end.UTC().Format(time.RFC3339Nano))
	}
	var h api.MetricsHistory
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(id, "metrics/history"), query: q}, &h, http.StatusOK); err != nil {
		return nil, err
	}
	return h.Samples, nil
}

// PauseSession freezes the whole session (a running cell included) until
// ResumeSession; meanwhile executions and commands fail with
// session_paused (IsPaused).
func (c *Client) PauseSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(id, "pause")}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// ResumeSession thaws a session PauseSession froze.
func (c *Client) ResumeSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(id, "resume")}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// MoveFile renames from to to in the workspace (never replacing: an
// existing to is ErrConflict; a missing from ErrNotFound) and describes
// the moved entry.
func (c *Client) MoveFile(ctx context.Context, sessionID, from, to string) (*FileInfo, error) {
	var fi FileInfo
	body := api.MoveFileRequest{From: from, To: to}
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "files-move"), json: body}, &fi, http.StatusOK); err != nil {
		return nil, err
	}
	return &fi, nil
}

// FileURL asks for a signed URL granting operation ("read" or "write")
// on the one file path of the session, without the API key, for expires
// (zero: the gateway's default, an hour; at most a day) or until the
// session ends. The answer's URL is absolute (this client's BaseURL).
func (c *Client) FileURL(ctx context.Context, sessionID, path, operation string, expires time.Duration) (*api.FileURL, error) {
	body := api.FileURLRequest{Path: path, Operation: operation}
	if expires != 0 {
		s := expires.Seconds()
		body.ExpiresS = &s
	}
	var u api.FileURL
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "files-url"), json: body}, &u, http.StatusOK); err != nil {
		return nil, err
	}
	u.URL = c.cfg.BaseURL + u.URL
	return &u, nil
}

// Port is a TCP port a process of a sandbox listens on (Ports).
type Port = api.Port

// Preview is a preview of a server in a sandbox (Preview).
type Preview = api.Preview

// Ports lists the TCP ports the session's sandbox listens on (its
// kernels' own listeners among them).
func (c *Client) Ports(ctx context.Context, sessionID string) ([]Port, error) {
	var pl api.PortList
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "ports")}, &pl, http.StatusOK); err != nil {
		return nil, err
	}
	return pl.Ports, nil
}

// Preview asks for the preview of port (a server in the sandbox) on the
// gateway's preview origin, for expires (zero: an hour; at most a day)
// or until the session ends: URL opens it in a browser, Token goes in
// the Glassroom-Preview-Token header of other clients' requests.
func (c *Client) Preview(ctx context.Context, sessionID string, port int, expires time.Duration) (*Preview, error) {
	body := api.PreviewRequest{Port: port}
	if expires != 0 {
		s := expires.Seconds()
		body.ExpiresS = &s
	}
	var p api.Preview
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "previews"), json: body}, &p, http.StatusOK); err != nil {
		return nil, err
	}
	return &p, nil
}

// CreateVolume makes a named volume of sizeMB (0: the gateway's
// default) for this key's sessions to mount (CreateOptions.Volumes).
func (c *Client) CreateVolume(ctx context.Context, name string, sizeMB int) (*api.Volume, error) {
	var v api.Volume
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/volumes", json: api.CreateVolumeRequest{Name: name, SizeMB: sizeMB}}, &v, http.StatusCreated); err != nil {
		return nil, err
	}
	return &v, nil
}

// Volumes lists this key's volumes.
func (c *Client) Volumes(ctx context.Context) ([]api.Volume, error) {
	var l api.VolumeList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/volumes"}, &l, http.StatusOK); err != nil {
		return nil, err
	}
	return l.Volumes, nil
}

// DeleteVolume deletes a volume and what it holds; a volume a session
// mounts is refused (an *APIError, code volume_in_use).
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/volumes/" + url.PathEscape(name)}, nil, http.StatusNoContent)
}

// Watch is an open files-watch WebSocket. It owns a reader goroutine;
// Close ends it and waits for it.
type Watch struct {
	ws     *websocket.Conn
	events chan FileEvent
	done   chan struct{} // closed by Close
	ended  chan struct{} // closed when the reader returns
	once   sync.Once
	err    error

	writeMu sync.Mutex // one writer of ws at a time
	mu      sync.Mutex // guards what follows
	nextID  uint64
	synced  map[string]chan struct{} // Sync's waiters, by id
}

// WatchDir watches dir in the session's workspace (recursive: its
// subdirectories too). Events are delivered until Close, the session's
// end or the gateway's; an "overflow" event says some were dropped.
func (c *Client) WatchDir(ctx context.Context, sessionID, dir string, recursive bool) (*Watch, error) {
	return c.WatchDirWith(ctx, sessionID, dir, WatchOptions{Recursive: recursive})
}

// WatchOptions are WatchDirWith's: Recursive follows the subdirectories
// too; Entry describes each event's path (FileEvent.Entry, best effort).
type WatchOptions struct {
	Recursive bool
	Entry     bool
}

// WatchDirWith is WatchDir with options.
func (c *Client) WatchDirWith(ctx context.Context, sessionID, dir string, o WatchOptions) (*Watch, error) {
	q := url.Values{"path": {dir}, "recursive": {strconv.FormatBool(o.Recursive)}}
	if o.Entry {
		q.Set("entry", "true")
	}
	ws, err := c.dialSession(ctx, sessionID, "files-watch", q, "watch")
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 10)
	w := &Watch{ws: ws, events: make(chan FileEvent, 256), done: make(chan struct{}), ended: make(chan struct{}), synced: map[string]chan struct{}{}}
	go w.read()
	return w, nil
}

func (w *Watch) read() {
	defer close(w.ended)
	defer close(w.events)
	for {
		_, b, err := w.ws.ReadMessage()
		if err != nil {
			w.err = err
			return
		}
		var ev FileEvent
		if json.Unmarshal(b, &ev) != nil {
			continue
		}
		if ev.Type == "synced" {
			w.mu.Lock()
			if ch, ok := w.synced[ev.ID]; ok {
				close(ch)
				delete(w.synced, ev.ID)
			}
			w.mu.Unlock()
			continue
		}
		select {
		case w.events <- ev:
		case <-w.done:
			return
		}
	}
}

// Events delivers the changes; it is closed when the watch ends.
func (w *Watch) Events() <-chan FileEvent { return w.events }

// Sync blocks until the events of every change made before it are on
// Events (a barrier: write a file, Sync, then read what it caused),
// until ctx ends, or until the watch does. Safe for concurrent use; the
// events must be read meanwhile (Events holds 256).
func (w *Watch) Sync(ctx context.Context) error {
	w.mu.Lock()
	w.nextID++
	id := strconv.FormatUint(w.nextID, 10)
	ch := make(chan struct{})
	w.synced[id] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.synced, id)
		w.mu.Unlock()
	}()
	b, _ := json.Marshal(api.WatchSyncRequest{Type: "sync", ID: id})
	w.writeMu.Lock()
	err := w.ws.WriteMessage(websocket.TextMessage, b)
	w.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("client: watch sync: %w", err)
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client: watch sync: %w", ctx.Err())
	case <-w.ended:
		return fmt.Errorf("client: watch sync: %w", net.ErrClosed)
	}
}

// Close ends the watch.
func (w *Watch) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		err = w.ws.Close()
		for range w.events { // wait for the reader
		}
	})
	return err
}
