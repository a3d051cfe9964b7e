package remote

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/glassroom/glassroom/workspace"
	"golang.org/x/sys/unix"
)

// Routes served (all but HealthPath need the token).
const (
	HealthPath   = "/healthz"
	listPath     = "/v1/list"
	statPath     = "/v1/stat"
	filePath     = "/v1/file"
	mkdirPath    = "/v1/mkdir"
	resetPath    = "/v1/changes/reset"
	changesPath  = "/v1/changes"
	usagePath    = "/v1/usage"
	renamePath   = "/v1/rename"
	metadataPath = "/v1/metadata"
	watchPath    = "/v1/watch"
	syncPath     = "/v1/watch/sync"
	// watchIDHeader names a directory watch on its stream's answer, for
	// its syncs (syncPath?id=).
	watchIDHeader = "X-Glassroom-Watch-Id"
	// SizeHeader carries a downloaded file's size.
	SizeHeader = "X-Glassroom-Size"
)

// MinTokenBytes is the shortest token a Server accepts.
const MinTokenBytes = 32

// ServerConfig configures a Server. Zero fields take the defaults named.
type ServerConfig struct {
	// Token authenticates the caller (Authorization: Bearer). Required,
	// at least MinTokenBytes long.
	Token string
	// QuotaBytes bounds what the workspace may hold after an upload
	// (0: no quota). An upload that would go past it fails with
	// workspace.ErrFull and leaves the previous content.
	QuotaBytes int64
	// MaxUsageEntries bounds the files counted when measuring usage
	// (200,000); a larger tree counts as full.
	MaxUsageEntries int
	// MaxWatches bounds the directory watches served at once (8); one
	// more is refused with workspace.ErrBusy.
	MaxWatches int
}

// Validate reports a configuration that cannot work.
func (c ServerConfig) Validate() error {
	if len(c.Token) < MinTokenBytes {
		return fmt.Errorf("remote: server: token shorter than %d bytes", MinTokenBytes)
	}
	if c.QuotaBytes < 0 || c.MaxUsageEntries < 0 || c.MaxWatches < 0 {
		return errors.New("remote: server: negative quota")
	}
	return nil
}

// Server serves one workspace (http.Handler). It is safe for concurrent
// use; it does not own the root or the watcher (the caller closes them).
type Server struct {
	cfg   ServerConfig
	root  *workspace.Root
	sum   [sha256.Size]byte
	mux   *http.ServeMux
	watch *workspace.Watcher // nil: changes are not tracked

	watchMu sync.Mutex // Watcher is not safe for concurrent use
	quotaMu sync.Mutex // one quota check and upload at a time

	dirWatches chan struct{} // a slot per directory watch served

	syncMu  sync.Mutex
	syncing map[string]*workspace.DirWatch // the watches served, by id, for their syncs
}

// NewServer returns a server of root. watch may be nil.
func NewServer(root *workspace.Root, watch *workspace.Watcher, cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxUsageEntries == 0 {
		cfg.MaxUsageEntries = 200000
	}
	if cfg.MaxWatches == 0 {
		cfg.MaxWatches = 8
	}
	s := &Server{cfg: cfg, root: root, watch: watch, sum: sha256.Sum256([]byte(cfg.Token)), mux: http.NewServeMux(),
		dirWatches: make(chan struct{}, cfg.MaxWatches), syncing: map[string]*workspace.DirWatch{}}
	s.mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s.mux.HandleFunc("GET "+listPath, s.auth(s.list))
	s.mux.HandleFunc("GET "+statPath, s.auth(s.stat))
	s.mux.HandleFunc("GET "+filePath, s.auth(s.download))
	s.mux.HandleFunc("PUT "+filePath, s.auth(s.upload))
	s.mux.HandleFunc("DELETE "+filePath, s.auth(s.remove))
	s.mux.HandleFunc("POST "+mkdirPath, s.auth(s.mkdir))
	s.mux.HandleFunc("POST "+resetPath, s.auth(s.reset))
	s.mux.HandleFunc("GET "+changesPath, s.auth(s.changes))
	s.mux.HandleFunc("GET "+usagePath, s.auth(s.measure))
	s.mux.HandleFunc("POST "+renamePath, s.auth(s.rename))
	s.mux.HandleFunc("POST "+metadataPath, s.auth(s.setMetadata))
	s.mux.HandleFunc("GET "+watchPath, s.auth(s.watchDir))
	s.mux.HandleFunc("POST "+syncPath, s.auth(s.syncWatch))
	return s, nil
}

// Handle adds an authenticated route (pattern as in http.ServeMux), for
// an agent that serves more than files over the same token.
func (s *Server) Handle(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, s.auth(h)) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Authorized reports whether r carries the token (constant time).
func (s *Server) Authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], s.sum[:]) == 1
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.Authorized(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// wireError is an error as sent: the kind and a short detail; the client
// adds its own path.
type wireError struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// statusOf is the HTTP status of a workspace error kind.
var statusOf = map[workspace.Kind]int{
	workspace.ErrBadPath: http.StatusBadRequest, workspace.ErrNotFound: http.StatusNotFound,
	workspace.ErrIsDir: http.StatusConflict, workspace.ErrNotDir: http.StatusConflict,
	workspace.ErrSymlink: http.StatusForbidden, workspace.ErrFull: http.StatusInsufficientStorage,
	workspace.ErrExists: http.StatusConflict, workspace.ErrBusy: http.StatusLocked,
	workspace.ErrClosed: http.StatusGone, workspace.ErrIO: http.StatusInternalServerError,
	workspace.ErrBadMetadata: http.StatusBadRequest,
}

func writeErr(w http.ResponseWriter, err error) {
	we := wireError{Kind: string(workspace.ErrIO)}
	var pe *workspace.PathError
	if errors.As(err, &pe) {
		we = wireError{Kind: string(pe.Kind), Detail: pe.Detail}
	}
	code, ok := statusOf[workspace.Kind(we.Kind)]
	if !ok {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, we)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// listing is the answer of a list call.
type listing struct {
	Entries   []workspace.Entry `json:"entries"`
	Truncated bool              `json:"truncated"`
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	entries, truncated, err := s.root.List(r.URL.Query().Get("path"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, listing{Entries: entries, Truncated: truncated})
}

func (s *Server) stat(w http.ResponseWriter, r *http.Request) {
	e, err := s.root.Stat(r.URL.Query().Get("path"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// download streams a regular file; Range requests are served (resumed
// reads after a Seek).
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	f, info, err := s.root.OpenFile(r.URL.Query().Get("path"))
	if err != nil {
		writeErr(w, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream") // no sniffing
	w.Header().Set(SizeHeader, strconv.FormatInt(info.Size(), 10))
	http.ServeContent(w, r, "", info.ModTime(), f)
}

// quotaReader fails with ENOSPC once more than left bytes were read.
type quotaReader struct {
	r    io.Reader
	left int64
}

func (q *quotaReader) Read(p []byte) (int, error) {
	if q.left < 0 {
		return 0, fmt.Errorf("remote: over quota: %w", unix.ENOSPC)
	}
	if int64(len(p)) > q.left+1 {
		p = p[:q.left+1]
	}
	n, err := q.r.Read(p)
	q.left -= int64(n)
	if q.left < 0 {
		return n, fmt.Errorf("remote: over quota: %w", unix.ENOSPC)
	}
	return n, err
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	var src io.Reader = r.Body
	if s.cfg.QuotaBytes > 0 {
		s.quotaMu.Lock()
		defer s.quotaMu.Unlock()
		used, err := s.usage()
		if err != nil {
			writeErr(w, err)
			return
		}
		if e, err := s.root.Stat(p); err == nil && e.Type == "file" {
			used -= e.Size // it is replaced
		}
		src = &quotaReader{r: r.Body, left: s.cfg.QuotaBytes - used}
	}
	n, err := s.root.Write(p, src)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]int64{"size": n})
}

// usage adds up the sizes of the workspace's files (symlinks are not
// followed). A tree over MaxUsageEntries counts as full.
func (s *Server) usage() (int64, error) {
	var total int64
	seen := 0
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > 64 {
			return nil
		}
		entries, _, err := s.root.List(dir)
		if err != nil {
			if errors.Is(err, workspace.ErrNotFound) || errors.Is(err, workspace.ErrNotDir) || errors.Is(err, workspace.ErrSymlink) {
				return nil // changed meanwhile
			}
			return err
		}
		for _, e := range entries {
			if seen++; seen > s.cfg.MaxUsageEntries {
				return &workspace.PathError{Kind: workspace.ErrFull, Detail: "too many files"}
			}
			total += e.Size
			if e.Type == "dir" {
				if err := walk(e.Path, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return total, walk("", 0)
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	if err := s.root.Remove(r.URL.Query().Get("path")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setMetadata(w http.ResponseWriter, r *http.Request) {
	var meta map[string]string
	if err := json.NewDecoder(io.LimitReader(r.Body, 8*workspace.MaxMetadataBytes)).Decode(&meta); err != nil { // JSON may escape a byte in 6
		writeErr(w, &workspace.PathError{Kind: workspace.ErrBadMetadata, Detail: "not a JSON object of strings"})
		return
	}
	if err := s.root.SetMetadata(r.URL.Query().Get("path"), meta); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request) {
	if err := s.root.MakeDir(r.URL.Query().Get("path")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// changeList is the answer of a changes call.
type changeList struct {
	Changes   []workspace.Change `json:"changes"`
	Truncated bool               `json:"truncated"`
}

func (s *Server) reset(w http.ResponseWriter, _ *http.Request) {
	if s.watch == nil {
		http.Error(w, "changes are not tracked", http.StatusNotImplemented)
		return
	}
	s.watchMu.Lock()
	s.watch.Reset()
	s.watchMu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) changes(w http.ResponseWriter, _ *http.Request) {
	if s.watch == nil {
		http.Error(w, "changes are not tracked", http.StatusNotImplemented)
		return
	}
	s.watchMu.Lock()
	ch, truncated := s.watch.Changes()
	s.watchMu.Unlock()
	writeJSON(w, http.StatusOK, changeList{Changes: ch, Truncated: truncated})
}

// cleanName reports whether name is one path segment.
func cleanName(name string) bool {
	c, err := workspace.Clean(name)
	return err == nil && c == name && name != "" && path.Base(name) == name
}

// rename moves ?path to ?to (workspace.Root.Rename: never replacing).
func (s *Server) rename(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := s.root.Rename(q.Get("path"), q.Get("to")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Bounds of a directory watch served (the client asks within them).
const (
	MaxWatchDirs   = 4096
	MaxWatchBuffer = 4096
)

// measure answers the workspace's use (workspace.Root.Usage), counting at
// most ?max entries (within MaxUsageEntries).
func (s *Server) measure(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("max"))
	if err != nil || n <= 0 || n > s.cfg.MaxUsageEntries {
		n = s.cfg.MaxUsageEntries
	}
	u, err := s.root.Usage(r.Context(), n)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

// watchDir streams the changes under ?path (with ?recursive=true its
// subdirectories too, at most ?max_dirs, ?buffer events waiting), one
// JSON workspace.DirEvent a line, until the client goes or the watch
// ends. Its answer's watchIDHeader names it for syncWatch, whose marks
// come in the stream as workspace.DirSync events.
func (s *Server) watchDir(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive := q.Get("recursive") == "true"
	maxDirs, _ := strconv.Atoi(q.Get("max_dirs"))
	buffer, _ := strconv.Atoi(q.Get("buffer"))
	maxDirs, buffer = min(max(maxDirs, 1), MaxWatchDirs), min(max(buffer, 1), MaxWatchBuffer)
	select {
	case s.dirWatches <- struct{}{}:
		defer func() { <-s.dirWatches }()
	default:
		writeErr(w, &workspace.PathError{Kind: workspace.ErrBusy, Detail: "too many watches"})
		return
	}
	dw, err := s.root.WatchDir(q.Get("path"), recursive, maxDirs, buffer)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer func() { _ = dw.Close() }()
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	s.syncMu.Lock()
	s.syncing[id] = dw
	s.syncMu.Unlock()
	defer func() {
		s.syncMu.Lock()
		delete(s.syncing, id)
		s.syncMu.Unlock()
	}()
	flusher, _ := w.(http.Flusher)
	w.Header().Set(watchIDHeader, id)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-dw.Events():
			if !ok {
				return
			}
			if enc.Encode(ev) != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// syncWatch answers POST syncPath?id= with {"seq": n}: the watch named id
// (watchDir's header) delivers a workspace.DirSync event named n after
// the events of every change made before (workspace.DirSyncer). An id
// not served (any more) is ErrNotFound.
func (s *Server) syncWatch(w http.ResponseWriter, r *http.Request) {
	s.syncMu.Lock()
	dw := s.syncing[r.URL.Query().Get("id")]
	s.syncMu.Unlock()
	if dw == nil {
		writeErr(w, &workspace.PathError{Kind: workspace.ErrNotFound, Detail: "no such watch"})
		return
	}
	seq, err := dw.Sync()
	if err != nil {
		writeErr(w, &workspace.PathError{Kind: workspace.ErrClosed, Detail: "the watch has ended"})
		return
	}
	writeJSON(w, http.StatusOK, watchSynced{Seq: seq})
}

// watchSynced is syncWatch's answer.
type watchSynced struct {
	Seq uint64 `json:"seq"`
}
