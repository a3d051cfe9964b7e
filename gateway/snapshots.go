package gateway

import (
	"context"
	"net/http"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/snapshots"
	"github.com/labstack/echo/v4"
)

// SnapshotService captures sessions and starts sessions from captures
// (sessions.Snapshots).
type SnapshotService interface {
	Capture(ctx context.Context, tenant string, s *sessions.Session, name string) (snapshots.Info, error)
	CreateFrom(ctx context.Context, tenant string, opts sessions.CreateOptions, id string) (*sessions.Session, *sessions.RestoreReport, error)
	Fork(ctx context.Context, tenant string, s *sessions.Session, count int) (snapshots.Info, []sessions.Forked, error)
}

// SnapshotStore lists and deletes a tenant's snapshots (package
// snapshots' Store).
type SnapshotStore interface {
	List(tenant string) ([]snapshots.Info, error)
	Get(tenant, id string) (snapshots.Info, error)
	Delete(tenant, id string) error
}

// snapshotsAPI serves a tenant's snapshots and forks: POST
// /v1/sessions/{id}/snapshots and /fork, GET and DELETE /v1/snapshots.
// Another tenant's snapshot is a 404. Safe for concurrent use.
type snapshotsAPI struct {
	lookup
	service SnapshotService // nil: no snapshots (501)
	store   SnapshotStore
	owned   func(echo.Context, *sessions.Session) sessions.Info
}

var errNoSnapshots = httperr.New(http.StatusNotImplemented, "no_snapshots", "this gateway keeps no snapshots")

func (a *snapshotsAPI) route(v1 *echo.Group) {
	v1.POST("/sessions/:id/snapshots", a.capture)
	v1.GET("/sessions/:id/snapshots", a.listOfSession)
	v1.POST("/sessions/:id/fork", a.fork)
	v1.GET("/snapshots", a.list)
	v1.GET("/snapshots/:snapshot", a.get)
	v1.DELETE("/snapshots/:snapshot", a.delete)
}

func (a *snapshotsAPI) capture(c echo.Context) error {
	if a.service == nil {
		return errNoSnapshots
	}
	var req api.CreateSnapshotRequest
	sess, err := a.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	in, err := a.service.Capture(c.Request().Context(), tenant.Of(c), sess, req.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, in)
}

func (a *snapshotsAPI) listOfSession(c echo.Context) error {
	if a.service == nil {
		return errNoSnapshots
	}
	return a.listFor(c, c.Param("id"))
}

func (a *snapshotsAPI) list(c echo.Context) error {
	if a.service == nil {
		return errNoSnapshots
	}
	return a.listFor(c, c.QueryParam("session_id"))
}

// listFor answers the tenant's snapshots, of session only when not ""
// (and named ?name= when given).
func (a *snapshotsAPI) listFor(c echo.Context, session string) error {
	name := c.QueryParam("name")
	all, err := a.store.List(tenant.Of(c))
	if err != nil {
		return err
	}
	out := struct {
		Snapshots []snapshots.Info `json:"snapshots"`
	}{Snapshots: []snapshots.Info{}}
	for _, in := range all {
		if in.Purpose == "" && (session == "" || in.Session == session) && (name == "" || in.Name == name) { // a hibernation's is not the client's
			out.Snapshots = append(out.Snapshots, in)
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (a *snapshotsAPI) get(c echo.Context) error {
	if a.service == nil {
		return errNoSnapshots
	}
	in, err := a.clients(tenant.Of(c), c.Param("snapshot"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, in)
}

// clients returns the tenant's snapshot id when it is the client's: a
// hibernated session's or a fork's is the gateway's (ErrNotFound).
func (a *snapshotsAPI) clients(tenant, id string) (snapshots.Info, error) {
	in, err := a.store.Get(tenant, id)
	if err == nil && in.Purpose != "" {
		return snapshots.Info{}, snapshots.ErrNotFound
	}
	return in, err
}

func (a *snapshotsAPI) delete(c echo.Context) error {
	if a.service == nil {
		return errNoSnapshots
	}
	if _, err := a.clients(tenant.Of(c), c.Param("snapshot")); err != nil {
		return err
	}
	if err := a.store.Delete(tenant.Of(c), c.Param("snapshot")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// fork answers one entry per fork: its session, with its restore and
// access token, or its error; 201 once the capture was taken, whatever
// each fork met.
func (a *snapshotsAPI) fork(c echo.Context) error {
	if a.service == nil {
		return errNoSnapshots
	}
	var req api.ForkRequest
	sess, err := a.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	count := 1
	if req.Count != nil {
		count = *req.Count
	}
	_, forks, err := a.service.Fork(c.Request().Context(), tenant.Of(c), sess, count)
	if err != nil {
		return err
	}
	type fork struct {
		Session *sessions.Info `json:"session,omitempty"`
		Error   *httperr.Error `json:"error,omitempty"`
	}
	out := struct {
		Forks []fork `json:"forks"`
	}{Forks: make([]fork, len(forks))}
	for i, f := range forks {
		if f.Err != nil {
			out.Forks[i].Error = httperr.Of(f.Err)
			continue
		}
		in := a.owned(c, f.Session)
		in.Restore = f.Restore
		out.Forks[i].Session = &in
	}
	return c.JSON(http.StatusCreated, out)
}
