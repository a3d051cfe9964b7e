package gateway

import (
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/glassroom/glassroom/api"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// sessionsAPI serves /v1/sessions: create, list (across the replicas),
// read, change and delete sessions, and run code in them. Safe for
// concurrent use.
type sessionsAPI struct {
	lookup
	log      zerolog.Logger
	replicas replicas // the other gateway replicas' parts of a list
	// accessToken is a session's (tenant, id) access token; trafficToken
	// its traffic access token (for private previews).
	accessToken, trafficToken func(tenant, session string) string
	// snapshots starts a session from a snapshot (nil: none kept).
	snapshots SnapshotService
}

// owned is sess's description for a holder of the API key: with its
// access token.
func (s *sessionsAPI) owned(c echo.Context, sess *sessions.Session) sessions.Info {
	in := s.info(sess)
	in.AccessToken = s.accessToken(tenant.Of(c), sess.ID())
	if in.PrivatePreviews {
		in.TrafficAccessToken = s.trafficToken(tenant.Of(c), sess.ID())
	}
	return in
}

func (s *sessionsAPI) route(v1 *echo.Group) {
	v1.POST("/sessions", s.createSession)
	v1.GET("/sessions", s.listSessions)
	v1.GET("/sessions/:id", s.getSession)
	v1.PATCH("/sessions/:id", s.updateSession)
	v1.DELETE("/sessions/:id", s.deleteSession)
	v1.POST("/sessions/:id/execute", s.execute)
	v1.POST("/sessions/:id/interrupt", s.interrupt)
	v1.POST("/sessions/:id/restart", s.restart)
	v1.POST("/sessions/:id/complete", s.complete)
	v1.POST("/sessions/:id/inspect", s.inspect)
}

// seconds converts a JSON number of seconds to a duration, rejecting
// negative, NaN and absurd values.
func seconds(field string, v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if math.IsNaN(*v) || *v <= 0 || *v > 7*24*3600 {
		return 0, httperr.New(http.StatusBadRequest, "bad_request", "%s must be a positive number of seconds", field)
	}
	return time.Duration(*v * float64(time.Second)), nil
}

func (s *sessionsAPI) createSession(c echo.Context) error {
	var req api.CreateSessionRequest
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	idle, err := seconds("idle_timeout_s", req.IdleTimeoutS)
	if err != nil {
		return err
	}
	life, err := lifetime(req.LifetimeS)
	if err != nil {
		return err
	}
	opts := sessions.CreateOptions{Kernel: req.Language, Env: req.Env, IdleTimeout: idle, Template: req.Template,
		Metadata: req.Metadata, Lifetime: life, Volumes: req.Volumes, PrivatePreviews: req.PrivatePreviews}
	if l := req.Lifecycle; l != nil {
		opts.Lifecycle = sessions.Lifecycle{OnTimeout: l.OnTimeout, AutoResume: l.AutoResume, KeepMemory: l.KeepMemory}
	}
	if req.Network != nil {
		opts.Network = sessions.Network{Allow: req.Network.Allow, Deny: req.Network.Deny}
	}
	if l := req.Limits; l != nil {
		opts.Limits = sessions.LimitsFromWire(*l)
		// 0 means the default; anything else must be enough to run a
		// kernel (a 400 with the reason: httperr.Of maps ErrBadSpec).
		if err := opts.Limits.Validate(); err != nil {
			return err
		}
	}
	if req.Snapshot != "" {
		if s.snapshots == nil {
			return errNoSnapshots
		}
		sess, rep, err := s.snapshots.CreateFrom(c.Request().Context(), tenant.Of(c), opts, req.Snapshot)
		if err != nil {
			return err
		}
		in := s.owned(c, sess)
		in.Restore = rep
		return c.JSON(http.StatusCreated, in)
	}
	sess, err := s.mgr.Create(c.Request().Context(), tenant.Of(c), opts)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.owned(c, sess))
}

// sessionPage is the body of GET /v1/sessions (api.SessionList).
type sessionPage struct {
	Sessions  []sessions.Info `json:"sessions"`
	NextToken *string         `json:"next_token"`
}

func (s *sessionsAPI) listSessions(c echo.Context) error {
	q, err := listQuery(c)
	if err != nil {
		return err
	}
	page, next, err := s.mgr.ListPage(tenant.Of(c), q)
	if err != nil {
		return err
	}
	for i := range page {
		page[i] = s.annotate(page[i])
	}
	// The other replicas' parts (none for a replica's own part: a
	// forwarded request, or a runtime whose sessions one gateway serves).
	if bodies, missing := s.replicas.Gather(c); len(bodies)+len(missing) > 0 {
		return listAcross(c, s.log, q, page, next, bodies, missing)
	}
	out := sessionPage{Sessions: page}
	if next != "" {
		out.NextToken = &next
	}
	return c.JSON(http.StatusOK, out)
}

func (s *sessionsAPI) getSession(c echo.Context) error {
	sess, err := s.mgr.Get(tenant.Of(c), c.Param("id"))
	var he *sessions.HibernatedError
	if errors.As(err, &he) { // described as it is: a look does not wake it
		return c.JSON(http.StatusOK, s.annotate(he.Info))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.owned(c, sess))
}

func (s *sessionsAPI) deleteSession(c echo.Context) error {
	if err := s.mgr.Delete(c.Request().Context(), tenant.Of(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *sessionsAPI) execute(c echo.Context) error {
	var req api.ExecuteRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if req.Code == nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "field code is required")
	}
	timeout, err := seconds("timeout_s", req.TimeoutS)
	if err != nil {
		return err
	}
	k, err := s.target(c, sess, req.Context, req.Language)
	if err != nil {
		return err
	}
	exec, err := k.Execute(c.Request().Context(), sessions.ExecRequest{ID: req.ID, Code: *req.Code, Timeout: timeout,
		Envs: req.Envs, Cwd: req.Cwd, UserExpressions: req.UserExpressions})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, exec)
}

func (s *sessionsAPI) interrupt(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	// ?context= interrupts that context; without it, every context
	// running an execution is interrupted.
	if id := c.QueryParam("context"); id != "" {
		var k *sessions.Kernel
		if k, err = sess.Contexts().Get(id); err != nil {
			return err
		}
		err = k.Interrupt(c.Request().Context())
	} else {
		err = sess.Contexts().Interrupt(c.Request().Context())
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *sessionsAPI) restart(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	if err := sess.First().Restart(c.Request().Context()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *sessionsAPI) updateSession(c echo.Context) error {
	var req api.UpdateSessionRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if req.IdleTimeoutS != nil {
		idle, err := seconds("idle_timeout_s", req.IdleTimeoutS)
		if err != nil {
			return err
		}
		if err := sess.SetIdleTimeout(idle); err != nil {
			return err
		}
	}
	if req.LifetimeS != nil {
		var life time.Duration // 0: now (E2B's set_timeout(0): the session ends, or pauses by its lifecycle)
		if *req.LifetimeS != 0 {
			if life, err = lifetime(req.LifetimeS); err != nil {
				return err
			}
		}
		if err := sess.SetLifetime(life); err != nil {
			return err
		}
	}
	if req.Network != nil {
		if err := sess.SetNetwork(sessions.Network{Allow: req.Network.Allow, Deny: req.Network.Deny}); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, s.info(sess))
}

// checkIntrospect refuses a complete or inspect body without its
// required fields.
func checkIntrospect(r api.IntrospectRequest) error {
	if r.Code == nil || r.CursorPos == nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "fields code and cursor_pos are required")
	}
	return nil
}

func (s *sessionsAPI) complete(c echo.Context) error {
	var req api.IntrospectRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if err := checkIntrospect(req); err != nil {
		return err
	}
	k, err := s.target(c, sess, req.Context, req.Language)
	if err != nil {
		return err
	}
	out, err := k.Complete(c.Request().Context(), *req.Code, *req.CursorPos)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *sessionsAPI) inspect(c echo.Context) error {
	var req api.IntrospectRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if err := checkIntrospect(req); err != nil {
		return err
	}
	k, err := s.target(c, sess, req.Context, req.Language)
	if err != nil {
		return err
	}
	out, err := k.Inspect(c.Request().Context(), *req.Code, *req.CursorPos, req.DetailLevel)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
