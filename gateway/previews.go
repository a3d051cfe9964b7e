package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/urlsign"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// Previews: a server running in a session's sandbox (a dev server, a
// Flask app) reached from a browser through the gateway. Code in the
// sandbox writes the pages, so they are served on an origin of their own,
// never the gateway's: a separate listener (Config.PreviewBase), and one
// host name per session and port, {port}-{session}.{domain}, so that two
// previews share neither cookies nor storage. A preview is opened with
// the URL that POST /v1/sessions/{id}/previews mints (its token, sealed
// as signed file URLs are, becomes an HttpOnly cookie of that host), or
// by a program that sends the token in PreviewTokenHeader; never with the
// API key. The answer's Host, {port}-{session}-{tag}, carries its grant
// itself (E2B's get_host: a host that works as it is): a MAC of the
// session, for any of its ports, valid until the session ends (the
// session's preview_host gives it, so that a client builds the host of
// any port without asking). Its bytes reach the sandbox through the session's own channel
// (a relay per connection, sessions.Commands.DialPort): the sandbox's
// network stays closed to the host.
const (
	// PreviewTokenHeader carries a preview's token for clients that are
	// not browsers.
	PreviewTokenHeader = "Glassroom-Preview-Token"
	// e2bTrafficHeader is E2B's name for it (traffic access token).
	e2bTrafficHeader  = "E2b-Traffic-Access-Token"
	previewTokenParam = "glassroom_preview_token"
	previewCookie     = "glassroom_preview"
	// previewIdle ends a preview connection with no byte either way for
	// this long (a dev server's hot-reload socket included).
	previewIdle = 30 * time.Minute
	// previewConnBytes bounds the bytes of one preview connection, both
	// ways together.
	previewConnBytes = 1 << 30
)

// previews mints preview URLs, lists ports, and serves the preview
// origin (ServeHTTP). Safe for concurrent use.
type previews struct {
	lookup
	signer *urlsign.Signer
	base   *url.URL // scheme and host[:port] of the preview origin; nil: none
	log    zerolog.Logger
	proxy  *httputil.ReverseProxy
	tr     *http.Transport

	mu    sync.Mutex
	open  map[*limitedConn]struct{} // for the shutdown: upgraded connections outlive their handlers' server
	ended bool
}

func newPreviews(l lookup, signer *urlsign.Signer, base string, log zerolog.Logger) *previews {
	p := &previews{lookup: l, signer: signer, log: log, open: map[*limitedConn]struct{}{}}
	if base != "" {
		p.base, _ = url.Parse(base) // Config.Validate parsed it
	}
	p.tr = &http.Transport{
		DialContext:         p.dial,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     time.Minute, // an idle relay holds the sandbox awake
		DisableCompression:  true,
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite:       p.rewrite,
		Transport:     p.tr,
		FlushInterval: -1, // streaming answers (server-sent events, hot reload) as they come
		ErrorHandler:  p.proxyError,
		ErrorLog:      nil,
	}
	return p
}

func (p *previews) route(v1 *echo.Group) {
	v1.GET("/sessions/:id/ports", p.ports)
	v1.POST("/sessions/:id/previews", p.mint)
}

// ports lists the ports the sandbox listens on.
func (p *previews) ports(c echo.Context) error {
	sess, err := p.session(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 30*time.Second)
	defer cancel()
	ports, err := sess.Commands().Ports(ctx)
	if err != nil {
		return err
	}
	out := api.PortList{Ports: make([]api.Port, 0, len(ports))}
	for _, pt := range ports {
		out.Ports = append(out.Ports, api.Port{Port: pt.Port, Address: pt.Address})
	}
	return c.JSON(http.StatusOK, out)
}

// errNoPreviews: the gateway has no preview origin.
var errNoPreviews = httperr.New(http.StatusNotImplemented, "no_previews", "this gateway serves no previews: start it with --preview-listen")

func (p *previews) mint(c echo.Context) error {
	var req api.PreviewRequest
	sess, err := p.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if p.base == nil {
		return errNoPreviews
	}
	if req.Port < 1 || req.Port > 65535 {
		return httperr.New(http.StatusBadRequest, "bad_request", "port must be within 1..65535")
	}
	exp, err := grantExpiry(req.ExpiresS, sess)
	if err != nil {
		return err
	}
	tok := p.signer.Sign(urlsign.Claims{Session: sess.ID(), Tenant: tenant.Of(c), Path: strconv.Itoa(req.Port), Op: urlsign.Preview, Expires: exp.Unix()})
	port := strconv.Itoa(req.Port)
	return c.JSON(http.StatusOK, api.Preview{Port: req.Port, Token: tok, ExpiresAt: exp.UTC(),
		URL:  p.base.Scheme + "://" + port + "-" + sess.ID() + "." + p.base.Host + "/?" + previewTokenParam + "=" + tok,
		Host: port + "-" + p.sessionHost(sess.ID(), sess.Info().PrivatePreviews)})
}

// sessionHost is the part of session id's preview hosts after the port:
// the preview of port P is at {P}-{it}. It is {session}-{tag}.{domain},
// a host that carries its grant, unless the session's previews are
// private: then {session}.{domain}, which needs a token.
func (p *previews) sessionHost(id string, private bool) string {
	if private {
		return id + "." + p.base.Host
	}
	return id + "-" + p.signer.HostTag(id) + "." + p.base.Host
}

// previewTarget is what the dial of a preview's request connects to.
type previewTarget struct {
	sess *sessions.Session
	port int
}

type previewTargetKey struct{}

// ServeHTTP serves the preview origin: the host names the session and
// port; a token (query, header or cookie) must grant them.
func (p *previews) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // a sentinel panic value, compared as net/http does
				panic(v)
			}
			p.log.Error().Interface("panic", v).Msg("preview request panicked")
			http.Error(w, "glassroom preview: internal error", http.StatusInternalServerError)
		}
	}()
	port, id, tag, ok := p.parseHost(r.Host)
	if !ok {
		previewRefusal(w, http.StatusNotFound, "no such preview: a preview's host is {port}-{session}[-{tag}]."+p.baseHost())
		return
	}
	if tag != "" { // the host is the grant
		if !p.signer.CheckHostTag(tag, id) {
			previewRefusal(w, http.StatusUnauthorized, "this preview host's tag is not the gateway's")
			return
		}
		sess, err := sessions.HostGranted(p.mgr, id)
		if errors.Is(err, sessions.ErrPrivatePreviews) {
			previewRefusal(w, http.StatusForbidden, "this session's previews are private: send its traffic access token in the "+e2bTrafficHeader+" header")
			return
		}
		if err != nil {
			previewRefusal(w, http.StatusNotFound, "this preview's session has ended")
			return
		}
		p.forward(w, r, sess, port)
		return
	}
	cl, fromQuery, why := p.grant(r, id, port)
	if why != "" {
		previewRefusal(w, http.StatusUnauthorized, why)
		return
	}
	if fromQuery && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// The token becomes this host's cookie, and leaves the address bar.
		http.SetCookie(w, &http.Cookie{Name: previewCookie, Value: r.URL.Query().Get(previewTokenParam), Path: "/",
			Expires: time.Unix(cl.Expires, 0), HttpOnly: true, Secure: p.base.Scheme == "https", SameSite: http.SameSiteLaxMode})
		// Back to the same path of this host: "//elsewhere/x" would be
		// another host's address.
		target := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/")
		if q := withoutParam(r.URL.Query(), previewTokenParam).Encode(); q != "" {
			target += "?" + q
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	sess, err := p.mgr.Get(cl.Tenant, id)
	if err != nil {
		previewRefusal(w, http.StatusNotFound, "this preview's session has ended")
		return
	}
	p.forward(w, r, sess, port)
}

// forward proxies r to port of sess.
func (p *previews) forward(w http.ResponseWriter, r *http.Request, sess *sessions.Session, port int) {
	ctx := context.WithValue(r.Context(), previewTargetKey{}, previewTarget{sess: sess, port: port})
	p.proxy.ServeHTTP(w, r.WithContext(ctx))
}

func (p *previews) baseHost() string {
	if p.base == nil {
		return "(none)"
	}
	return p.base.Host
}

// parseHost reads {port}-{session}[-{tag}].{domain}[:port] (the domain
// and its port as in the base); tag is "" in a host without one.
func (p *previews) parseHost(host string) (port int, id, tag string, ok bool) {
	if p.base == nil {
		return 0, "", "", false
	}
	label, rest, ok := strings.Cut(strings.ToLower(host), ".")
	if !ok || rest != strings.ToLower(p.base.Host) {
		return 0, "", "", false
	}
	parts := strings.Split(label, "-")
	if len(parts) == 3 {
		tag = parts[2]
		if len(tag) != urlsign.HostTagLen {
			return 0, "", "", false
		}
	}
	if len(parts) < 2 || len(parts) > 3 {
		return 0, "", "", false
	}
	port, err := strconv.Atoi(parts[0])
	if err != nil || port < 1 || port > 65535 || parts[0] != strconv.Itoa(port) || !sessionIDPattern(parts[1]) {
		return 0, "", "", false
	}
	return port, parts[1], tag, true
}

func sessionIDPattern(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if (r < '0' || r > '9') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}

// grant finds a token that grants session id's port: the query's, the
// headers', or one of the cookies (a page may have planted others). It
// says whether it came from the query, or why there is none.
func (p *previews) grant(r *http.Request, id string, port int) (urlsign.Claims, bool, string) {
	why := "this preview needs its link (POST /v1/sessions/{id}/previews gives it), its token in the " + PreviewTokenHeader + " header, or, for a session with private previews, its traffic access token in the " + e2bTrafficHeader + " header"
	try := func(tok string) (urlsign.Claims, bool) {
		cl, err := p.signer.Verify(tok, time.Now())
		switch {
		case errors.Is(err, urlsign.ErrExpired):
			why = "this preview's link has expired: ask for a new one"
		case err == nil && cl.Op == urlsign.Preview && cl.Session == id && cl.Path == strconv.Itoa(port):
			return cl, true
		}
		return urlsign.Claims{}, false
	}
	// A session's traffic access token, for any of its ports: in a
	// header only (never a query, whose address a page may leak).
	traffic := func(tok string) (urlsign.Claims, bool) {
		cl, err := p.signer.Verify(tok, time.Now())
		return cl, err == nil && cl.Op == urlsign.Traffic && cl.Session == id
	}
	if tok := r.URL.Query().Get(previewTokenParam); tok != "" {
		if cl, ok := try(tok); ok {
			return cl, true, ""
		}
	}
	for _, h := range []string{PreviewTokenHeader, e2bTrafficHeader} {
		if tok := r.Header.Get(h); tok != "" {
			if cl, ok := try(tok); ok {
				return cl, false, ""
			}
			if cl, ok := traffic(tok); ok {
				return cl, false, ""
			}
		}
	}
	// Every one of them (a page may plant others, for the whole preview
	// domain, with longer paths that come first); the request's headers
	// bound how many there are.
	for _, c := range r.CookiesNamed(previewCookie) {
		if cl, ok := try(c.Value); ok {
			return cl, false, ""
		}
	}
	return urlsign.Claims{}, false, why
}

// rewrite sends the request to the sandbox as it came, less glassroom's
// own grant (its cookie, header and query parameter): the sandbox's
// server never sees a token.
func (p *previews) rewrite(pr *httputil.ProxyRequest) {
	t, _ := pr.In.Context().Value(previewTargetKey{}).(previewTarget)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = "port" + strconv.Itoa(t.port) + "." + t.sess.ID() + ".sandbox" // the pool's key: one per session and port
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	pr.Out.Header.Set("X-Forwarded-Proto", p.base.Scheme)
	pr.Out.Header.Del(PreviewTokenHeader)
	pr.Out.Header.Del(e2bTrafficHeader)
	if q := pr.Out.URL.Query(); q.Has(previewTokenParam) {
		pr.Out.URL.RawQuery = withoutParam(q, previewTokenParam).Encode()
	}
	var kept []string
	for _, c := range pr.In.Cookies() {
		if c.Name != previewCookie {
			kept = append(kept, c.String())
		}
	}
	pr.Out.Header.Del("Cookie")
	if len(kept) > 0 {
		pr.Out.Header.Set("Cookie", strings.Join(kept, "; "))
	}
}

func withoutParam(q url.Values, name string) url.Values {
	q.Del(name)
	return q
}

// dial connects to the request's port of its session through a relay.
func (p *previews) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	t, ok := ctx.Value(previewTargetKey{}).(previewTarget)
	if !ok {
		return nil, errors.New("gateway: preview: no target")
	}
	c, err := t.sess.Commands().DialPort(ctx, t.port, previewIdle)
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, p: p}
	lc.left.Store(previewConnBytes)
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		_ = c.Close()
		return nil, net.ErrClosed
	}
	p.open[lc] = struct{}{}
	p.mu.Unlock()
	return lc, nil
}

// proxyError answers what kept a request from its server.
func (p *previews) proxyError(w http.ResponseWriter, _ *http.Request, err error) {
	switch {
	case errors.Is(err, sessions.ErrNoListener):
		previewRefusal(w, http.StatusBadGateway, "nothing in the sandbox listens on this port (yet): start the server, on 127.0.0.1 or 0.0.0.0, then reload")
	case errors.Is(err, sessions.ErrNoCommands):
		previewRefusal(w, http.StatusNotImplemented, "this gateway's runtime cannot reach a sandbox's ports")
	case errors.Is(err, sessions.ErrTooManyPortConns):
		previewRefusal(w, http.StatusTooManyRequests, fmt.Sprintf("too many open connections to this session's previews (at most %d)", sessions.MaxPortConns))
	case errors.Is(err, context.Canceled):
		w.WriteHeader(499) // the client went away: nobody reads this
	default:
		p.log.Debug().Err(err).Msg("preview request failed")
		previewRefusal(w, http.StatusBadGateway, "the sandbox's server did not answer")
	}
}

func previewRefusal(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "glassroom preview: %s\n", msg)
}

// shutdown closes every open preview connection (upgraded ones outlive
// the HTTP server's shutdown) and refuses new ones.
func (p *previews) shutdown() {
	p.mu.Lock()
	p.ended = true
	open := make([]*limitedConn, 0, len(p.open))
	for c := range p.open {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
	p.tr.CloseIdleConnections()
}

// limitedConn is a preview connection with a byte budget (both ways
// together): past it, the connection ends.
type limitedConn struct {
	net.Conn
	p    *previews
	left atomic.Int64
	once sync.Once
}

func (c *limitedConn) spend(n int) error {
	if c.left.Add(-int64(n)) < 0 {
		_ = c.Close()
		return fmt.Errorf("gateway: preview connection past %d bytes: %w", previewConnBytes, net.ErrClosed)
	}
	return nil
}

func (c *limitedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err == nil {
		err = c.spend(n)
	}
	return n, err
}

func (c *limitedConn) Write(b []byte) (int, error) {
	if err := c.spend(len(b)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// CloseWrite passes a half-close on (an upgraded connection's end).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.open, c)
		c.p.mu.Unlock()
		_ = c.Conn.Close()
	})
	return nil
}
