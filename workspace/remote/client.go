package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/glassroom/glassroom/workspace"
)

// ClientConfig configures a Client. Zero fields take the defaults named.
type ClientConfig struct {
	// BaseURL is the server, e.g. http://10.1.2.3:8790. Required.
	BaseURL string
	// Token is the server's bearer token. Required.
	Token string
	// CallTimeout bounds every call but a download's body and an
	// upload's (30 s): the time to answer.
	CallTimeout time.Duration
	// MaxAnswerBytes bounds a JSON answer (16 MiB: a full listing).
	MaxAnswerBytes int64
	// MaxChanges bounds the changes accepted per execution (10,000).
	MaxChanges int
	// Transport is the HTTP transport (a fresh one; tests may inject).
	Transport http.RoundTripper
}

// Client is a remote workspace: workspace.FS, and workspace.Tracker
// through Tracker. Its methods are safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	base *url.URL
	http *http.Client

	mu     sync.Mutex
	closed bool
}

var _ workspace.FS = (*Client)(nil)

// NewClient returns a client of the server at cfg.BaseURL. It does not
// connect. The caller must Close it.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote: client: bad base URL %q", cfg.BaseURL)
	}
	if cfg.Token == "" {
		return nil, errors.New("remote: client: no token")
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.MaxAnswerBytes == 0 {
		cfg.MaxAnswerBytes = 16 << 20
	}
	if cfg.MaxChanges == 0 {
		cfg.MaxChanges = 10000
	}
	if cfg.Transport == nil {
		cfg.Transport = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			ResponseHeaderTimeout: cfg.CallTimeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			DisableCompression:    true,
		}
	}
	return &Client{cfg: cfg, base: u, http: &http.Client{Transport: cfg.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Close makes later calls fail with workspace.ErrClosed and drops idle
// connections. Open files keep working until closed.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if t, ok := c.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// call sends one request for the workspace path p. The caller closes the
// answer's body; a non-2xx answer is turned into a *workspace.PathError.
func (c *Client) call(ctx context.Context, method, route, p string, body io.Reader, header http.Header) (*http.Response, error) {
	if c.isClosed() {
		return nil, &workspace.PathError{Kind: workspace.ErrClosed, Path: p}
	}
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	if route != resetPath && route != changesPath {
		u.RawQuery = url.Values{"path": {p}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Err: err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "workspace service unreachable", Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.answerError(resp, p)
}

// answerError rebuilds the server's error: the kind from a fixed list,
// the caller's own path, and a short, printable detail.
func (c *Client) answerError(resp *http.Response, p string) error {
	var we wireError
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&we)
	kind := workspace.ErrIO
	if _, known := statusOf[workspace.Kind(we.Kind)]; known {
		kind = workspace.Kind(we.Kind)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "workspace service refused the token"}
	}
	return &workspace.PathError{Kind: kind, Path: p, Detail: printable(we.Detail, 160),
		Err: fmt.Errorf("remote: HTTP %d", resp.StatusCode)}
}

// printable keeps at most n bytes of s without control characters.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// decode reads a bounded JSON answer.
func (c *Client) decode(resp *http.Response, p string, v any) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxAnswerBytes+1))
	if err != nil {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "read answer", Err: err}
	}
	if int64(len(body)) > c.cfg.MaxAnswerBytes {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "answer too large"}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "bad answer", Err: err}
	}
	return nil
}

func (c *Client) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.cfg.CallTimeout)
}

var fileTypes = map[string]bool{"file": true, "dir": true, "symlink": true, "other": true}

// validFields reports whether an entry's fields besides its name and
// type are within their bounds (the agent's answers are the sandbox's).
func validFields(e workspace.Entry) bool {
	return e.Size >= 0 && e.Mode <= 0o7777 && len(e.SymlinkTarget) <= workspace.MaxPathBytes &&
		(e.TargetType == "" || fileTypes[e.TargetType]) && workspace.CheckMetadata(e.Metadata) == nil
}

// checkEntry validates an entry of directory dir as the server gave it and
// recomputes its path.
func checkEntry(dir string, e workspace.Entry) (workspace.Entry, bool) {
	if !cleanName(e.Name) || !fileTypes[e.Type] || !validFields(e) {
		return e, false
	}
	e.Path = path.Join(dir, e.Name)
	if _, err := workspace.Clean(e.Path); err != nil {
		return e, false
	}
	return e, true
}

// List implements workspace.FS.
func (c *Client) List(dir string) ([]workspace.Entry, bool, error) {
	dir, err := workspace.Clean(dir)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.call(ctx, http.MethodGet, listPath, dir, nil, nil)
	if err != nil {
		return nil, false, err
	}
	var l listing
	if err := c.decode(resp, dir, &l); err != nil {
		return nil, false, err
	}
	if len(l.Entries) > workspace.MaxListEntries {
		l.Entries, l.Truncated = l.Entries[:workspace.MaxListEntries], true
	}
	out := l.Entries[:0]
	for _, e := range l.Entries {
		if e, ok := checkEntry(dir, e); ok {
			out = append(out, e)
		}
	}
	return out, l.Truncated, nil
}

// Stat implements workspace.FS.
func (c *Client) Stat(p string) (workspace.Entry, error) {
	p, err := workspace.Clean(p)
	if err != nil {
		return workspace.Entry{}, err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.call(ctx, http.MethodGet, statPath, p, nil, nil)
	if err != nil {
		return workspace.Entry{}, err
	}
	var e workspace.Entry
	if err := c.decode(resp, p, &e); err != nil {
		return workspace.Entry{}, err
	}
	_, base := path.Split(p)
	if p == "" {
		base = "."
	}
	e.Name, e.Path = base, p
	if !fileTypes[e.Type] || !validFields(e) {
		return workspace.Entry{}, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "bad answer"}
	}
	return e, nil
}

// OpenFile implements workspace.FS: the file is streamed; seeking ahead
// or back reopens it at that offset (a Range request).
func (c *Client) OpenFile(p string) (io.ReadSeekCloser, fs.FileInfo, error) {
	p, err := workspace.Clean(p)
	if err != nil {
		return nil, nil, err
	}
	f := &remoteFile{c: c, path: p}
	resp, err := f.open(0)
	if err != nil {
		return nil, nil, err
	}
	size, err := strconv.ParseInt(resp.Header.Get(SizeHeader), 10, 64)
	if err != nil || size < 0 {
		resp.Body.Close()
		return nil, nil, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "bad answer"}
	}
	mtime, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
	f.size, f.body = size, resp.Body
	return f, fileInfo{name: path.Base("/" + p), size: size, mtime: mtime}, nil
}

// Write implements workspace.FS; src is streamed.
func (c *Client) Write(p string, src io.Reader) (int64, error) {
	p, err := workspace.Clean(p)
	if err != nil {
		return 0, err
	}
	if p == "" {
		return 0, &workspace.PathError{Kind: workspace.ErrBadPath, Detail: "empty file name"}
	}
	// No deadline: a large upload takes as long as its sender; the
	// transport still bounds the wait for the answer's headers.
	resp, err := c.call(context.Background(), http.MethodPut, filePath, p, io.NopCloser(src), nil)
	if err != nil {
		return 0, err
	}
	var ans struct {
		Size int64 `json:"size"`
	}
	if err := c.decode(resp, p, &ans); err != nil {
		return 0, err
	}
	return ans.Size, nil
}

// MakeDir implements workspace.FS.
func (c *Client) MakeDir(p string) error {
	p, err := workspace.Clean(p)
	if err != nil {
		return err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.call(ctx, http.MethodPost, mkdirPath, p, nil, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

var _ workspace.MetadataSetter = (*Client)(nil)

// SetMetadata implements workspace.MetadataSetter: the server sets it.
func (c *Client) SetMetadata(p string, meta map[string]string) error {
	if err := workspace.CheckMetadata(meta); err != nil {
		return err
	}
	p, err := workspace.Clean(p)
	if err != nil {
		return err
	}
	body, err := json.Marshal(meta)
	if err != nil {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: p, Err: err}
	}
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.call(ctx, http.MethodPost, metadataPath, p, bytes.NewReader(body), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Rename implements workspace.Renamer: the server moves from to to (never
// replacing: an existing to is ErrExists).
func (c *Client) Rename(from, to string) error {
	from, err := workspace.Clean(from)
	if err != nil {
		return err
	}
	if to, err = workspace.Clean(to); err != nil {
		return err
	}
	if c.isClosed() {
		return &workspace.PathError{Kind: workspace.ErrClosed, Path: from}
	}
	ctx, cancel := c.ctx()
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + renamePath
	u.RawQuery = url.Values{"path": {from}, "to": {to}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: from, Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return &workspace.PathError{Kind: workspace.ErrIO, Path: from, Detail: "workspace service unreachable", Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.answerError(resp, from)
	}
	return nil
}

// Remove implements workspace.FS.
func (c *Client) Remove(p string) error {
	p, err := workspace.Clean(p)
	if err != nil {
		return err
	}
	if p == "" {
		return &workspace.PathError{Kind: workspace.ErrBadPath, Detail: "refusing to remove the workspace root"}
	}
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.call(ctx, http.MethodDelete, filePath, p, nil, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Tracker returns the server's change tracking as a workspace.Tracker
// (its Close does nothing: the Client's Close ends both).
func (c *Client) Tracker() workspace.Tracker { return tracker{c} }

type tracker struct{ c *Client }

// Reset implements workspace.Tracker. A failure is reported by the next
// Changes as truncated.
func (t tracker) Reset() {
	ctx, cancel := t.c.ctx()
	defer cancel()
	if resp, err := t.c.call(ctx, http.MethodPost, resetPath, "", nil, nil); err == nil {
		resp.Body.Close()
	}
}

// Changes implements workspace.Tracker; when the server cannot be asked,
// it reports no change and truncated.
func (t tracker) Changes() ([]workspace.Change, bool) {
	ctx, cancel := t.c.ctx()
	defer cancel()
	resp, err := t.c.call(ctx, http.MethodGet, changesPath, "", nil, nil)
	if err != nil {
		return nil, true
	}
	var l changeList
	if err := t.c.decode(resp, "", &l); err != nil {
		return nil, true
	}
	if len(l.Changes) > t.c.cfg.MaxChanges {
		l.Changes, l.Truncated = l.Changes[:t.c.cfg.MaxChanges], true
	}
	out := make([]workspace.Change, 0, len(l.Changes))
	for _, ch := range l.Changes {
		p, err := workspace.Clean(ch.Path)
		if err != nil || p == "" || ch.Size < 0 {
			l.Truncated = true
			continue
		}
		switch ch.Change {
		case "created", "modified", "deleted":
		default:
			l.Truncated = true
			continue
		}
		out = append(out, workspace.Change{Path: p, Size: ch.Size, Change: ch.Change})
	}
	return out, l.Truncated
}

func (tracker) Close() error { return nil }

// remoteFile is a download: a body read in order, reopened at the wanted
// offset after a Seek.
type remoteFile struct {
	c    *Client
	path string
	size int64

	mu   sync.Mutex
	body io.ReadCloser
	pos  int64 // offset of body
	off  int64 // the reader's offset
}

func (f *remoteFile) open(off int64) (*http.Response, error) {
	h := http.Header{}
	if off > 0 {
		h.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := f.c.call(context.Background(), http.MethodGet, filePath, f.path, nil, h)
	if err != nil {
		return nil, err
	}
	if off > 0 && resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: f.path, Detail: "file changed while read"}
	}
	return resp, nil
}

// Read implements io.Reader; it never returns more than the size the file
// had when opened.
func (f *remoteFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off >= f.size {
		return 0, io.EOF
	}
	if f.body == nil || f.pos != f.off {
		if f.body != nil {
			f.body.Close()
			f.body = nil
		}
		resp, err := f.open(f.off) //nolint:bodyclose // kept in f.body, closed by Seek's reopen or Close
		if err != nil {
			return 0, err
		}
		f.body, f.pos = resp.Body, f.off
	}
	if rest := f.size - f.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := f.body.Read(p)
	f.pos += int64(n)
	f.off += int64(n)
	if errors.Is(err, io.EOF) && f.off < f.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Seek implements io.Seeker without a network call.
func (f *remoteFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	default:
		return 0, errors.New("remote: seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("remote: seek: negative offset")
	}
	f.off = offset
	return offset, nil
}

// Close implements io.Closer.
func (f *remoteFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.body != nil {
		err := f.body.Close()
		f.body = nil
		return err
	}
	return nil
}

type fileInfo struct {
	name  string
	size  int64
	mtime time.Time
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o644 }
func (i fileInfo) ModTime() time.Time { return i.mtime }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

var (
	_ workspace.Measuring   = (*Client)(nil)
	_ workspace.DirWatching = (*Client)(nil)
	_ workspace.Renamer     = (*Client)(nil)
)

// Usage implements workspace.Measuring: the server walks the workspace
// (at most maxEntries entries, within its own bound) and answers.
func (c *Client) Usage(ctx context.Context, maxEntries int) (workspace.Usage, error) {
	if c.isClosed() {
		return workspace.Usage{}, &workspace.PathError{Kind: workspace.ErrClosed}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + usagePath
	u.RawQuery = url.Values{"max": {strconv.Itoa(maxEntries)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return workspace.Usage{}, &workspace.PathError{Kind: workspace.ErrIO, Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return workspace.Usage{}, &workspace.PathError{Kind: workspace.ErrIO, Detail: "workspace service unreachable", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return workspace.Usage{}, c.answerError(resp, "")
	}
	var us workspace.Usage
	if err := c.decode(resp, "", &us); err != nil {
		return workspace.Usage{}, err
	}
	if us.Bytes < 0 || us.Entries < 0 {
		return workspace.Usage{}, &workspace.PathError{Kind: workspace.ErrIO, Detail: "bad answer"}
	}
	return us, nil
}

// maxEventLine bounds one line of a watch's stream (an event's name is a
// workspace path).
const maxEventLine = 8 << 10

var dirEventTypes = map[string]bool{workspace.DirCreate: true, workspace.DirWrite: true, workspace.DirRemove: true,
	workspace.DirRename: true, workspace.DirChmod: true, workspace.DirOverflow: true, workspace.DirSync: true}

// WatchDirectory implements workspace.DirWatching: a stream of the
// server's events (each checked: a known type, a clean relative name),
// read by a goroutine the watch owns. Events that do not fit in buffer
// are dropped for one overflow event. It returns once the server has
// accepted the watch (or refused it: a *workspace.PathError).
func (c *Client) WatchDirectory(dir string, recursive bool, maxDirs, buffer int) (workspace.DirWatcher, error) {
	dir, err := workspace.Clean(dir)
	if err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, &workspace.PathError{Kind: workspace.ErrClosed, Path: dir}
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + watchPath
	u.RawQuery = url.Values{"path": {dir}, "recursive": {strconv.FormatBool(recursive)},
		"max_dirs": {strconv.Itoa(maxDirs)}, "buffer": {strconv.Itoa(buffer)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: dir, Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	answered := time.AfterFunc(c.cfg.CallTimeout, cancel) // the answer, not the stream, is bounded
	resp, err := c.http.Do(req)
	if !answered.Stop() && err == nil {
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: dir, Detail: "workspace service unreachable", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		cancel()
		return nil, c.answerError(resp, dir)
	}
	w := &remoteWatch{c: c, id: resp.Header.Get(watchIDHeader), cancel: cancel, events: make(chan workspace.DirEvent, max(1, buffer)), done: make(chan struct{})}
	go w.read(resp.Body) // owned by w: Close cancels the stream and waits
	return w, nil
}

// remoteWatch is a watch served by the remote workspace. It is a
// workspace.DirSyncer when the server named it (an older agent does not).
type remoteWatch struct {
	c      *Client
	id     string // the server's name for it ("": no syncs)
	cancel context.CancelFunc
	events chan workspace.DirEvent
	done   chan struct{}
}

var _ workspace.DirSyncer = (*remoteWatch)(nil)

// errNoSync is Sync's error for a watch the server did not name.
var errNoSync = errors.New("remote: this workspace service has no watch syncs")

// Sync implements workspace.DirSyncer: the server makes the mark, which
// comes in the stream as a workspace.DirSync event after the events of
// every change made before. It blocks for one call to the server (at
// most CallTimeout).
func (w *remoteWatch) Sync() (uint64, error) {
	if w.id == "" {
		return 0, errNoSync
	}
	ctx, cancel := w.c.ctx()
	defer cancel()
	u := *w.c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + syncPath
	u.RawQuery = url.Values{"id": {w.id}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("remote: watch sync: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+w.c.cfg.Token)
	resp, err := w.c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("remote: watch sync: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, w.c.answerError(resp, "")
	}
	var ans watchSynced
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&ans); err != nil || ans.Seq == 0 {
		return 0, fmt.Errorf("remote: watch sync: a malformed answer")
	}
	return ans.Seq, nil
}

func (w *remoteWatch) Events() <-chan workspace.DirEvent { return w.events }

// Close ends the stream and waits for its reader; Events is then closed.
func (w *remoteWatch) Close() error {
	w.cancel()
	<-w.done
	return nil
}

func (w *remoteWatch) read(body io.ReadCloser) {
	defer close(w.done)
	defer close(w.events)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), maxEventLine)
	overflowed := false
	for sc.Scan() {
		var ev workspace.DirEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || !dirEventTypes[ev.Type] {
			continue
		}
		switch ev.Type {
		case workspace.DirOverflow:
			ev.Name = ""
		case workspace.DirSync:
			if n, err := strconv.ParseUint(ev.Name, 10, 64); err != nil || n == 0 {
				continue
			}
		default:
			if n, err := workspace.Clean(ev.Name); err != nil || n != ev.Name || n == "" {
				continue
			}
		}
		if overflowed {
			select {
			case w.events <- workspace.DirEvent{Type: workspace.DirOverflow}:
				overflowed = false
			default:
				continue
			}
		}
		select {
		case w.events <- ev:
		default:
			overflowed = true
		}
	}
}
