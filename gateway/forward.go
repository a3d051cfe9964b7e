package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
)

// ForwardedHeader marks a request one replica forwarded to another (its
// value: the forwarding replica's instance). A forwarded request is never
// forwarded again: if the session moved meanwhile, the client is told to
// retry (503 session_moving).
const ForwardedHeader = "Glassroom-Forwarded-By"

// ServedByHeader names, on the answer to a session's request, the replica
// (Config.Instance) whose kernel served it: the replica asked, or the one
// it forwarded the request to.
const ServedByHeader = "Glassroom-Served-By"

// forwarder sends a session's requests to the replica that serves it
// (sessions.Manager.Locate says which), WebSockets included. The target is
// an address another replica wrote on its Lease; the client's own
// credentials go along and that replica checks them again.
type forwarder struct {
	instance  string
	transport *http.Transport
}

func newForwarder(instance string) *forwarder {
	return &forwarder{instance: instance, transport: &http.Transport{
		Proxy:                 nil, // replicas talk directly, never through an environment proxy
		DialContext:           (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // an execution may run for its whole timeout
	}}
}

// forwardElsewhere is the middleware of the session routes: a request for
// a session this gateway does not serve is located (adopted here if no
// live replica serves it) and, when another replica serves it, proxied
// there (not a request forwarded already). Routes without a session id
// pass.
func (s *Server) forwardElsewhere(next echo.HandlerFunc) echo.HandlerFunc {
	return s.forwardSession(func(c echo.Context) string { return c.Param("id") })(next)
}

// forwardSession is forwardElsewhere for routes whose session id is
// idOf's ("" passes).
func (s *Server) forwardSession(idOf func(echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc { return s.forwardTo(idOf, next) }
}

func (s *Server) forwardTo(idOf func(echo.Context) string, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := idOf(c)
		if id == "" {
			return next(c)
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), locateTimeout)
		_, where, err := s.mgr.Locate(ctx, tenant.Of(c), id)
		cancel()
		if errors.Is(err, sessions.ErrElsewhereUnreachable) {
			s.log.Warn().Err(err).Str("session", id).Msg("session elsewhere, unreachable")
			c.Response().Header().Set("Retry-After", "2")
			return err
		}
		if err != nil || where.URL == "" {
			if err == nil {
				c.Response().Header().Set(ServedByHeader, s.fwd.instance)
			}
			return next(c) // served here now, or not found: the handler says which
		}
		if c.Request().Header.Get(ForwardedHeader) != "" { // moved again meanwhile: one hop only
			c.Response().Header().Set("Retry-After", "2")
			return fmt.Errorf("%w: forwarded here, served by %s", sessions.ErrElsewhereUnreachable, where.Owner)
		}
		return s.forward(c, id, where)
	}
}

// locateTimeout bounds finding a session's replica, an adoption included.
const locateTimeout = 30 * time.Second

// ownerCheckInterval is how often a forwarded request checks that the
// replica it went to still serves the session.
const ownerCheckInterval = 2 * time.Second

// forward proxies the request for session id to the replica at where.URL.
// A WebSocket is carried until either end closes it or this gateway shuts
// down. While it is carried, the session's owner is checked every
// ownerCheckInterval: once it no longer serves the session (its Lease
// lapsed: it died, or it is paused or partitioned, and the session was
// adopted), the request is cut and the client told to retry (503
// session_moving), rather than wait on a replica that may never answer.
// What the paused replica still holds never reaches the kernel: the pod's
// agent fences it.
func (s *Server) forward(c echo.Context, id string, where sessions.Elsewhere) error {
	target, err := url.Parse(where.URL)
	if err != nil {
		return httperr.New(http.StatusServiceUnavailable, "session_moving", "the replica serving this session advertises a bad address")
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	if c.Request().Header.Get("Upgrade") != "" {
		gctx, leave := s.conns.Enter()
		defer leave()
		stop := context.AfterFunc(gctx, cancel) // the upgraded connection ends with the gateway
		defer stop()
	}
	var moved atomic.Bool
	watched := make(chan struct{})
	go func() { // owned here: ends with ctx, joined below
		defer close(watched)
		t := time.NewTicker(ownerCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			lctx, lcancel := context.WithTimeout(ctx, locateTimeout)
			_, now, err := s.mgr.Locate(lctx, tenant.Of(c), id)
			lcancel()
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, sessions.ErrElsewhereUnreachable) {
				continue // the cluster cannot say now: keep waiting
			}
			if err != nil || now.Owner != where.Owner {
				moved.Store(true)
				cancel()
				return
			}
		}
	}()
	defer func() { cancel(); <-watched }()
	req := c.Request().WithContext(ctx)
	var proxyErr error
	upgraded := false // the owner switched protocols: the connection is hijacked, no answer can be written
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(ForwardedHeader, s.fwd.instance)
		},
		ModifyResponse: func(res *http.Response) error {
			upgraded = res.StatusCode == http.StatusSwitchingProtocols
			for k := range res.Header { // the owner's headers, not this replica's too (security headers)
				c.Response().Header().Del(k)
			}
			return nil
		},
		Transport:     s.fwd.transport,
		FlushInterval: -1, // events stream as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			proxyErr = err
		},
	}
	p.ServeHTTP(c.Response(), req)
	if moved.Load() && !upgraded && !c.Response().Committed {
		s.log.Warn().Str("session", id).Str("owner", where.Owner).Msg("the session's replica stopped serving it during a forwarded request")
		c.Response().Header().Set("Retry-After", "1")
		return httperr.New(http.StatusServiceUnavailable, "session_moving", "the gateway replica serving this session stopped serving it (it died, or lost its lease); retry: another replica has it now or will within seconds")
	}
	if proxyErr != nil && !upgraded && c.Request().Context().Err() == nil && !c.Response().Committed {
		s.log.Warn().Err(proxyErr).Str("session", c.Param("id")).Str("owner", where.Owner).Msg("forwarding to the session's replica failed")
		c.Response().Header().Set("Retry-After", "2")
		return httperr.New(http.StatusServiceUnavailable, "session_moving", "the gateway replica serving this session cannot be reached now; retry in a few seconds (a replica that died is replaced within its lease)")
	}
	return nil
}
