package jupyter

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// The Jupyter Server sessions API (/api/sessions), which clients that
// attach straight to glassroom (JupyterLab's SessionManager, VS Code's
// remote-server flow) use to tie a notebook, console or file to a kernel.
//
// A Jupyter session is held by the glassroom session that is its kernel
// (sessions.Session.JupyterSessions): it is the tenant's like its kernel,
// is kept in the kernel's store record (a restarted gateway that brings
// the kernel back brings it back), and disappears when its kernel ends
// (deleted, culled, expired), as jupyter_server drops a session whose
// kernel is gone. The semantics follow jupyter_server 2's
// services/sessions (handlers.py, sessionmanager.py): POST with a path
// that has a session answers that session (201); PATCH renames and, with
// a kernel, moves the session to another kernel and shuts the old one
// down; DELETE shuts its kernel down.
//
// A tenant's changes (create, patch, delete) are applied one at a time,
// kernel starts and shutdowns included (tenantLocks), so that a path has
// one session and a session one kernel whatever clients race; reads take
// no lock.

// tenantLocks serializes each tenant's changes to its Jupyter sessions.
// Its map grows by tenant (one entry per API key that changed a session).
// Safe for concurrent use.
type tenantLocks struct {
	mu    sync.Mutex
	locks map[string]chan struct{} // a token: full while held
}

// lock takes tenant's lock, or fails (a 408) when ctx ends first. The
// caller calls the returned unlock once.
func (l *tenantLocks) lock(ctx context.Context, tenant string) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]chan struct{}{}
	}
	ch, ok := l.locks[tenant]
	if !ok {
		ch = make(chan struct{}, 1)
		l.locks[tenant] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, httperr.New(http.StatusRequestTimeout, "request_ended", "the request ended while it waited for another change of this key's sessions")
	}
}

// sessionHandlers serve /api/sessions for the API, over its session
// manager: the Jupyter sessions are held by the tenant's glassroom
// sessions. Safe for concurrent use.
type sessionHandlers struct {
	mgr      *sessions.Manager
	body     bodyReader
	replicas replicaForwarding
	locks    tenantLocks // each tenant's changes, one at a time
	log      zerolog.Logger
}

// sessionModel is a session as the Jupyter Server API describes it;
// Notebook is jupyter_server's deprecated view, given for type notebook.
type sessionModel struct {
	ID       string       `json:"id"`
	Path     string       `json:"path"`
	Name     string       `json:"name"`
	Type     string       `json:"type"`
	Kernel   kernelModel  `json:"kernel"`
	Notebook *notebookRef `json:"notebook,omitempty"`
}

type notebookRef struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

func sessionModelOf(js sessions.JupyterSession, kernel *sessions.Session) sessionModel {
	m := sessionModel{ID: js.ID, Path: js.Path, Name: js.Name, Type: js.Type, Kernel: kernelModelOf(kernel)}
	if js.Type == "notebook" {
		m.Notebook = &notebookRef{Path: js.Path, Name: js.Name}
	}
	return m
}

// heldSession is a Jupyter session and the glassroom session that is its
// kernel.
type heldSession struct {
	js     sessions.JupyterSession
	kernel *sessions.Session
}

// jupyterSessions returns tenant's Jupyter sessions, by their kernels'
// creation, then in each kernel's order.
func (s *sessionHandlers) jupyterSessions(tenant string) []heldSession {
	infos := s.mgr.List(tenant)
	sort.Slice(infos, func(i, j int) bool {
		if !infos[i].CreatedAt.Equal(infos[j].CreatedAt) {
			return infos[i].CreatedAt.Before(infos[j].CreatedAt)
		}
		return infos[i].ID < infos[j].ID
	})
	var out []heldSession
	for _, info := range infos {
		sess, err := s.mgr.Get(tenant, info.ID)
		if err != nil {
			continue // ended meanwhile: its Jupyter sessions with it
		}
		for _, js := range sess.JupyterSessions() {
			out = append(out, heldSession{js: js, kernel: sess})
		}
	}
	return out
}

// findSession returns tenant's Jupyter session id, or a 404.
func (s *sessionHandlers) findSession(tenant, id string) (heldSession, error) {
	for _, h := range s.jupyterSessions(tenant) {
		if h.js.ID == id {
			return h, nil
		}
	}
	return heldSession{}, httperr.New(http.StatusNotFound, "not_found", "session %s not found (deleted, its kernel ended, or never created)", clipID(id))
}

// findPath returns tenant's first Jupyter session of path.
func (s *sessionHandlers) findPath(tenant, path string) (heldSession, bool) {
	for _, h := range s.jupyterSessions(tenant) {
		if h.js.Path == path {
			return h, true
		}
	}
	return heldSession{}, false
}

// clipID bounds an id from a URL for an error message.
func clipID(id string) string {
	if len(id) > 64 {
		return fmt.Sprintf("%q…", id[:64])
	}
	return fmt.Sprintf("%q", id)
}

// newSessionID is a random (version 4) UUID, as jupyter_server's.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// sessionRequest is the body of POST and PATCH /api/sessions: the model's
// members a client may give (absent and null are the same). Notebook is
// the deprecated form jupyter_server still takes ({"notebook": {"path"}}
// for path and type notebook).
type sessionRequest struct {
	Path     *string        `json:"path"`
	Name     *string        `json:"name"`
	Type     *string        `json:"type"`
	Kernel   *kernelRequest `json:"kernel"`
	Notebook *struct {
		Path *string `json:"path"`
		Name *string `json:"name"`
	} `json:"notebook"`
}

// kernelRequest names a session's kernel: an existing kernel of the
// tenant (ID, which wins) or a kernel spec to start (Name).
type kernelRequest struct {
	ID   *string `json:"id"`
	Name *string `json:"name"`
}

// readSessionRequest reads and decodes a POST or PATCH body, bounded by
// MaxBodyBytes, and returns it too; an empty or null body is a 400, as
// jupyter_server's "No JSON data provided".
func (s *sessionHandlers) readSessionRequest(c echo.Context) (sessionRequest, []byte, error) {
	var req sessionRequest
	body, err := s.body.read(c)
	if err != nil {
		return req, nil, err
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return req, nil, httperr.New(http.StatusBadRequest, "bad_request", "No JSON data provided")
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, nil, httperr.New(http.StatusBadRequest, "bad_request", "invalid JSON body: %s", err.Error())
	}
	return req, body, nil
}

// checkFields refuses a path, name or type past sessions' bounds (400).
func checkFields(js sessions.JupyterSession) error {
	if err := sessions.CheckJupyterSession(js); err != nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "%s", publicInvalid(err))
	}
	return nil
}

// publicInvalid is the message of a sessions.ErrInvalid error.
func publicInvalid(err error) string { return httperr.Of(err).Message }

// kernelOf is tenant's kernel id (either shape), or a 400 as
// jupyter_server answers a PATCH naming a kernel it does not have.
func (s *sessionHandlers) kernelOf(tenant, id string) (*sessions.Session, error) {
	sess, err := s.mgr.Get(tenant, sessionIDOf(id))
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, httperr.New(http.StatusBadRequest, "bad_request", "No such kernel: %s", clipID(id))
	}
	return sess, err
}

// startSessionKernel starts a kernel of spec name ("" for the default)
// for a Jupyter session: a new glassroom session of tenant.
func (s *sessionHandlers) startSessionKernel(ctx context.Context, tenant, name string) (*sessions.Session, error) {
	kernel, err := s.mgr.ResolveKernel(name)
	if err != nil {
		return nil, err // a 400 that says which are installed
	}
	return s.mgr.Create(ctx, tenant, sessions.CreateOptions{Kernel: kernel})
}

// shutDown deletes a kernel the API started or replaced, whatever became
// of the request that did (bounded).
func (s *sessionHandlers) shutDown(ctx context.Context, tenant string, sess *sessions.Session) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := s.mgr.Delete(ctx, tenant, sess.ID()); err != nil && !errors.Is(err, sessions.ErrNotFound) {
		s.log.Warn().Err(err).Str("session", sess.ID()).Msg("jupyter: shutting down a session's kernel failed")
	}
}

// addTo gives kernel one more Jupyter session.
func addTo(kernel *sessions.Session, js sessions.JupyterSession) error {
	return kernel.SetJupyterSessions(append(kernel.JupyterSessions(), js))
}

// removeFrom takes Jupyter session id from kernel.
func removeFrom(kernel *sessions.Session, id string) error {
	list := kernel.JupyterSessions()
	out := list[:0]
	for _, js := range list {
		if js.ID != id {
			out = append(out, js)
		}
	}
	return kernel.SetJupyterSessions(out)
}

// list is GET /api/sessions: the tenant's Jupyter sessions, the other
// replicas' included.
func (s *sessionHandlers) list(c echo.Context) error {
	held := s.jupyterSessions(tenant.Of(c))
	out := make([]json.RawMessage, 0, len(held))
	for _, h := range held {
		b, err := json.Marshal(sessionModelOf(h.js, h.kernel))
		if err != nil {
			return err
		}
		out = append(out, b)
	}
	return c.JSON(http.StatusOK, s.replicas.gather(c, out))
}

// get is GET /api/sessions/{id}, answered by the replica that holds the
// session.
func (s *sessionHandlers) get(c echo.Context) error {
	h, err := s.findSession(tenant.Of(c), c.Param("id"))
	if err != nil {
		return s.replicas.elsewhere(c, err)
	}
	return c.JSON(http.StatusOK, sessionModelOf(h.js, h.kernel))
}

// create is POST /api/sessions: {"path", "type", "name"?,
// "kernel"?: {"id"} or {"name"}}. A path that has a session answers it
// (201, the body's kernel ignored), as jupyter_server does; else the
// session is made on the tenant's kernel id, or on a new kernel of the
// spec name (the default without one).
func (s *sessionHandlers) create(c echo.Context) error {
	req, body, err := s.readSessionRequest(c)
	if err != nil {
		return err
	}
	if req.Notebook != nil { // the deprecated form
		t := "notebook"
		req.Type = &t
		if req.Notebook.Name != nil {
			req.Path = req.Notebook.Name
		} else if req.Notebook.Path != nil {
			req.Path = req.Notebook.Path
		}
	}
	switch {
	case req.Path == nil:
		return httperr.New(http.StatusBadRequest, "bad_request", "Missing field in JSON data: path")
	case req.Type == nil:
		return httperr.New(http.StatusBadRequest, "bad_request", "Missing field in JSON data: type")
	}
	js := sessions.JupyterSession{ID: newSessionID(), Path: *req.Path, Type: *req.Type}
	if req.Name != nil {
		js.Name = *req.Name
	}
	if err := checkFields(js); err != nil {
		return err
	}
	ctx, t := c.Request().Context(), tenant.Of(c)
	unlock, err := s.locks.lock(ctx, t)
	if err != nil {
		return err
	}
	defer func() { unlock() }() // unlock is replaced below
	if h, ok := s.findPath(t, js.Path); ok {
		return s.created(c, h.js, h.kernel)
	}
	var kernel *sessions.Session
	started := false
	if req.Kernel != nil && req.Kernel.ID != nil && *req.Kernel.ID != "" {
		if kernel, err = s.kernelOf(t, *req.Kernel.ID); err != nil && s.replicas.enabled() {
			// A kernel another replica serves: the Jupyter session is
			// held by its session, there.
			unlock()
			unlock = func() {}
			handled, ferr := s.replicas.toSession(c, sessionIDOf(*req.Kernel.ID), body)
			if handled || ferr != nil {
				return ferr
			}
			relock, lerr := s.locks.lock(ctx, t)
			if lerr != nil {
				return lerr
			}
			unlock = relock
			kernel, err = s.kernelOf(t, *req.Kernel.ID) // adopted here meanwhile, perhaps
		}
		if err != nil {
			return err
		}
	} else {
		name := ""
		if req.Kernel != nil && req.Kernel.Name != nil {
			name = *req.Kernel.Name
		}
		if kernel, err = s.startSessionKernel(ctx, t, name); err != nil {
			return err
		}
		started = true
	}
	if err := addTo(kernel, js); err != nil {
		if started {
			s.shutDown(ctx, t, kernel)
		}
		return sessionError(err, kernel)
	}
	return s.created(c, js, kernel)
}

// created answers a POST with js, held by kernel (201, its Location).
func (s *sessionHandlers) created(c echo.Context, js sessions.JupyterSession, kernel *sessions.Session) error {
	c.Response().Header().Set("Location", "/api/sessions/"+js.ID)
	return c.JSON(http.StatusCreated, sessionModelOf(js, kernel))
}

// sessionError is the answer to a failed change of kernel's Jupyter
// sessions: it ended meanwhile (404), or it holds too many (400).
func sessionError(err error, kernel *sessions.Session) error {
	if errors.Is(err, sessions.ErrNotFound) {
		return httperr.New(http.StatusNotFound, "not_found", "kernel %s ended meanwhile", kernelID(kernel.ID()))
	}
	return err
}

// patch is PATCH /api/sessions/{id}: path, name and type rename
// the session; kernel {"id"} moves it to that kernel of the tenant (a
// 400 if there is none), kernel {"name"} to a new kernel of that spec.
// When its kernel changes, the old kernel is shut down, as jupyter_server
// does (with the other Jupyter sessions it held).
func (s *sessionHandlers) patch(c echo.Context) error {
	if _, err := s.findSession(tenant.Of(c), c.Param("id")); err != nil && s.replicas.enabled() {
		return s.replicas.elsewhere(c, err) // its body unread: the replica that holds it reads it
	}
	req, _, err := s.readSessionRequest(c)
	if err != nil {
		return err
	}
	ctx, t := c.Request().Context(), tenant.Of(c)
	unlock, err := s.locks.lock(ctx, t)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := s.findSession(t, c.Param("id"))
	if err != nil {
		return err
	}
	js := h.js
	if req.Notebook != nil && req.Notebook.Path != nil { // the deprecated form
		req.Path = req.Notebook.Path
		typ := "notebook"
		req.Type = &typ
	}
	for _, f := range []struct {
		to   **string
		from *string
	}{{&req.Path, &js.Path}, {&req.Name, &js.Name}, {&req.Type, &js.Type}} {
		if *f.to != nil {
			*f.from = **f.to
		}
	}
	if err := checkFields(js); err != nil {
		return err
	}
	target, started := h.kernel, false
	if req.Kernel != nil {
		switch {
		case req.Kernel.ID != nil:
			if target, err = s.kernelOf(t, *req.Kernel.ID); err != nil {
				return err
			}
		case req.Kernel.Name != nil:
			if target, err = s.startSessionKernel(ctx, t, *req.Kernel.Name); err != nil {
				return err
			}
			started = true
		}
	}
	if target == h.kernel {
		list := h.kernel.JupyterSessions()
		for i := range list {
			if list[i].ID == js.ID {
				list[i] = js
			}
		}
		if err := h.kernel.SetJupyterSessions(list); err != nil {
			return sessionError(err, h.kernel)
		}
		return c.JSON(http.StatusOK, sessionModelOf(js, h.kernel))
	}
	// A new kernel: the session moves to it, then the old one is shut down.
	if err := addTo(target, js); err != nil {
		if started {
			s.shutDown(ctx, t, target)
		}
		return sessionError(err, target)
	}
	if err := removeFrom(h.kernel, js.ID); err != nil && !errors.Is(err, sessions.ErrNotFound) {
		return err
	}
	s.shutDown(ctx, t, h.kernel)
	return c.JSON(http.StatusOK, sessionModelOf(js, target))
}

// delete is DELETE /api/sessions/{id}: the session's kernel is
// shut down (and its other Jupyter sessions with it, as in
// jupyter_server).
func (s *sessionHandlers) delete(c echo.Context) error {
	if _, err := s.findSession(tenant.Of(c), c.Param("id")); err != nil && s.replicas.enabled() {
		return s.replicas.elsewhere(c, err)
	}
	ctx, t := c.Request().Context(), tenant.Of(c)
	unlock, err := s.locks.lock(ctx, t)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := s.findSession(t, c.Param("id"))
	if err != nil {
		return err
	}
	if err := s.mgr.Delete(ctx, t, h.kernel.ID()); err != nil {
		if errors.Is(err, sessions.ErrNotFound) { // it ended meanwhile: so did the session
			return httperr.New(http.StatusNotFound, "not_found", "session %s not found (its kernel ended)", h.js.ID)
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
