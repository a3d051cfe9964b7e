package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/urlsign"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/gateway/jupyter"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/workspace/fileedit"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// Server serves the API, the WebSocket relay and the UI. Create it with
// New, serve with Serve; it is safe for concurrent use.
type Server struct {
	cfg   Config
	mgr   *sessions.Manager
	log   zerolog.Logger
	echo  *echo.Echo
	keys  *tenant.Keys
	mcp   http.Handler  // Config.MCP's handler, nil without one
	conns *wsconn.Group // every WebSocket, native and Jupyter: Serve's shutdown ends them and waits
	// upgrader upgrades the terminal WebSocket (the same origin rules as
	// the others).
	upgrader websocket.Upgrader
	watches  *watchShares // the open files-watch sockets: maxWatchesPerGW, shared out per tenant and session
	fwd      *forwarder   // to the replica serving a session
	previews *previews
	signer   *urlsign.Signer // signed URLs' and access tokens'
	lookup
}

// New builds the server. assets is the UI's static files (may be nil).
func New(cfg Config, mgr *sessions.Manager, assets fs.FS, log zerolog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if mgr == nil {
		return nil, errors.New("gateway: a session manager is required")
	}
	// Each tenant may hold half the budget: that half must take one comm
	// message's largest frame.
	if need := 2 * wsconn.LargeFrameSize(mgr.Config().MaxCommBytes); cfg.WSLargeFrameBudget < need {
		return nil, fmt.Errorf("gateway: config: the WebSocket large-frame budget (%d bytes) must be at least %d: twice the frame of the largest comm message", cfg.WSLargeFrameBudget, need)
	}
	s := &Server{cfg: cfg, mgr: mgr, log: log, lookup: lookup{mgr: mgr, maxBodyBytes: cfg.MaxBodyBytes}, keys: tenant.NewKeys(cfg.APIKeys), conns: wsconn.NewGroup(log, wsconn.LargeFrames{Budget: cfg.WSLargeFrameBudget}), fwd: newForwarder(cfg.Instance)}
	upgrader := wsconn.NewUpgrader(cfg.AllowedOrigins)
	s.upgrader = upgrader
	s.watches = newWatchShares(maxWatchesPerGW, maxWatchesPerTenant, maxWatchesPerSession)
	jup, err := jupyter.New(jupyter.Config{MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.WSPingInterval, Replicas: replicas{s}}, mgr, s.keys, s.conns, upgrader, log)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	editor, err := fileedit.New(fileedit.Config{MaxFileBytes: cfg.MaxEditBytes})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	files := &filesAPI{session: s.session, maxUpload: cfg.MaxUploadBytes, decode: s.decodeJSON, editor: editor}
	key := cfg.URLSigningKey
	if len(key) == 0 {
		key = urlsign.NewKey()
	}
	signer, err := urlsign.New(key)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s.signer = signer
	s.previews = newPreviews(s.lookup, signer, strings.TrimSuffix(cfg.PreviewBase, "/"), log.With().Str("component", "previews").Logger())
	if s.previews.base != nil {
		s.lookup.previewHost = s.previews.sessionHost
	}
	socket := &sessionSocket{session: s.session, mgr: mgr, conns: s.conns, upgrader: upgrader, ping: cfg.WSPingInterval}
	e := echo.New()
	s.echo = e // routes added below may take the in-process transport, which serves through it
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.recoverPanics, s.logRequests, s.securityHeaders)

	e.GET("/healthz", s.healthz)
	if cfg.Metrics != nil {
		e.GET("/metrics", s.metrics)
	}
	v1 := e.Group("/v1", s.authenticate, s.forwardElsewhere)
	sessionsAPI := &sessionsAPI{lookup: s.lookup, log: log, replicas: replicas{s}, accessToken: signer.AccessToken, trafficToken: signer.TrafficToken,
		snapshots: cfg.Snapshots}
	sessionsAPI.route(v1)
	(&snapshotsAPI{lookup: s.lookup, service: cfg.Snapshots, store: cfg.SnapshotStore, owned: sessionsAPI.owned}).route(v1)
	v1.GET("/sessions/:id/ws", socket.serve)
	(&contextsAPI{lookup: s.lookup}).route(v1)
	(&commandsAPI{lookup: s.lookup, ping: cfg.WSPingInterval, conns: s.conns, upgrader: upgrader}).route(v1)
	files.route(v1)
	(&signedFiles{lookup: s.lookup, signer: signer, files: files}).route(v1, e, s.forwardSession(sessionOf))
	s.previews.route(v1)
	(&volumesAPI{lookup: s.lookup, store: cfg.Volumes}).route(v1)
	(&e2bAPI{lookup: s.lookup, conns: s.conns, upgrader: upgrader, watches: s.watches}).route(v1)
	s.routeMCP(e)
	s.routeOpenAPI(e)
	jup.Register(e)
	if assets != nil {
		s.routeUI(e, assets)
	}
	return s, nil
}

// Handler returns the HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, tells WebSocket clients the gateway is going away, and waits
// for handlers (bounded by ShutdownTimeout). It does not close the
// session manager; the caller does that after Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	defer s.fwd.transport.CloseIdleConnections()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.conns.Shutdown()
		s.CloseMCP()
		s.conns.Wait()
		return fmt.Errorf("gateway: serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info().Msg("shutting down HTTP server")
	s.conns.Shutdown()
	s.CloseMCP()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	s.conns.Wait()
	if serr := <-errc; err == nil && serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	return nil
}

// ServePreviews serves the preview origin (Config.PreviewBase) on ln
// until ctx ends, then closes every preview connection, upgraded ones
// too. It fails at once without a PreviewBase.
func (s *Server) ServePreviews(ctx context.Context, ln net.Listener) error {
	if s.previews.base == nil {
		return errors.New("gateway: serve previews: no preview base configured")
	}
	srv := &http.Server{
		Handler:           s.previews,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // owned by ServePreviews: it ends with the listener
	var err error
	select {
	case err = <-errc:
		err = fmt.Errorf("gateway: serve previews: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		err = srv.Shutdown(sctx)
		cancel()
		if serr := <-errc; err == nil && serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = serr
		}
	}
	s.previews.shutdown()
	if err != nil {
		return fmt.Errorf("gateway: previews shutdown: %w", err)
	}
	return nil
}

// handleError writes every error as {"error":{"code","message"}}, or
// {"message","reason"} on the Jupyter API.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := httperr.Of(err)
	if ae.Status >= 500 {
		s.log.Error().Err(err).Str("path", c.Path()).Msg("request failed")
	}
	if jupyter.IsPath(c.Request().URL.Path) {
		_ = c.JSON(ae.Status, jupyter.ErrorOf(ae))
		return
	}
	_ = c.JSON(ae.Status, map[string]*httperr.Error{"error": ae})
}

// recoverPanics turns a handler panic into a 500; the gateway keeps running.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if err, ok := r.(error); ok && errors.Is(err, http.ErrAbortHandler) { // a forwarded response cut short: net/http ends the connection
					panic(r)
				}
				s.log.Error().Interface("panic", r).Str("path", c.Path()).Msg("handler panicked")
				err = httperr.New(http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		return next(c)
	}
}

// logRequests logs method, route, status and latency. The query string is
// never logged: it may carry a token.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status = httperr.Of(err).Status
		}
		s.log.Info().Str("method", c.Request().Method).Str("route", c.Path()).Str("session", c.Param("id")).
			Int("status", status).Dur("latency", time.Since(start)).Msg("request")
		return err
	}
}

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		return next(c)
	}
}

// AccessTokenHeader carries a session's access token
// (api.Session.AccessToken; E2B's envd header).
const AccessTokenHeader = "X-Access-Token"

// authenticate accepts "Authorization: Bearer <key>", or ?token=<key> on
// WebSocket upgrades (the session's and the terminal's) and GET/HEAD file
// downloads, and stores the tenant. Without a key, a session's access
// token (AccessTokenHeader) is accepted on the routes it grants.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := ""
		if h := c.Request().Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			key = strings.TrimPrefix(h, "Bearer ")
		} else if (c.Request().Method == http.MethodGet || c.Request().Method == http.MethodHead) && (strings.HasSuffix(c.Path(), "/ws") || strings.HasSuffix(c.Path(), "/terminal") || strings.HasSuffix(c.Path(), "/files-watch") || strings.Contains(c.Path(), "/files/")) {
			key = c.QueryParam("token")
		}
		t, ok := s.keys.Lookup(key)
		if !ok && key == "" {
			t, ok = s.accessTenant(c)
		}
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="glassroom"`)
			return httperr.New(http.StatusUnauthorized, "unauthorized", "missing or invalid API key")
		}
		tenant.Set(c, t)
		return next(c)
	}
}

// accessTenant is the tenant of a request that bears its session's
// access token on a route the token grants: one under
// /v1/sessions/{id}/ (what runs inside the session) but for pause and
// resume (its lifecycle, as the session itself, /v1/sessions/{id}, is).
func (s *Server) accessTenant(c echo.Context) (string, bool) {
	tok := c.Request().Header.Get(AccessTokenHeader)
	id := c.Param("id")
	rest, inside := strings.CutPrefix(c.Path(), "/v1/sessions/:id/")
	if tok == "" || id == "" || !inside || rest == "pause" || rest == "resume" {
		return "", false
	}
	cl, err := s.signer.Verify(tok, time.Now())
	if err != nil || cl.Op != urlsign.Access || cl.Session != id {
		return "", false
	}
	return cl.Tenant, true
}

// health is the body of GET /healthz.
type health struct {
	Status  string             `json:"status"`
	Runtime string             `json:"runtime"`
	Pool    sessions.PoolState `json:"pool"`
}

// metrics serves cfg.Metrics to requests bearing the metrics token.
func (s *Server) metrics(c echo.Context) error {
	want := sha256.Sum256([]byte(s.cfg.MetricsToken))
	got := sha256.Sum256([]byte(strings.TrimPrefix(c.Request().Header.Get("Authorization"), "Bearer ")))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return httperr.New(http.StatusUnauthorized, "unauthorized", "missing or invalid metrics token")
	}
	s.cfg.Metrics.ServeHTTP(c.Response(), c.Request())
	return nil
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, health{Status: "ok", Runtime: s.mgr.RuntimeName(), Pool: s.mgr.Pool()})
}
